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
    assert all(r.files for r in handed) and not any(r.files for r in results)  # --stdout's memory stays flat
    assert [p for p in problems if p.is_error] == []
