"""Stage 7 under hostile files and bad luck: no write through a link, no file lwsgen did not write
touched, directories whole after any interruption, every environment failure one line and exit 1."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, merged
from lwsgen.cli import main
from lwsgen.output import write


def _render(profile, out, *extra):
    return main(["render", str(profile), "-o", str(out), *extra])


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_planted_link_in_the_output_directory_is_refused(write_profile, minimal, tmp_path, capsys):
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.write_text("precious\n")
    profile = write_profile(merged(minimal, replicas=2))
    assert _render(write_profile(minimal), out) == 0
    (out / "demo" / "leaderworkerset.yaml").unlink()
    (out / "demo" / "leaderworkerset.yaml").symlink_to(victim)
    assert _render(profile, out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leaderworkerset.yaml is not a regular file" in err
    assert victim.read_text() == "precious\n"


def test_a_symlinked_output_directory_is_refused(write_profile, minimal, tmp_path, capsys):
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    out.mkdir()
    (out / "demo").symlink_to(elsewhere)
    assert _render(write_profile(minimal), out) == 1
    assert "demo is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_lock_is_refused(write_profile, minimal, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out, target = tmp_path / "out", tmp_path / "created-through-the-link"
    write.lock_path(out).symlink_to(target)
    assert _render(write_profile(minimal), out) == 1
    assert "is a symbolic link" in capsys.readouterr().err
    assert not target.exists() and not out.exists()


def test_lock_waits_are_bounded_and_name_the_holder(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    hold = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "from lwsgen.output.write import locked\n"
        "with locked(Path(sys.argv[2])):\n print('held', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(REPO), str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert _render(write_profile(minimal), out, "--lock-timeout", "0.3") == 1
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and "--lock-timeout" in err
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_files_lwsgen_did_not_write_are_never_replaced_or_removed(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    off, on = (
        write_profile(minimal, "off.yaml"),
        write_profile(merged(minimal, **{"monitoring.enabled": True}), "on.yaml"),
    )
    assert _render(off, out) == 0
    mine = out / "demo" / "podmonitor.yaml"
    mine.write_text("# my own\n")
    (out / "demo" / "NOTES.md").write_text("kept\n")
    (out / "demo" / "extra").mkdir()
    (out / "demo" / "extra" / "overlay.yaml").write_text("kept too\n")
    before = _tree(out)
    assert _render(on, out) == 1
    assert "podmonitor.yaml was not written by lwsgen" in capsys.readouterr().err
    assert _tree(out) == before
    assert _render(off, out) == 0  # render v1 again: the user's file is not lwsgen's to remove
    assert mine.read_text() == "# my own\n"
    assert (out / "demo" / "NOTES.md").read_text() == "kept\n"
    assert (out / "demo" / "extra" / "overlay.yaml").read_text() == "kept too\n"
    assert _render(on, out, "--force") == 0  # --force, as documented: replaces and removes what is not lwsgen's
    assert mine.read_text() != "# my own\n"
    assert not (out / "demo" / "NOTES.md").exists() and not (out / "demo" / "extra").exists()
    assert _render(off, out) == 0  # now it is lwsgen's: removed when no longer rendered
    assert not mine.exists()


def test_unchanged_files_keep_their_inode_and_mtime_when_others_change(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    assert _render(write_profile(minimal), out) == 0
    service = out / "demo" / "service.yaml"
    before = os.stat(service)
    assert _render(write_profile(merged(minimal, replicas=3)), out) == 0
    after = os.stat(service)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_leftovers_of_an_interrupted_render_are_cleaned_or_restored(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    profile = write_profile(minimal)
    assert _render(profile, out) == 0
    good = _tree(out / "demo")
    (out / ".demo.lwsgen-0badc0ffee00").mkdir()
    (out / ".demo.lwsgen-0badc0ffee00" / "half.yaml").write_text("half")
    os.rename(out / "demo", out / ".demo.lwsgen-old-123456789abc")  # stopped between two renames
    assert _render(profile, out) == 0
    assert sorted(p.name for p in out.iterdir()) == ["demo"]
    assert _tree(out / "demo") == good


@pytest.mark.parametrize("case", ["out-is-a-file", "output-directory-is-a-file"])
def test_environment_failures_are_one_line_and_exit_1(write_profile, minimal, tmp_path, capsys, case):
    out = tmp_path / "out"
    if case == "out-is-a-file":
        out.write_text("")
    else:
        out.mkdir()
        (out / "demo").write_text("")
    assert _render(write_profile(minimal), out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lwsgen render: ") and "internal error" not in err


def test_an_output_root_others_may_write_is_refused(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "shared"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    assert _render(write_profile(minimal), out) == 1
    assert "is writable by other users (mode 777)" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_a_mount_inside_an_output_directory_is_never_emptied(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    assert _render(write_profile(minimal), out) == 0
    data = out / "demo" / "data"
    data.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(data)], capture_output=True).returncode:
        pytest.skip("needs root to mount a tmpfs")
    try:
        (data / "keep").write_text("x")
        capsys.readouterr()
        assert _render(write_profile(merged(minimal, replicas=3)), out) == 1
        assert "is a mount point" in capsys.readouterr().err
        assert (data / "keep").read_text() == "x"
    finally:
        subprocess.run(["umount", str(data)], check=False)


def test_manifest_entries_never_remove_directories_or_paths(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    assert _render(write_profile(minimal), out) == 0
    (out / "demo" / "mydir").mkdir()
    (out / "demo" / "mydir" / "f").write_text("data")
    with open(out / "demo" / ".lwsgen-files", "a") as manifest:
        manifest.write("mydir\n..\n.\nbad\0name\n")
    assert _render(write_profile(merged(minimal, replicas=3)), out) == 0
    assert (out / "demo" / "mydir" / "f").read_text() == "data"


def test_the_user_s_own_dot_directories_in_out_are_left_alone(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    for name in (".notes.lwsgen-bak", ".cfg.lwsgen-old-keep"):
        (out / name).mkdir(parents=True)
        (out / name / "f").write_text("mine")
    assert _render(write_profile(minimal), out) == 0
    assert sorted(p.name for p in out.iterdir()) == [".cfg.lwsgen-old-keep", ".notes.lwsgen-bak", "demo"]


def test_the_directory_keeps_its_mode(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    assert _render(write_profile(minimal), out) == 0
    (out / "demo").chmod(0o2750)
    assert _render(write_profile(merged(minimal, replicas=3)), out) == 0
    assert oct(os.stat(out / "demo").st_mode & 0o7777) == oct(0o2750)


def test_check_agrees_with_render_on_links(write_profile, minimal, tmp_path, capsys):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    profile = write_profile(minimal)
    assert _render(profile, elsewhere) == 0
    out.mkdir()
    (out / "demo").symlink_to(elsewhere / "demo")
    capsys.readouterr()
    assert main(["render", str(profile), "-o", str(out), "--check"]) == 1
    assert "demo: not a directory (a link or a file)" in capsys.readouterr().out


def test_an_output_root_linked_to_a_world_writable_directory_is_refused(write_profile, minimal, tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    out = tmp_path / "out"
    out.symlink_to(shared)
    assert _render(write_profile(minimal), out) == 1
    assert "is writable by other users" in capsys.readouterr().err
    assert list(shared.iterdir()) == []


def test_a_mount_deep_inside_an_output_directory_is_never_moved(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    assert _render(write_profile(minimal), out) == 0
    data = out / "demo" / "notes" / "data"
    data.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(data)], capture_output=True).returncode:
        pytest.skip("needs root to mount a tmpfs")
    try:
        (data / "keep").write_text("x")
        capsys.readouterr()
        assert _render(write_profile(merged(minimal, replicas=3)), out) == 1
        assert "notes/data is a mount point" in capsys.readouterr().err
        assert (data / "keep").read_text() == "x"
    finally:
        subprocess.run(["umount", str(data)], check=False)


def test_renders_with_different_temp_directories_still_take_turns(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    hold = (
        "import os, sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "from lwsgen.output.write import locked\n"
        "with locked(Path(sys.argv[2])):\n print('held', flush=True); time.sleep(30)"
    )
    elsewhere = tmp_path / "tmp-of-another-shell"
    elsewhere.mkdir()
    env = {**os.environ, "TMPDIR": str(elsewhere)}
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(REPO), str(out)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline() == "held\n"
        assert _render(write_profile(minimal), out, "--lock-timeout", "0.3") == 1
        assert "--lock-timeout" in capsys.readouterr().err
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_a_cache_directory_others_can_write_is_never_read(tmp_path, monkeypatch):
    from lwsgen import render
    from lwsgen.files import trusted

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    (tmp_path / "lwsgen").mkdir(mode=0o700)
    assert render._bytecode_cache() is not None  # this user's own: kept
    (tmp_path / "lwsgen").chmod(0o777)  # a shared cache: another user could plant compiled code
    assert render._bytecode_cache() is None
    assert not trusted(tmp_path / "lwsgen")


def _cache_home(tmp_path: Path, layout: str) -> tuple[Path, Path]:
    """(XDG_CACHE_HOME, the directory others could write) for one way of reaching lwsgen's cache
    through a directory where another user could put their own in its place."""
    shared, private = tmp_path / "shared", tmp_path / "private"
    private.mkdir(mode=0o700)
    shared.mkdir()
    if layout == "in-it":
        home = shared / "cache"
    elif layout == "linked-into-it":  # the variable names a link in a private directory
        (shared / "cache").mkdir()
        (private / "cache").symlink_to(shared / "cache")
        home = private / "cache"
    elif layout == "a-link-hop-through-it":  # written and resolved both private; the hop between is not
        (shared / "hop").symlink_to(private / "real")
        (private / "cache").symlink_to(shared / "hop")
        home = private / "cache"
        (private / "real" / "lwsgen").mkdir(parents=True, mode=0o700)
        return home, shared
    else:  # "dot-dot-after-a-link": the kernel takes `..` after the link, from inside `shared`
        (private / "real" / "cache" / "lwsgen").mkdir(parents=True, mode=0o700)  # what a textual `..` names
        (shared / "x").mkdir()
        (private / "link").symlink_to(shared / "x")
        (shared / "real" / "cache").mkdir(parents=True)
        home = Path(f"{private}/link/../real/cache")
    (home / "lwsgen").mkdir(parents=True, mode=0o700)
    return home, shared


@pytest.mark.parametrize("layout", ["in-it", "linked-into-it", "a-link-hop-through-it", "dot-dot-after-a-link"])
def test_a_cache_reached_through_a_directory_others_can_write_is_never_read(tmp_path, monkeypatch, layout):
    """XDG_CACHE_HOME reached through a directory others can write (not sticky, as /tmp is, and not
    the user's private group): lwsgen's own 0700 directory is there, but another user could rename
    it, or a link on the way, and put theirs, holding compiled template code, in its place."""
    from lwsgen import files, render

    home, shared = _cache_home(tmp_path, layout)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    for mode, kept in ((0o755, True), (0o777, False), (0o1777, True), (0o757, False)):
        shared.chmod(mode)
        assert (render._bytecode_cache() is not None) is kept, oct(mode)
        assert files.trusted(home / "lwsgen") is kept


PRIVATE_GID = 4242  # this user's private group in the user database the next test fakes


def _user_database(monkeypatch, users: list[tuple[str, int, int]], groups: list[tuple[str, int, list[str]]]) -> None:
    """Fake /etc/passwd and /etc/group (name, uid, gid) / (name, gid, members); this user is the first."""
    import grp
    import pwd

    from lwsgen import files

    entries = [pwd.struct_passwd((n, "x", u, g, "", "/home/" + n, "/bin/sh")) for n, u, g in users]
    listed = [grp.struct_group((n, "x", g, m)) for n, g, m in groups]
    by_uid = {e.pw_uid: e for e in entries}
    by_gid = {}
    for entry in listed:
        by_gid.setdefault(entry.gr_gid, entry)  # getgrgid returns the first entry of a number
    monkeypatch.setattr(files.pwd, "getpwuid", lambda uid: by_uid[uid])
    monkeypatch.setattr(files.pwd, "getpwall", lambda: entries)
    monkeypatch.setattr(files.grp, "getgrgid", lambda gid: by_gid[gid])
    monkeypatch.setattr(files.grp, "getgrall", lambda: listed)
    files._private_group.cache_clear()


ME = ("alice", os.geteuid(), PRIVATE_GID)
PRIVATE = ("alice", PRIVATE_GID, [])
ROWS = {
    "the user's private group": ([ME], [PRIVATE], None, True),
    "a group with another member": ([ME], [("alice", PRIVATE_GID, ["mallory"])], None, False),
    "another user's primary group too": ([ME, ("mallory", 2002, PRIVATE_GID)], [PRIVATE], None, False),
    "a second group entry with its number": ([ME], [PRIVATE, ("team", PRIVATE_GID, ["mallory"])], None, False),
    "a group not named after the user": ([ME], [("staff", PRIVATE_GID, [])], None, False),
    "an ACL granting another user write": ([ME], [PRIVATE], 2002, False),
    "root's group": ([("alice", os.geteuid(), 0)], [("alice", 0, [])], None, False),
}


@pytest.mark.parametrize("row", ROWS)
def test_a_group_writable_directory_is_trusted_only_for_the_users_private_group(tmp_path, monkeypatch, row):
    """Under umask 002 (Debian's and Fedora's user private groups) ~/.cache is 0775 with the user's
    own group: no one else is in it. Another member, by any entry of the user database, an ACL behind
    the group bits, or root's group (handed to other users' processes) lets someone else swap it."""
    import struct

    from lwsgen import files

    users, groups, acl_user, kept = ROWS[row]
    _user_database(monkeypatch, users, groups)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "lwsgen").mkdir(parents=True, mode=0o700)
    os.chown(tmp_path / "cache", -1, users[0][2])
    (tmp_path / "cache").chmod(0o775)
    if acl_user is not None:  # user::rwx user:<acl_user>:rwx group::rwx mask::rwx other::r-x
        entries = [(0x01, 7, -1), (0x02, 7, acl_user), (0x04, 7, -1), (0x10, 7, -1), (0x20, 5, -1)]
        blob = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i & 0xFFFFFFFF) for t, p, i in entries)
        os.setxattr(tmp_path / "cache", "system.posix_acl_access", blob)
    assert files.trusted(tmp_path / "cache" / "lwsgen") is kept
    (tmp_path / "cache").chmod(0o755)
    assert files.trusted(tmp_path / "cache" / "lwsgen")


@pytest.mark.parametrize("home", [".", "relative/home"])
def test_no_cache_is_kept_without_an_absolute_home(monkeypatch, home):
    """HOME=. (or unset for a user with no passwd entry, which leaves '~') would put the cache in the
    directory rendered: a checkout could then bring its own compiled templates."""
    from lwsgen import files

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("LWSGEN_NO_CACHE", raising=False)
    monkeypatch.setenv("HOME", home)
    assert files.cache_dir() is None


def test_a_compiled_template_others_could_have_written_is_not_run(tmp_path):
    """Jinja's cache entries are compiled code: one writable by others, linked elsewhere, or not a file
    (a directory, a named pipe) is compiled anew, without a hang or an error; this user's own is loaded."""
    import jinja2.bccache

    from lwsgen import render

    directory = tmp_path / "jinja"
    directory.mkdir(mode=0o700)
    kept = render.KeptBytecode(str(directory))
    source = jinja2.Environment().compile("{{ 1 }}", raw=False)
    made = jinja2.bccache.Bucket(jinja2.Environment(), "key", "checksum")
    made.code = source
    kept.dump_bytecode(made)
    [entry] = directory.iterdir()

    def loaded() -> bool:
        bucket = jinja2.bccache.Bucket(jinja2.Environment(), "key", "checksum")
        kept.load_bytecode(bucket)
        return bucket.code is not None

    assert loaded()
    entry.chmod(0o666)
    assert not loaded()
    entry.chmod(0o600)
    os.link(entry, tmp_path / "elsewhere")
    assert not loaded()
    (tmp_path / "elsewhere").unlink()
    assert loaded()
    entry.unlink()
    entry.mkdir()
    assert not loaded()
    entry.rmdir()
    os.mkfifo(entry)
    assert not loaded()
