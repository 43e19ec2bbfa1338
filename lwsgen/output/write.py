"""Stage 7, write: rendered directories to OUT/<name>/; --check drift; --stdout stream.

What a render guarantees, whatever stops it (SIGKILL, Ctrl-C, a full disk):
- each OUT/<name> is entirely its old content or entirely its new content: the new directory is
  built beside it (OUT/.<name>.lwsgen-<random>, unchanged and foreign files hard-linked, so they
  keep their inode and mtime) and swapped in with one atomic rename (renameat2 RENAME_EXCHANGE);
  `.lwsgen-files` always matches the directory it is in;
- in a batch, directories are swapped one after another: an interrupted batch leaves some
  directories new and the rest old, never one half-written, and the next run removes what the
  interrupted one left in OUT and converges;
- nothing is written through a symbolic link, and no file lwsgen did not write (not listed in
  `.lwsgen-files`) is replaced or removed unless --force;
- every failure of the environment (OUT not a directory, read-only, full, permission denied, a lock
  held too long) is a WriteError: one line, exit 1.
Limits, by design: OUT must be writable by its owner only (else another user could swap a directory
being built for a link; such an OUT is refused); a mount inside OUT/<name> is refused, never moved;
a file someone else creates in OUT/<name> while a render swaps it is lost with the old directory.
"""

import errno
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lwsgen.derive.kinds import listed
from lwsgen.files import create_exclusive
from lwsgen.output.rendered import Rendered
from lwsgen.records import Record

# Lists the files lwsgen wrote into a directory, so a later render removes only its own files.
MANIFEST = ".lwsgen-files"
STAGING = ".lwsgen-"  # OUT/.<name>.lwsgen-<random>: a directory being built or being removed
# Exactly what lwsgen names them (a profile name is a DNS label; 12 hex digits): nothing of the user's.
_PROFILE_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # a DNS-1035 label: what a profile name is
_LEFTOVER = re.compile(r"\.(?P<name>[a-z]([-a-z0-9]*[a-z0-9])?)\.lwsgen-(?P<old>old-)?[0-9a-f]{12}")
LOCK_TIMEOUT = 60.0


class WriteError(Exception):
    """What stopped a write, as one line for the user."""


