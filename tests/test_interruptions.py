"""Every output directory is whole after any interruption: a batch killed (SIGKILL, and SIGINT) at
random moments leaves each OUT/<name> entirely old or entirely new, with a matching .lwsgen-files,
and the next run converges; a full disk is one line and exit 1. make test kills a 20-profile batch
5 times; make test-slow a 500-profile batch 30 times, and needs the kills to land both before and
after writes."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PROFILES, REPO, tool

sys.path.insert(0, str(REPO / "tools"))
from bench import generate  # noqa: E402  (the bench's generated batch: the examples, renamed)

# (profiles, kills): the sample make test runs, and the sweep make test-slow runs
SAMPLED, SWEPT = (20, 5), (500, 30)


def _bytes(path: Path) -> bytes:
    """A file's bytes; of .lwsgen-files without its first line, the profile's path relative to this
    output root (the expected trees are rendered into other roots)."""
    data = path.read_bytes()
    return data.split(b"\n", 1)[1] if path.name == ".lwsgen-files" and data.startswith(b"# rendered from") else data


def _snapshot(out: Path) -> dict[str, dict[str, bytes]]:
    return {d.name: {f.name: _bytes(f) for f in d.iterdir()} for d in out.iterdir() if not d.name.startswith(".")}


def _render(profiles: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lwsgen", "render", str(profiles), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        # SIGINT interrupts even when the tests run where it is ignored (a background job of a shell)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _bump(source: Path, target: Path) -> None:
    """The same batch, every profile changed (replicas and a label): every directory rewritten."""
    target.mkdir()
    for path in sorted(source.glob("*.yaml")):
        (target / path.name).write_text(path.read_text() + "labels:\n  revision: two\n")


@pytest.fixture(scope="module")
def batch_of(tmp_path_factory):
    """count -> (root, expected): a batch rendered before (v1) and after (v2) a change, once per module."""
    made: dict[int, tuple[Path, dict]] = {}

    def batch(count: int):
        if count not in made:
            made[count] = _batches(tmp_path_factory.mktemp(f"batches-{count}"), count)
        return made[count]

    return batch


def _batches(root: Path, count: int):
    generate(PROFILES, count, root / "v1")
    _bump(root / "v1", root / "v2")
    expected = {}
    for version in ("v1", "v2"):
        proc = _render(root / version, root / f"out-{version}")
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        expected[version] = _snapshot(root / f"out-{version}")
    return root, expected


@pytest.mark.tools
@pytest.mark.parametrize(
    "count,rounds", [pytest.param(*SAMPLED, id="sampled"), pytest.param(*SWEPT, id="swept", marks=pytest.mark.slow)]
)
def test_killed_batches_leave_every_directory_whole_and_the_next_run_converges(batch_of, count, rounds, tmp_path):
    root, expected = batch_of(count)
    rng = random.Random(1234)
    start = time.perf_counter()
    proc = _render(root / "v2", tmp_path / "timing")
    proc.communicate(timeout=300)
    duration = time.perf_counter() - start
    outcomes = {"old": 0, "new": 0}
    kustomize = tool("kubectl")
    for round_ in range(rounds):
        out = tmp_path / f"out-{round_}"
        # Hard links are a faithful copy here: lwsgen never changes a file in place.
        shutil.copytree(root / "out-v1", out, copy_function=os.link)
        proc = _render(root / "v2", out)
        # Most of a batch is rendering; its writes come last: aim most kills at the end.
        time.sleep(rng.uniform(0.5, 1.05) * duration)
        how = signal.SIGINT if round_ % 5 == 4 else signal.SIGKILL
        proc.send_signal(how)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"round {round_}: the batch did not end within 60 s of {how.name}")
        found = _snapshot(out)
        assert set(found) == set(expected["v1"])
        for name, files in found.items():
            state = "new" if files == expected["v2"][name] else "old"
            assert files == expected["v2" if state == "new" else "v1"][name], f"round {round_}: {name} is neither"
            outcomes[state] += 1
        for name in rng.sample(sorted(found), 3):
            built = subprocess.run([kustomize, "kustomize", str(out / name)], capture_output=True, text=True)
            assert built.returncode == 0, built.stderr
        if round_ in (0, rounds - 1):  # the next run converges and cleans up after the interrupted one
            proc = _render(root / "v2", out)
            assert proc.communicate(timeout=300)[1] == "" or proc.returncode == 0
            assert _snapshot(out) == expected["v2"]
            assert not [p for p in out.iterdir() if p.name.startswith(".")]
        shutil.rmtree(out)
    if rounds >= SWEPT[1]:  # enough random kills that some land before the writes and some after
        assert outcomes["old"] and outcomes["new"], outcomes


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
        ).returncode
        == 0
    )


@pytest.mark.tools
def test_a_full_disk_is_one_line_and_exit_1_and_leaves_whole_directories(batch_of, tmp_path):
    root, expected = batch_of(SAMPLED[0])
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "160k"):
        pytest.skip("needs root to mount a tmpfs")
    try:
        few = tmp_path / "few"
        few.mkdir()
        for path in sorted((root / "v1").glob("*.yaml"))[:40]:
            shutil.copy(path, few / path.name)
        proc = _render(few, disk / "out")
        _, err = proc.communicate(timeout=120)
        failures = [line for line in err.splitlines() if ": warning: " not in line]
        assert proc.returncode == 1 and len(failures) == 1, err
        assert failures[0].startswith("lwsgen render: cannot write ") and "No space left on device" in failures[0]
        assert "Traceback" not in err
        for name, files in _snapshot(disk / "out").items():
            assert files == expected["v1"][name], f"{name} is half-written"
        assert not [p for p in (disk / "out").iterdir() if p.name.startswith(".")]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.tools
def test_a_read_only_output_is_one_line_and_exit_1(write_profile, minimal, tmp_path):
    disk = tmp_path / "ro"
    if not _mount_tmpfs(disk, "1m"):
        pytest.skip("needs root to mount a tmpfs")
    try:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        proc = _render(write_profile(minimal), disk / "out")
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and err.count("\n") == 1 and "Read-only file system" in err, err
    finally:
        subprocess.run(["umount", str(disk)], check=False)
