"""Renders of unchanged input are kept (lwsgen/render_cache.py): a second render or --check of an
unchanged profile gets the validated result back without running the pipeline, and a change to any
input (the profile, a base it extends, --set, lwsgen itself) renders it again."""

import os
import stat

import pytest

from conftest import merged
from lwsgen import batch, render_cache
from lwsgen.cli import main


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The records in a directory of this test's (the other caches stay where they are: rebuilding
    the schema texts for each test would cost seconds)."""
    monkeypatch.delenv("LWSGEN_NO_RENDER_CACHE", raising=False)
    directory = tmp_path / "renders"
    monkeypatch.setattr(render_cache, "_directory", lambda: directory)
    return directory


@pytest.fixture
def renders(monkeypatch):
    """The profiles the pipeline ran for, by file name."""
    ran = []
    real = batch.render_profile

    def counted(path, *args):
        ran.append(path.name)
        return real(path, *args)

    monkeypatch.setattr(batch, "render_profile", counted)
    return ran


def _tree(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _render(path, out, *more):
    return main(["render", str(path), "-o", str(out), *more])


def test_an_unchanged_profile_is_not_rendered_again_and_writes_the_same_bytes(
    cache, renders, write_profile, minimal, tmp_path, capsys
):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "first") == 0
    assert _render(profile, tmp_path / "first", "--check") == 0
    assert _render(profile, tmp_path / "first") == 0
    assert renders == ["profile.yaml"]  # the first render only
    assert len(list(cache.iterdir())) == 1
    fresh = tmp_path / "fresh"
    os.environ["LWSGEN_NO_RENDER_CACHE"] = "1"  # the monkeypatch fixture restores it
    assert _render(profile, fresh) == 0
    assert _tree(tmp_path / "first") == _tree(fresh)


def test_a_changed_profile_renders_again(cache, renders, write_profile, minimal, tmp_path):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "out") == 0
    write_profile(merged(minimal, replicas=3))
    assert _render(profile, tmp_path / "out", "--check") == 1  # drift: the kept render is not used
    assert _render(profile, tmp_path / "out") == 0
    assert "replicas: 3" in (tmp_path / "out" / "demo" / "leaderworkerset.yaml").read_text()
    assert renders == ["profile.yaml"] * 2  # the render after --check uses what --check rendered


def test_a_changed_base_renders_again(cache, renders, write_profile, minimal, tmp_path):
    write_profile(minimal, "base.yaml")
    child = write_profile({"extends": "base.yaml", "name": "child"}, "child.yaml")
    assert _render(child, tmp_path / "out") == 0
    assert _render(child, tmp_path / "out") == 0
    assert renders == ["child.yaml"]
    write_profile(merged(minimal, replicas=4), "base.yaml")
    assert _render(child, tmp_path / "out") == 0
    assert renders == ["child.yaml", "child.yaml"]
    assert "replicas: 4" in (tmp_path / "out" / "child" / "leaderworkerset.yaml").read_text()


def test_set_and_lwsgen_itself_are_part_of_the_key(cache, renders, write_profile, minimal, tmp_path, monkeypatch):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "out") == 0
    assert _render(profile, tmp_path / "set", "--set", "replicas=2") == 0
    assert _render(profile, tmp_path / "set", "--set", "replicas=2") == 0
    assert renders == ["profile.yaml"] * 2
    monkeypatch.setattr(render_cache, "identity", lambda: "another lwsgen")
    assert _render(profile, tmp_path / "out") == 0
    assert renders == ["profile.yaml"] * 3


def test_lwsgens_identity_follows_its_templates():
    from lwsgen import resources

    template = resources.package_dir("templates") / "service.yaml.j2"
    before, info = render_cache.identity(), os.stat(template)
    try:
        os.utime(template, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        render_cache.identity.cache_clear()
        assert render_cache.identity() != before
    finally:
        os.utime(template, ns=(info.st_atime_ns, info.st_mtime_ns))
        render_cache.identity.cache_clear()
    assert render_cache.identity() == before


def test_a_failing_profile_and_one_with_templates_are_never_kept(cache, write_profile, minimal, tmp_path):
    bad = write_profile(merged(minimal, **{"node.gpus": 0}), "bad.yaml")
    assert _render(bad, tmp_path / "out") == 1
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "service.yaml.j2").write_text(_service_template())
    templated = write_profile(merged(minimal, templates="tpl"), "templated.yaml")
    assert _render(templated, tmp_path / "out") == 0
    assert not cache.exists() or list(cache.iterdir()) == []


def _service_template() -> str:
    from lwsgen import resources

    return (resources.package_dir("templates") / "service.yaml.j2").read_text()


def test_a_record_in_a_directory_others_can_write_is_not_read(cache, renders, write_profile, minimal, tmp_path):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "out") == 0
    cache.chmod(cache.stat().st_mode | stat.S_IWOTH)
    assert _render(profile, tmp_path / "out") == 0
    assert renders == ["profile.yaml"] * 2


def test_beyond_the_limit_the_records_used_longest_ago_go(cache, write_profile, minimal, tmp_path, monkeypatch):
    monkeypatch.setattr(render_cache, "MAX_RECORDS", 2)
    paths = [write_profile(merged(minimal, name=f"m{i}"), f"p{i}.yaml") for i in range(3)]
    for path in paths:
        assert _render(path, tmp_path / "out") == 0
        os.utime(next(iter(sorted(cache.iterdir(), key=os.path.getmtime))), ns=(0, 0))  # the oldest, by far
    assert len(list(cache.iterdir())) == 2


def test_a_base_reached_through_a_link_that_now_leads_elsewhere_renders_again(
    cache, renders, write_profile, minimal, tmp_path
):
    write_profile(minimal, "one.yaml")
    write_profile(merged(minimal, replicas=6), "two.yaml")
    (tmp_path / "base.yaml").symlink_to("one.yaml")
    child = write_profile({"extends": "base.yaml", "name": "child"}, "child.yaml")
    assert _render(child, tmp_path / "out") == 0
    (tmp_path / "base.yaml").unlink()
    (tmp_path / "base.yaml").symlink_to("two.yaml")
    assert _render(child, tmp_path / "out") == 0
    assert renders == ["child.yaml", "child.yaml"]
    assert "replicas: 6" in (tmp_path / "out" / "child" / "leaderworkerset.yaml").read_text()


def test_a_base_the_git_work_tree_no_longer_allows_is_refused_again(cache, write_profile, minimal, tmp_path):
    write_profile(minimal, "bases/base.yaml")
    child = write_profile({"extends": "../bases/base.yaml", "name": "child"}, "team/child.yaml")
    assert _render(child, tmp_path / "out") == 0  # outside the child's directory, inside the work tree
    (tmp_path / ".git").rmdir()
    assert _render(child, tmp_path / "out") == 1  # no work tree: the base is outside what it may reach
