"""A batch of profiles renders all or nothing, in input order, with every problem located; `-j N`,
once the size of a worker pool, is still accepted (scripts pass it) and changes nothing."""

import pytest

from conftest import merged
from lwsgen.cli import main

COUNT = 20


@pytest.fixture
def profiles(write_profile, minimal):
    return [write_profile(merged(minimal, name=f"model-{i:02d}"), f"profiles/p{i:02d}.yaml") for i in range(COUNT)]


def _tree(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_jobs_is_accepted_and_writes_the_same_bytes_and_messages(profiles, tmp_path, capsys):
    directory = str(profiles[0].parent)
    assert main(["render", directory, "-o", str(tmp_path / "plain")]) == 0
    plain = capsys.readouterr()
    assert main(["render", directory, "-o", str(tmp_path / "jobs"), "-j", "4"]) == 0
    jobs = capsys.readouterr()
    assert len(_tree(tmp_path / "plain")) > COUNT
    assert _tree(tmp_path / "plain") == _tree(tmp_path / "jobs")
    assert plain.out.replace("/plain/", "/jobs/") == jobs.out
    assert plain.err == jobs.err


def test_a_bad_profile_in_a_batch_writes_nothing_and_is_located(profiles, write_profile, minimal, tmp_path, capsys):
    bad = write_profile(merged(minimal, name="model-bad", **{"node.gpus": 0}), "profiles/p99.yaml")
    assert main(["render", str(bad.parent), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:") and "node.gpus" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_still_be_a_positive_count(value, capsys):
    assert main(["render", "p.yaml", "-j", value]) == 2
    assert "usage:" in capsys.readouterr().err


def test_a_streamed_batch_hands_each_result_on_and_keeps_none_of_its_files(profiles):
    from lwsgen.commands import render

    handed = []
    results, problems = render.render_all([(p, str(p)) for p in profiles], "out", sink=handed.append)
    assert [r.name for r in handed] == [f"model-{i:02d}" for i in range(COUNT)]  # in input order, as they come
    assert all(r.files for r in handed) and results == []  # --stdout keeps no result: its memory stays flat
    assert [p for p in problems if p.is_error] == []


def test_a_streamed_batch_hands_each_result_on_before_it_renders_the_next(profiles, monkeypatch):
    """--stdout holds one profile's result at a time: the batch renders lazily, so the sink sees a
    profile before the next one is loaded (the batch once rendered every profile first)."""
    from lwsgen import batch
    from lwsgen.commands import render

    events = []
    real = batch.render_profile
    monkeypatch.setattr(
        batch, "render_profile", lambda path, *a: events.append(("render", path.name)) or real(path, *a)
    )
    render.render_all([(p, str(p)) for p in profiles[:3]], "out", sink=lambda r: events.append(("sink", r.name)))
    assert events == [
        ("render", "p00.yaml"), ("sink", "model-00"),
        ("render", "p01.yaml"), ("sink", "model-01"),
        ("render", "p02.yaml"), ("sink", "model-02"),
    ]  # fmt: skip


def test_a_streamed_batch_still_finds_two_profiles_that_collide(write_profile, minimal):
    """Collisions keeps only digests of names and objects, and still says which profile came first."""
    from lwsgen.commands import render

    first = write_profile(merged(minimal, name="same"), "profiles/a.yaml")
    second = write_profile(merged(minimal, name="same"), "profiles/b.yaml")
    handed = []
    results, problems = render.render_all([(first, "a.yaml"), (second, "b.yaml")], "out", sink=handed.append)
    codes = [(p.file, p.code) for p in problems if p.is_error]
    assert ("b.yaml", "duplicate-name") in codes and results == [] and len(handed) == 2
    said = [p.message for p in problems if p.code == "duplicate-name"]
    assert said == ["'same' is also the name of a.yaml; both would write the same directory"]


def _peak_kib_streaming(directory) -> int:
    import os
    import subprocess
    import sys

    env = {**os.environ, "LWSGEN_NO_CACHE": "1"}
    script = (
        "import resource, sys; from lwsgen.cli import main; code = main(sys.argv[1:]); "
        "sys.stderr.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "render", str(directory), "--stdout"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
    )  # fmt: skip
    return int(done.stderr.strip().splitlines()[-1])


def test_stdout_memory_does_not_grow_with_the_profiles_it_has_printed(write_profile, minimal, tmp_path):
    """A long --stdout batch keeps ~2 kB a profile (the collision index) and caches of bounded size;
    each profile's result, source and merged chain go once it is spooled (they cost ~123 kB a
    profile of the examples, ~39 kB of this minimal one, when the batch kept them)."""
    few, many = 20, 100
    for i in range(many):
        write_profile(merged(minimal, name=f"model-{i:03d}"), f"{'few' if i < few else 'rest'}/p{i:03d}.yaml")
    for path in (tmp_path / "few").iterdir():
        write_profile(path.read_text(), f"rest/{path.name}")
    grown = _peak_kib_streaming(tmp_path / "rest") - _peak_kib_streaming(tmp_path / "few")
    assert grown / (many - few) < 10, f"peak memory grew {grown} kB over {many - few} more profiles"


def test_a_batch_reads_at_most_max_files_profile_files(profiles, monkeypatch, capsys):
    """Profiles named one by one count toward the bound as bases do, though a batch keeps neither
    their files nor their merges (an independent review found the bound counting bases only)."""
    from lwsgen import bounds

    monkeypatch.setattr(bounds, "MAX_FILES", 3)
    named = [str(p) for p in profiles[:5]]
    assert main(["render", *named, "--stdout"]) == 1
    refused = [line for line in capsys.readouterr().err.splitlines() if "too-many-files" in line or "at most 3" in line]
    assert refused == [f"{p}:0:0: one command reads at most 3 profile files; split the directory" for p in named[3:]]