def lock_path(out_root: Path) -> Path:
    """The lock of one output root; kept in the temp directory so nothing lands in a GitOps repo,
    one per user (a lock another user created could not be opened, or could be a trap)."""
    try:
        where = out_root.resolve()
    except (OSError, RuntimeError) as err:  # a symbolic-link loop
        raise WriteError(f"cannot resolve {out_root}: {err}") from None
    digest = hashlib.sha256(str(where).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"lwsgen-{os.getuid()}-{digest}.lock"


def _open_lock(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise WriteError(f"{path} is a symbolic link; remove it (lwsgen never follows one)") from None
        raise WriteError(f"cannot open the lock {path}: {err.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink != 1:
        os.close(fd)
        raise WriteError(f"the lock {path} is not a plain file of this user's; remove it")
    return fd


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "another process"


@contextmanager
def locked(out_root: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the output root's lock: two renders into one directory never interleave their writes.
    Waits at most `timeout` seconds, saying who holds it."""
    path = lock_path(out_root)
    fd = _open_lock(path)
    holder = _directory_lock(out_root)
    try:
        deadline, said = time.monotonic() + timeout, False
        while True:
            try:
                fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    sys.stderr.write(
                        f"lwsgen: waiting for another render into {out_root} ({_holder(fd)}, lock {path})\n"
                    )
                    said = True
                if time.monotonic() >= deadline:
                    raise WriteError(
                        f"another render into {out_root} ({_holder(fd)}) held the lock {path} for {timeout:g} s; "
                        "wait for it or raise --lock-timeout"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
        os.close(holder)


def _directory_lock(out_root: Path) -> int:
    """A descriptor of the directory that holds OUT (its nearest existing one), for flock: the
    lock every render into OUT takes whatever its TMPDIR (the lock file there only names the
    holder), and nothing is created for it."""
    where = Path(os.path.realpath(out_root)).parent
    while not where.is_dir() and where != where.parent:
        where = where.parent
    try:
        return os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise WriteError(f"cannot open {where} to lock {out_root}: {err.strerror}") from None


SOURCE_LINE = "# rendered from "  # .lwsgen-files' first line: the profile, relative to the directory


def _with_manifest(result: Rendered, directory: Path) -> dict[str, str]:
    files = dict(result.files)
    source = ""
    if result.path:  # relative to the directory as it really is: however OUT is spelled, the same line
        source = f"{SOURCE_LINE}{os.path.relpath(result.path, os.path.realpath(directory))}\n"
    files[MANIFEST] = source + "".join(f"{name}\n" for name in sorted(result.files))
    return files


def listed_names(text: str) -> set[str]:
    """The plain file names a .lwsgen-files lists: never a path, '.', '..', a NUL, a comment, or the
    manifest itself."""
    names = {line.strip() for line in text.splitlines() if not line.startswith("#")}
    return {n for n in names if n and "/" not in n and "\0" not in n and n not in (".", "..", MANIFEST)}


def recorded_source(directory: Path) -> Path | None:
    """The profile a directory's .lwsgen-files says it was rendered from (resolved), if it says."""
    try:
        first = (directory / MANIFEST).read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(SOURCE_LINE):
        return None
    return Path(os.path.normpath(os.path.join(os.path.realpath(directory), first[len(SOURCE_LINE) :])))


class Plan(Record):
    """What writing one directory changes."""

    directory: Path
    files: dict[str, str]  # name -> text, the manifest included
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    kept: tuple[str, ...] = ()  # files lwsgen did not write, left in place (without --force)


class WriteReport(Record):
    directory: Path
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    kept: tuple[str, ...] = ()


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _owned(directory: Path) -> set[str]:
    manifest = directory / MANIFEST
    info = _lstat(manifest)
    if info is None:
        return set()
    if not stat.S_ISREG(info.st_mode):
        raise WriteError(f"{manifest} is not a regular file; lwsgen never writes through a link")
    return listed_names(manifest.read_text(encoding="utf-8", errors="replace"))


def _is_file_or_link(info: os.stat_result | None) -> bool:
    return info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode))


def _same(path: Path, text: str) -> bool:
    data = text.encode("utf-8")
    return os.lstat(path).st_size == len(data) and path.read_bytes() == data  # no reading a huge file


def plan(out_root: Path, result: Rendered, force: bool = False) -> Plan:
    """What a write of result changes; raises WriteError for a link or a file lwsgen did not write.
    --force replaces such a file, and removes the ones the profile does not render; without it they
    are kept (and --check reports them as extra)."""
    directory = out_root / result.name
    info = _lstat(directory)
    files = _with_manifest(result, directory)
    if info is None:
        return Plan(directory, files, tuple(files), ())
    if stat.S_ISLNK(info.st_mode):
        raise WriteError(f"{directory} is a symbolic link; lwsgen writes only into real directories")
    if not stat.S_ISDIR(info.st_mode):
        raise WriteError(f"{directory} exists and is not a directory")
    owned = _owned(directory)
    changed, foreign = [], []
    for name, text in files.items():
        path = directory / name
        entry = _lstat(path)
        if entry is None:
            changed.append(name)
        elif stat.S_ISLNK(entry.st_mode) or not stat.S_ISREG(entry.st_mode):
            raise WriteError(f"{path} is not a regular file (a link or a directory); lwsgen never writes through one")
        elif not _same(path, text):
            changed.append(name)
            if name not in owned and name != MANIFEST:
                foreign.append(path)
    # lwsgen writes only files: an owned name that is now a directory (or a device) is not removed
    removed = sorted(name for name in owned - set(files) if _is_file_or_link(_lstat(directory / name)))
    if foreign and not force:
        raise WriteError(
            f"{foreign[0]} was not written by lwsgen (not in {MANIFEST}); "
            "move it away, or render with --force to replace it"
        )
    others = sorted(set(os.listdir(directory)) - set(files) - set(removed) - owned)
    if force:
        return Plan(directory, files, tuple(changed), tuple(sorted([*removed, *others])))
    return Plan(directory, files, tuple(changed), tuple(removed), tuple(others))


def _hardlink_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)


def _stage(staging: Path, change: Plan) -> None:
    """The new directory, built beside the old one: what stays is hard-linked, what changes written;
    the directory keeps its mode and owner."""
    staging.mkdir(mode=0o755)
    rewritten = set(change.changed) | set(change.removed)
    if change.directory.is_dir():
        old = os.stat(change.directory)
        os.chmod(staging, stat.S_IMODE(old.st_mode))
        if os.getuid() == 0:
            os.chown(staging, old.st_uid, old.st_gid)
        _no_mount_inside(change.directory, old.st_dev)
        with os.scandir(change.directory) as scan:
            entries = list(scan)
        for entry in entries:
            if entry.name in rewritten:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.copytree(entry.path, staging / entry.name, symlinks=True, copy_function=_hardlink_or_copy)
            else:
                _hardlink_or_copy(Path(entry.path), staging / entry.name)
    for name in change.changed:
        create_exclusive(staging / name, change.files[name])


def _no_mount_inside(directory: Path, device: int) -> None:
    """Refuse a directory with a mount anywhere below it: swapping it in would move the mount into
    the old directory, and removing that would empty what is mounted."""
    for top, names, _ in os.walk(directory, followlinks=False):
        for name in names:
            path = os.path.join(top, name)
            if os.lstat(path).st_dev != device or os.path.ismount(path):
                raise WriteError(f"{path} is a mount point; lwsgen swaps whole directories and never moves a mount")


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux renameat2); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):  # a Python without ctypes: the two-rename fallback
        return False
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _swap_in(staging: Path, directory: Path) -> None:
    if not directory.exists():
        os.rename(staging, directory)
        return
    if not _exchange(staging, directory):
        # Two renames; a stop between them leaves OUT/.<name>.lwsgen-old-..., which clean() restores.
        old = directory.parent / f".{directory.name}{STAGING}old-{secrets.token_hex(6)}"
        os.rename(directory, old)
        try:
            os.rename(staging, directory)
        except BaseException:
            os.rename(old, directory)  # put the old one back: the directory is never missing
            raise
        staging = old
    shutil.rmtree(staging, ignore_errors=True)


