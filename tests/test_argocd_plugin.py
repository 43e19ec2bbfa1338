"""The Argo CD config-management plugin run as Argo CD runs it: discover and generate in the
application path, a clean environment with ARGOCD_APP_* and ARGOCD_ENV_* variables, a read-only
HOME, no network; the stream is fed to `kubectl kustomize` as a resource."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import PROFILES, REPO, tool

pytestmark = pytest.mark.tools
PLUGIN = yaml.safe_load((REPO / "docs" / "argocd" / "plugin.yaml").read_text())


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "repo" / "apps" / "llama"
    path.mkdir(parents=True)
    for name in ("vllm-llama31-405b.yaml", "triton-llama3-405b.yaml"):
        shutil.copy(PROFILES / name, path / name)
    return path


def _argocd_env(tmp_path: Path, **parameters: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "lwsgen-argocd-generate").symlink_to(REPO / "docs" / "argocd" / "generate.sh")
    (bin_dir / "lwsgen").symlink_to(Path(sys.executable).parent / "lwsgen")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": "/proc/1",  # a HOME nothing can be written to
        "ARGOCD_APP_NAME": "llama",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_REVISION": "0123abcd",
        "ARGOCD_APP_SOURCE_PATH": "apps/llama",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/platform",
        **{f"ARGOCD_ENV_{k.upper()}": v for k, v in parameters.items()},
    }


def _offline(command: list[str]) -> list[str]:
    """In a network namespace of its own (no interface but loopback), where the machine allows it."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n", *command] if probe.returncode == 0 else command


def _generate(app: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """plugin.yaml's generate command, its program found on PATH (the image installs it in /usr/local/bin)."""
    program, *args = PLUGIN["spec"]["generate"]["command"]
    return subprocess.run(_offline([Path(program).name, *args]), cwd=app, env=env, capture_output=True, text=True)


def test_discover_finds_an_application_of_profiles(app, tmp_path):
    found = subprocess.run(PLUGIN["spec"]["discover"]["find"]["command"], cwd=app, capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.strip().endswith(".yaml")
    empty = tmp_path / "other"
    empty.mkdir()
    (empty / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    assert (
        subprocess.run(PLUGIN["spec"]["discover"]["find"]["command"], cwd=empty, capture_output=True, text=True).stdout
        == ""
    )


def test_generate_streams_what_kustomize_accepts(app, tmp_path):
    run = _generate(app, _argocd_env(tmp_path))
    assert run.returncode == 0, run.stderr
    site = tmp_path / "site"
    site.mkdir()
    (site / "stream.yaml").write_text(run.stdout)
    (site / "kustomization.yaml").write_text("resources: [stream.yaml]\n")
    built = subprocess.run([tool("kubectl"), "kustomize", str(site)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(built.stdout) if d]
    assert kinds.count("LeaderWorkerSet") == 2 and "MPIJob" not in kinds and "Job" not in kinds


def test_parameters_select_the_profile_and_one_offs_and_cannot_inject(app, tmp_path):
    one = _generate(app, _argocd_env(tmp_path, profile="triton-llama3-405b.yaml", include="nccl-test"))
    assert one.returncode == 0, one.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(one.stdout) if d]
    assert kinds.count("LeaderWorkerSet") == 1 and "MPIJob" in kinds
    escape = _generate(app, _argocd_env(tmp_path / "b", profile="../../../etc"))
    assert escape.returncode == 1 and "PROFILE must stay inside" in escape.stderr
    injected = _generate(app, _argocd_env(tmp_path / "c", include="nccl-test; touch /tmp/pwned"))
    assert injected.returncode == 2 and not Path("/tmp/pwned").exists()  # an argument, refused by its choices
    strict = _generate(app, _argocd_env(tmp_path / "d", strict="true"))
    assert strict.returncode == 0, strict.stderr  # the examples render without warnings
