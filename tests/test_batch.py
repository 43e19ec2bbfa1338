"""Large batches render on several processes, with the same bytes, messages and all-or-nothing rule."""

import os
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