def clean(out_root: Path) -> None:
    """Remove what an interrupted render left in OUT: directories being built (never swapped in) and
    old directories swapped out; restore an old one whose replacement never arrived."""
    if not out_root.is_dir():
        return
    with os.scandir(out_root) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        target = out_root / match["name"]
        if match["old"] and not os.path.lexists(target):
            os.rename(entry.path, target)
        else:
            shutil.rmtree(entry.path, ignore_errors=True)


def _replace_directory(out_root: Path, change: Plan) -> None:
    staging = out_root / f".{change.directory.name}{STAGING}{secrets.token_hex(6)}"
    try:
        _stage(staging, change)
        _swap_in(staging, change.directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # after a swap, this is the old directory's leftovers
        raise


def _private(out_root: Path) -> None:
    """Refuse an output root others may write: they could swap a directory being built for a link."""
    try:  # the directory itself: OUT may be a link to one (a world-writable /tmp/x, say)
        info = os.stat(out_root)
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode) and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise WriteError(
            f"{out_root} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); lwsgen writes only into "
            f"an output root its owner alone may change: chmod go-w {out_root}"
        )


def write_all(out_root: Path, results: list[Rendered], force: bool = False) -> list[WriteReport]:
    """Write every result (the caller holds the lock); nothing is written unless every directory may be."""
    try:
        _private(out_root)
        clean(out_root)
        plans = [plan(out_root, result, force) for result in results]
        out_root.mkdir(parents=True, exist_ok=True)
        reports = []
        for change in plans:
            if change.changed or change.removed:
                _replace_directory(out_root, change)
            changed = tuple(c for c in change.changed if c != MANIFEST)
            reports.append(WriteReport(change.directory, changed, change.removed, change.kept))
        return reports
    except OSError as err:
        where = err.filename or out_root
        raise WriteError(f"cannot write {where}: {err.strerror or err}") from None


DIFF_LINES = 40  # of a stale file's unified diff, at most


class Drift(Record):
    """One file of OUT/<name>/ that is not what its profile renders."""

    path: Path
    state: str  # missing, stale or extra
    profile: str
    diff: tuple[str, ...] = ()  # a stale file's unified diff, committed -> rendered, bounded

    def line(self) -> str:
        what = {
            "not-a-directory": "not a directory (a link or a file); lwsgen writes only real directories",
            "not-a-file": "not a regular file (a link, a directory or a device)",
            "missing": "missing",
            "stale": f"stale (differs from what {self.profile} renders)",
            "extra": f"extra (no longer rendered from {self.profile}; render removes it)",
            "foreign": f"extra (not written by lwsgen, not rendered from {self.profile}): remove it, or render --force",
            "orphan": (
                f"no profile renders this directory any more ({self.profile}); render removes it (with --force "
                "if it holds files lwsgen did not write)"
            ),
        }
        return f"{self.path}: {what[self.state]}"


