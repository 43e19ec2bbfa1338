"""`pip install .` gives a wheel that renders outside the repository (templates and schemas inside)
and whose first render builds nothing (what a cache would hold is shipped)."""

import subprocess
import sys
import zipfile

import pytest

from conftest import PROFILES, REPO

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this checkout, and a directory it is installed into."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [*PIP, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(root / "wheels"), str(REPO)],
        check=True,
        capture_output=True,
    )
    [wheel] = (root / "wheels").glob("lwsgen-*.whl")
    target = root / "site"
    subprocess.run(
        [*PIP, "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)], check=True, capture_output=True
    )
    return wheel, target


@pytest.mark.tools
def test_wheel_carries_templates_and_schemas_and_renders_outside_the_repo(installed, tmp_path):
    wheel, target = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "lwsgen/templates/leaderworkerset.yaml.j2" in names
    assert "lwsgen/templates/scripts/mpi-leader.sh" in names
    assert "lwsgen/schemas/profile.schema.json" in names
    assert "lwsgen/templates/compiled/STAMP" in names  # shipped: what a first run would build
    assert any(n.startswith("lwsgen/schemas/strict/strict-1.33-") for n in names)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "import lwsgen.cli as c; print(c.__file__); sys.exit(c.main(sys.argv[2:]))",
            str(target),
            "render",
            str(PROFILES / "triton-llama3-405b.yaml"),
            "-o",
            "out",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(target))
    assert (elsewhere / "out" / "triton-llama3-405b" / "leaderworkerset.yaml").is_file()


@pytest.mark.tools
def test_a_fresh_install_builds_nothing_on_its_first_render(installed, tmp_path):
    """No first-run penalty: the wheel's first render compiles no template and builds no schema text."""
    _, target = installed
    cache = tmp_path / "cache"
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import jinja2; "
        "from lwsgen.output import validate; import lwsgen.cli as c\n"
        "def refuse(*a, **k): raise SystemExit('built on the first run: ' + repr(a[:1]))\n"
        "jinja2.Environment._parse = refuse; validate.build_strict_texts = refuse\n"
        "sys.exit(c.main(sys.argv[2:]))"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            probe,
            str(target),
            "render",
            str(PROFILES / "triton-llama3-405b.yaml"),
            "--stdout",
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(cache)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\nkind: ") == 11  # the kustomization's objects
    assert not cache.exists() or not any(cache.rglob("*.json"))
