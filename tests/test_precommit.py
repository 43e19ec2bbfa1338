"""The pre-commit hooks of .pre-commit-hooks.yaml under the real `pre-commit` tool, in a temporary git
repository: installed as a git hook, over all files, on a commit that changes one file (pre-commit
passes only the changed files), on a changed base, and on drift.

The hooks run with `language: system` (lwsgen from this checkout, on PATH) instead of `python`, so
no hook environment is downloaded; everything else is the file's own definition."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastyaml
from conftest import PROFILES, REPO

pytestmark = pytest.mark.tools

# The examples the repository holds: the ones the tests change (every hook reads all of them; the
# repository of all fifteen cost three times as long and covered nothing more)
EXAMPLES = ("sglang-deepseek-r1", "vllm-qwen3-235b-a22b", "vllm-llama31-405b")


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root, capture_output=True, text=True
    )


def _render(root: Path, env: dict) -> None:
    subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", "profiles", "-o", "out"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    hooks = fastyaml.load((REPO / ".pre-commit-hooks.yaml").read_text())
    local = [{**hook, "language": "system", "files": "^(profiles|out)/"} for hook in hooks]
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    for example in EXAMPLES:
        shutil.copy(PROFILES / f"{example}.yaml", root / "profiles" / f"{example}.yaml")
        shutil.copytree(REPO / "out" / example, root / "out" / example)
    base = fastyaml.load((PROFILES / "vllm-llama31-405b.yaml").read_text())
    del base["name"]
    base["base"] = True
    (root / "profiles" / "team").mkdir()
    (root / "profiles" / "team" / "base.yaml").write_text(fastyaml.dump(base))
    (root / "profiles" / "team" / "prod.yaml").write_text("extends: base.yaml\nname: team-prod\n")
    (root / ".pre-commit-config.yaml").write_text(fastyaml.dump({"repos": [{"repo": "local", "hooks": local}]}))
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
    }
    assert _git(root, "init", "-q").returncode == 0
    _render(root, env)
    assert _git(root, "add", "-A").returncode == 0
    return root, env


def _pre_commit(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=root, env=env, capture_output=True, text=True
    )


def test_hooks_pass_on_all_files_and_on_a_commit_of_one_changed_file(repo):
    root, env = repo
    assert _pre_commit(root, env, "install").returncode == 0
    ran = _pre_commit(root, env, "run", "--all-files")
    assert ran.returncode == 0, ran.stdout
    assert _git(root, "commit", "-qm", "start").returncode == 0  # the installed hook ran and passed
    # A platform change: bump maxReplicas in the profile and re-render; pre-commit passes only the changed files.
    profile = root / "profiles" / "sglang-deepseek-r1.yaml"
    profile.write_text(profile.read_text().replace("maxReplicas: 4", "maxReplicas: 6"))
    _render(root, env)
    assert _git(root, "add", "-A").returncode == 0
    changed = _git(root, "diff", "--cached", "--name-only").stdout.split()
    assert "out/sglang-deepseek-r1/scaledobject.yaml" in changed
    commit = _git(root, "commit", "-qm", "more groups")
    assert commit.returncode == 0, commit.stdout + commit.stderr


def test_a_changed_base_alone_and_drift(repo):
    root, env = repo
    assert _git(root, "commit", "-qm", "start", "--no-verify").returncode == 0
    base = root / "profiles" / "team" / "base.yaml"
    base.write_text(base.read_text().replace("namespace: inference", "namespace: serving"))
    _git(root, "add", "-A")
    drift = _pre_commit(root, env, "run")  # the base alone changed; its overlay's output is now stale
    assert drift.returncode == 1 and "lwsgen render --check" in drift.stdout and "stale" in drift.stdout
    assert "Passed" in drift.stdout.split("lwsgen render --check")[0]  # validate accepted the base as a base
    base.write_text("runtime: vllm\nnode: {gpus: many}\n")
    _git(root, "add", "-A")
    broken = _pre_commit(root, env, "run")
    assert broken.returncode == 1 and "node.gpus: must be an integer, not a string" in broken.stdout


def test_a_deleted_profile_and_a_foreign_file_fail_the_check_hook_until_render_fixes_them(repo):
    """Drift that once stayed green: a deleted profile's out/<name>/ and a file lwsgen did not write."""
    root, env = repo
    assert _git(root, "commit", "-qm", "start", "--no-verify").returncode == 0
    _git(root, "rm", "-q", "profiles/vllm-qwen3-235b-a22b.yaml")
    gone = _pre_commit(root, env, "run", "--all-files")
    assert gone.returncode == 1
    assert "out/vllm-qwen3-235b-a22b: no profile renders this directory any more" in gone.stdout
    _render(root, env)
    assert not (root / "out" / "vllm-qwen3-235b-a22b").exists()
    (root / "out" / "vllm-llama31-405b" / "notes.txt").write_text("mine\n")
    _git(root, "add", "-A")
    foreign = _pre_commit(root, env, "run", "--all-files")
    assert foreign.returncode == 1 and "notes.txt: extra (not written by lwsgen" in foreign.stdout
    subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", "profiles", "-o", "out", "--force"], cwd=root, env=env, check=True
    )
    assert not (root / "out" / "vllm-llama31-405b" / "notes.txt").exists()
    _git(root, "add", "-A")
    assert _pre_commit(root, env, "run", "--all-files").returncode == 0