def _diff(path: Path, text: str) -> tuple[str, ...]:
    import difflib

    old = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(old, text.splitlines(keepends=True), f"{path} (committed)", f"{path} (rendered)"))
    lines = [line.rstrip("\n") for line in lines]
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more diff lines"]
    return tuple(lines)


def drift(out_root: Path, result: Rendered) -> list[Drift]:
    """Every missing, stale or extra file of OUT/<name>/."""
    directory = out_root / result.name
    files = _with_manifest(result, directory)
    info = _lstat(directory)
    if info is not None and not stat.S_ISDIR(info.st_mode):  # a link or a file: render would refuse it too
        return [Drift(directory, "not-a-directory", result.source)]
    found = []
    for name, text in sorted(files.items()):
        path = directory / name
        entry = _lstat(path)
        if entry is None:
            found.append(Drift(path, "missing", result.source))
        elif not stat.S_ISREG(entry.st_mode):
            found.append(Drift(path, "not-a-file", result.source))
        elif not _same(path, text):
            found.append(Drift(path, "stale", result.source, _diff(path, text)))
    if info is not None:
        owned = _owned(directory)
        for path in sorted(directory.iterdir()):
            if path.name not in files:
                found.append(Drift(path, "extra" if path.name in owned else "foreign", result.source))
    return found


class Orphan(Record):
    """An output directory lwsgen wrote that no profile of this run renders any more."""

    directory: Path
    source: str  # the profile it was rendered from, as recorded (or "unknown")


def orphans(out_root: Path, results: list[Rendered], scope: list[Path]) -> list[Orphan]:
    """OUT/<name>/ directories lwsgen owns (they hold .lwsgen-files) whose profile is in the scope of
    this run (a given file, or under a given directory) and rendered none of them: the profile was
    deleted, renamed, or now says `base: true`. A directory whose profile lies outside the scope
    is another run's; one without a recorded profile (standard input, an older lwsgen) is never judged."""
    if not out_root.is_dir():
        return []
    produced = {result.name for result in results}
    roots = [path.resolve() for path in scope]
    found = []
    for entry in sorted(out_root.iterdir()):
        if (
            not _PROFILE_NAME.fullmatch(entry.name)
            or entry.name in produced
            or entry.is_symlink()
            or not entry.is_dir()
        ):
            continue  # only what a profile could have named: never a copy (x.bak) or a dot entry
        manifest = _lstat(entry / MANIFEST)
        if manifest is None or not stat.S_ISREG(manifest.st_mode):
            continue  # not lwsgen's
        source = recorded_source(entry)
        if source is None:
            continue  # no recorded profile (standard input, an older lwsgen): never judged
        if any(source == root or source.is_relative_to(root) for root in roots):
            shown = os.path.relpath(source)
            found.append(Orphan(entry, str(source) if shown.startswith("..") else shown))
    return found


def remove_orphans(out_root: Path, found: list[Orphan], force: bool = False) -> list[tuple[Orphan, tuple[str, ...]]]:
    """Remove each orphan directory whole (moved aside in one rename, then deleted); one holding files
    lwsgen did not write is kept unless --force: (orphan, the names that kept it)."""
    kept = []
    try:
        for orphan in found:
            entries = {name: os.lstat(orphan.directory / name) for name in os.listdir(orphan.directory)}
            # lwsgen writes only files: a directory (or a mount) inside is never removed, not even by --force
            held = tuple(sorted(n for n, info in entries.items() if not _is_file_or_link(info)))
            foreign = tuple(sorted(set(entries) - _owned(orphan.directory) - {MANIFEST} - set(held)))
            if held or (foreign and not force):
                kept.append((orphan, held + (() if force else foreign)))
                continue
            doomed = out_root / f".{orphan.directory.name}{STAGING}{secrets.token_hex(6)}"
            os.rename(orphan.directory, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
    except OSError as err:
        raise WriteError(f"cannot remove {err.filename or out_root}: {err.strerror or err}") from None
    return kept


def stream(results: list[Rendered], include: tuple[str, ...] = ()) -> str:
    """One multi-document YAML stream of exactly the objects each directory's kustomization lists
    (what `kubectl kustomize OUT/<name>` builds, and what Argo CD applies), in file order; files
    outside it (one-off tests, configuration fragments) only when `include` names their kind."""

    docs = []
    for result in results:
        for name in sorted(result.files):
            key = name.removesuffix(".yaml")
            if listed(key) or key in include:
                text = result.files[name]
                docs.append(text if not text.startswith("---\n") else text[4:])
    return "".join(f"---\n{doc}" for doc in docs)
