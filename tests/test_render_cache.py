"""Renders of unchanged input are kept (lwsgen/render_cache.py): a second render or --check of an
unchanged profile gets the validated result back without running the pipeline, and a change to any
input (the profile, a base it extends, --set, lwsgen itself) renders it again."""

import os
import stat
import sys
from pathlib import Path

import pytest

from conftest import REPO, merged
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


def test_lwsgens_identity_follows_its_templates_even_with_size_and_mtime_put_back():
    from lwsgen import resources

    template = resources.package_dir("templates") / "service.yaml.j2"
    before, info = render_cache.identity(), os.stat(template)
    try:
        os.utime(template, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        render_cache.identity.cache_clear()
        assert render_cache.identity() != before
    finally:  # as `touch -r`, `cp -p` or `rsync -t` leave an edited file: its change time tells
        os.utime(template, ns=(info.st_atime_ns, info.st_mtime_ns))
        render_cache.identity.cache_clear()
    assert render_cache.identity() != before
    render_cache.identity.cache_clear()


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


# What an attack on the records found (each a stale hit, a crash or a hang before it was fixed)


def test_a_relative_root_is_the_directory_it_names_from_where_lwsgen_runs(cache, write_profile, minimal, tmp_path):
    write_profile(minimal, "bases/base.yaml")
    child = write_profile({"extends": "../bases/base.yaml", "name": "child"}, "team/child.yaml")
    (tmp_path / ".git").rmdir()  # no work tree: only --root lets the base be reached
    (tmp_path / "elsewhere").mkdir()
    os.chdir(tmp_path)
    try:
        assert _render(child, tmp_path / "out", "--root", ".") == 0
        os.chdir(tmp_path / "elsewhere")
        assert _render(child, tmp_path / "out", "--root", ".") == 1  # `.` is now a root the base is outside
    finally:
        os.chdir(REPO)


def test_a_base_that_a_new_work_tree_now_fences_off_is_refused_again(cache, write_profile, minimal, tmp_path):
    write_profile(minimal, "c.yaml")
    write_profile({"extends": "../c.yaml", "replicas": 2}, "lib/b.yaml")
    child = write_profile({"extends": "lib/b.yaml", "name": "child"}, "child.yaml")
    assert _render(child, tmp_path / "out") == 0
    (tmp_path / "lib" / ".git").mkdir()  # lib/ becomes a repository of its own: c.yaml is outside it
    assert _render(child, tmp_path / "out") == 1


def test_a_base_path_through_a_directory_that_is_gone_is_refused_again(cache, write_profile, minimal, tmp_path):
    write_profile(minimal, "base.yaml")
    (tmp_path / "sub").mkdir()
    child = write_profile({"extends": "sub/../base.yaml", "name": "child"}, "child.yaml")
    assert _render(child, tmp_path / "out") == 0
    (tmp_path / "sub").rmdir()
    assert _render(child, tmp_path / "out") == 1


def test_a_profile_changed_while_it_renders_is_not_kept_as_the_new_one(
    cache, write_profile, minimal, tmp_path, monkeypatch
):
    profile = write_profile(minimal)
    real = batch.render_profile

    def edited_meanwhile(path, *args):
        result = real(path, *args)
        write_profile(merged(minimal, replicas=3))  # saved by an editor while the render ran
        return result

    monkeypatch.setattr(batch, "render_profile", edited_meanwhile)
    assert _render(profile, tmp_path / "out") == 0
    monkeypatch.setattr(batch, "render_profile", real)
    assert _render(profile, tmp_path / "out", "--check") == 1  # stale: replicas 3 is not what was written


def test_every_library_lwsgen_imports_is_part_of_its_identity():
    import ast

    imported = set()
    for source in (REPO / "lwsgen").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "lwsgen"}
    assert third_party and third_party <= set(render_cache._LIBRARIES)


def test_a_record_someone_else_could_have_written_or_damaged_is_not_read(
    cache, renders, write_profile, minimal, tmp_path
):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "out") == 0
    [record] = cache.iterdir()
    record.chmod(0o664)  # writable by its group
    assert _render(profile, tmp_path / "out") == 0
    [record] = cache.iterdir()  # written anew, 0644
    data = bytearray(record.read_bytes())
    data[len(data) // 2] ^= 0x40
    record.write_bytes(bytes(data))
    assert _render(profile, tmp_path / "out") == 0
    assert renders == ["profile.yaml"] * 3


def test_a_directory_or_a_pipe_at_the_records_name_only_means_rendering_again(
    cache, renders, write_profile, minimal, tmp_path
):
    profile = write_profile(minimal)
    assert _render(profile, tmp_path / "out") == 0
    [record] = cache.iterdir()
    record.unlink()
    record.mkdir()  # was an internal error (IsADirectoryError) on every run
    assert _render(profile, tmp_path / "out") == 0
    record.rmdir()
    os.mkfifo(record)
    assert _render(profile, tmp_path / "out") == 0
    assert renders == ["profile.yaml"] * 3


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch):
    from lwsgen import files

    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", ".cache")  # would be the checkout being rendered
    assert files.cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "lwsgen"


def test_a_base_turned_into_a_pipe_or_a_huge_file_is_refused_at_once(cache, write_profile, minimal, tmp_path):
    base = write_profile(minimal, "base.yaml")
    child = write_profile({"extends": "base.yaml", "name": "child"}, "child.yaml")
    assert _render(child, tmp_path / "out") == 0
    base.unlink()
    os.mkfifo(base)
    assert _render(child, tmp_path / "out") == 1  # not a hang on the pipe
    base.unlink()
    with open(base, "wb") as huge:
        huge.truncate(2**31)  # sparse: not read, refused by its size
    assert _render(child, tmp_path / "out") == 1


def test_a_dangling_link_beside_the_templates_and_a_looping_profile_are_no_internal_error(
    cache, write_profile, minimal, tmp_path
):
    from lwsgen import resources

    lock = resources.package_dir("templates") / ".#service.yaml.j2"  # an editor's lock: a dangling link
    lock.symlink_to("user@host.1:1")
    try:
        render_cache.identity.cache_clear()
        assert _render(write_profile(minimal), tmp_path / "out") == 0
    finally:
        lock.unlink()
        render_cache.identity.cache_clear()
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    assert _render(tmp_path / "loop.yaml", tmp_path / "out") == 1
