"""Large batches render on several processes, with the same bytes, messages and all-or-nothing rule."""

import os
import pathlib
import sys

import pytest

from conftest import merged
from lwsgen import batch
from lwsgen.cli import main

COUNT = batch.PARALLEL_FROM + 4


@pytest.fixture
def profiles(write_profile, minimal):
    return [write_profile(merged(minimal, name=f"model-{i:02d}"), f"profiles/p{i:02d}.yaml") for i in range(COUNT)]


def _tree(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_parallel_and_serial_batches_write_the_same_bytes_and_messages(profiles, tmp_path, capsys):
    directory = str(profiles[0].parent)
    assert main(["render", directory, "-o", str(tmp_path / "serial"), "-j", "1"]) == 0
    serial = capsys.readouterr()
    assert main(["render", directory, "-o", str(tmp_path / "parallel"), "-j", "2"]) == 0
    parallel = capsys.readouterr()
    assert len(_tree(tmp_path / "serial")) > COUNT
    assert _tree(tmp_path / "serial") == _tree(tmp_path / "parallel")
    assert serial.out.replace("/serial/", "/parallel/") == parallel.out
    assert serial.err == parallel.err


def test_a_bad_profile_in_a_parallel_batch_writes_nothing_and_is_located(
    profiles, write_profile, minimal, tmp_path, capsys
):
    bad = write_profile(merged(minimal, name="model-bad", **{"node.gpus": 0}), "profiles/p99.yaml")
    assert main(["render", str(bad.parent), "-o", str(tmp_path / "out"), "-j", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:") and "node.gpus" in err
    assert not (tmp_path / "out").exists()


def _pid(job):
    return os.getpid()


def test_large_batches_use_worker_processes_and_small_ones_do_not(monkeypatch, tmp_path):
    monkeypatch.setattr(batch, "_render_one", _pid)
    jobs = [(tmp_path / f"p{i}.yaml", str(tmp_path / f"p{i}.yaml")) for i in range(COUNT)]
    pids = batch.render_all(jobs, "out", jobs=2)
    assert pids[0] == os.getpid() and len(set(pids[1:]) - {os.getpid()}) >= 1
    assert set(batch.render_all(jobs[: batch.PARALLEL_FROM - 1], "out", jobs=2)) == {os.getpid()}
    assert set(batch.render_all(jobs, "out", jobs=1)) == {os.getpid()}


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_count(value, capsys):
    assert main(["render", "p.yaml", "-j", value]) == 2
    assert "usage:" in capsys.readouterr().err


def test_default_jobs_fork_only_onto_free_cpus_for_a_large_enough_batch(monkeypatch):
    monkeypatch.setattr(batch, "usable_cpus", lambda: 4)
    monkeypatch.setattr(batch, "busy_cpus", lambda: 0)
    assert batch.auto_jobs(1000) == 4
    assert batch.auto_jobs(15) == 1  # too few to repay starting workers
    monkeypatch.setattr(batch, "busy_cpus", lambda: 3)
    assert batch.auto_jobs(1000) == 1  # one CPU free: render here
    monkeypatch.setattr(batch, "busy_cpus", lambda: 9)
    assert batch.auto_jobs(1000) == 1


def test_busy_cpus_counts_runnable_tasks_besides_this_one():
    import subprocess
    import time

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        assert batch.busy_cpus() >= 2
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_an_interrupted_parallel_batch_kills_its_workers_and_ends_at_once(tmp_path):
    """SIGINT while the workers render (here: sleep): the workers are killed and the process ends
    with 130 within seconds, leaving no worker behind (Pool.terminate could wait on a queue lock)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "interrupted.py"
    script.write_text(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from lwsgen import batch, cli\n"
        "def slow(job):\n"
        "    if str(job[0]) == '0':\n"
        "        return None  # the first profile renders in the parent\n"
        "    open(f'{job[1]}/worker-{os.getpid()}', 'w').close()\n"
        "    time.sleep(60 if str(job[0]) in ('18', '19') else 0.2)  # the others go idle, waiting for tasks\n"
        "batch._render_one = slow\n"
        "out = sys.argv[1]\n"
        "def render(args):\n"
        "    batch.render_all([(Path(str(i)), str(i)) for i in range(20)], out, 4)\n"
        "cli.COMMANDS['render'] = render\n"
        "sys.argv = ['lwsgen', 'render', 'x']\n"
        "cli.main_entry()\n"
    )
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], cwd=tmp_path)
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("worker-*"))) < 2 and time.monotonic() < deadline:  # the pool's workers at work
        time.sleep(0.1)
    time.sleep(1)  # the workers of the quick profiles are idle by now, waiting for tasks
    workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
    assert len(workers) >= 2
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    time.sleep(0.5)
    assert [pid for pid in workers if _running(pid)] == []


def _running(pid: int) -> bool:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_an_abandoned_pool_is_collected_without_waiting_on_its_killed_workers_locks(tmp_path):
    """After SIGINT the workers are killed; collecting the pool then runs its finalizer, whose
    terminate() waits for the task queue's read lock, which a killed idle worker held: forever (a
    batch hung so after SIGINT in CI). _abandon cancels that finalizer; killing alone would hang."""
    import subprocess
    import sys
    import time

    script = tmp_path / "abandon.py"
    script.write_text(
        "import gc, sys, time, multiprocessing\n"
        "from lwsgen import batch\n"
        "context = multiprocessing.get_context('fork')\n"
        "pool = context.Pool(2)\n"
        "pool.map(abs, range(8))\n"
        "time.sleep(0.5)  # idle: one worker waits for a task holding the queue's read lock\n"
        "if sys.argv[1] == 'abandon':\n"
        "    batch._abandon(pool, context)\n"
        "else:\n"
        "    [child.kill() for child in context.active_children()]\n"
        "del pool\n"
        "gc.collect()\n"
    )

    def ends(how: str, within: float) -> bool:
        proc = subprocess.Popen([sys.executable, str(script), how])
        try:
            return proc.wait(timeout=within) == 0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return False

    def left_behind() -> list[str]:
        found = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True).stdout.split()
        return found

    assert ends("abandon", 30)
    time.sleep(0.5)
    assert left_behind() == []  # no worker outlives it: none replaced after the kill, each ends with lwsgen
    hung = not ends("kill", 5)
    subprocess.run(["pkill", "-KILL", "-f", str(script)])  # the hung one's replaced workers
    assert hung, "killing alone no longer hangs: the finalizer's hazard is gone, revisit _abandon"
