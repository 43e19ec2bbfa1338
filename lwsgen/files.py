"""Writing a file whole and never through a link, and where lwsgen keeps what it caches between runs."""

from __future__ import annotations

import errno
import functools
import grp
import os
import pwd
import secrets
import stat
from pathlib import Path

# Created, never opened: a planted file or symbolic link at the name is an error, not a target.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create_exclusive(path: Path, text: str | bytes) -> None:
    """Write a new file at path; fails if anything (a file, a link) is already there."""
    fd = os.open(path, _CREATE, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
    except BaseException:
        os.unlink(path)
        raise


def atomic_write(path: Path, text: str | bytes) -> None:
    # A new temporary file (an unpredictable name, created exclusively) renamed over the target:
    # readers see the old file or the new one, never half, and a link at the target is replaced,
    # not followed. No fsync: everything lwsgen writes can be regenerated.
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    create_exclusive(tmp, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/lwsgen (~/.cache/lwsgen), or None when LWSGEN_NO_CACHE turns caching off or
    there is no absolute home to keep it in (HOME unset for a user without a passwd entry leaves '~',
    HOME=. the current directory: either would read a cache out of the checkout being rendered)."""
    if os.environ.get("LWSGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):  # the XDG spec: a relative path is invalid and ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "lwsgen"


def trusted(directory: Path) -> bool:
    """A cache directory whose content this user alone can have written: a real directory (not a
    link) owned by this user, it and every lwsgen directory above it writable by nobody else, and
    every directory the path passes through on the way (_reached_unswappably) one in which no other
    user could put their own directory in its place. What lwsgen caches includes compiled template
    code it executes (a shared XDG_CACHE_HOME would otherwise let another user run code as whoever
    renders), so anything else is not read. Not seen: permissions a file system does not show in
    owner and mode (a FUSE mount of another user's, NFSv4 ACLs)."""
    path = str(directory)
    if not os.path.isabs(path):
        return False
    base = cache_dir()
    own = [path]
    if base is not None and path.startswith(f"{base}/"):
        while own[-1] != str(base):
            own.append(os.path.dirname(own[-1]))
    return all(_private_directory(each) for each in own) and _reached_unswappably(path)


def _private_directory(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


# The most links one lookup follows before the kernel gives up with ELOOP (MAXSYMLINKS, fs/namei.c).
_MAX_LINKS = 40


def _reached_unswappably(path: str) -> bool:
    """Walk an absolute path as the kernel's lookup does (each link followed where it is met, a
    relative target from the link's directory, `..` from wherever the walk has got to) and require
    every directory and link on the way to be root's or this user's, each directory writable by
    others only with the sticky bit (/tmp: only an entry's owner may rename it) or through this user's
    own private group. Checking the path as written and fully resolved is not enough: a link reached
    through another link, or a `..` after one, leads through directories neither names."""
    uid, pending, current, links = os.geteuid(), path.split("/")[::-1], "/", 0
    if not _unswappable(os.lstat("/"), uid, "/"):
        return False
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)  # current is a real directory: its parent is on the way
            continue
        entry = os.path.join(current, name)
        try:
            info = os.lstat(entry)
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if info.st_uid not in (0, uid) or links > _MAX_LINKS:
                return False
            target = os.readlink(entry)
            current = "/" if target.startswith("/") else current
            pending.extend(target.split("/")[::-1])
        elif _unswappable(info, uid, entry):
            current = entry
        else:
            return False
    return True


def _unswappable(info: os.stat_result, uid: int, path: str) -> bool:
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, uid):
        return False
    if info.st_mode & stat.S_ISVTX or not info.st_mode & 0o022:
        return True
    return not info.st_mode & 0o002 and _private_group(uid, info.st_gid) and not _has_acl(path)


@functools.lru_cache(maxsize=4)
def _private_group(uid: int, gid: int) -> bool:
    """This user's private group (Debian, Fedora and their kin give each user one, with umask 002, so
    ~/.cache is often 0775): the user's primary group, named after them, not root's group (handed to
    other users' processes often: OpenShift's arbitrary users, `docker run --user N:0`), with no
    other member by any entry the user database lists: no member named, no other user whose primary
    group it is, no second group entry with its number."""
    try:
        user, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    if gid in (0, None) or gid != user.pw_gid or group.gr_name != user.pw_name or set(group.gr_mem) - {user.pw_name}:
        return False
    if any(other.pw_gid == gid and other.pw_uid != uid for other in pwd.getpwall()):
        return False
    return sum(entry.gr_gid == gid for entry in grp.getgrall()) == 1


def _has_acl(path: str) -> bool:
    """A POSIX access ACL: its named users and groups hide behind the mode's group bits (the mask)."""
    try:
        os.getxattr(path, "system.posix_acl_access", follow_symlinks=False)
    except OSError as err:
        return err.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)
    return True


def read_cached(path: Path | None) -> bytes | None:
    """A cache entry's bytes, or None: read only from a directory this user alone can write
    (trusted), through a descriptor that refuses a link, and only if the file opened is a plain file
    of this user's that no one else can write or has linked elsewhere. What is cached decides what
    passes (schemas), is trusted whole (a kept render) or runs (compiled templates), so anything else
    (a directory or a named pipe at the name too) is made afresh."""
    if path is None or not trusted(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # absent (or a link): made again
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022 or info.st_nlink != 1:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def store_cached(path: Path, text: str, prune: dict[str, int]) -> None:
    """Keep one cache entry: written whole, then of the files beside it matching each glob of `prune`
    only that many of the newest are left. Only in a directory this user alone can write (made 0700
    if absent): a link or someone else's directory is neither written nor pruned, its files could be
    anyone's. Without a cache directory nothing is kept, and the work is done again next time."""
    try:
        private_dir(path.parent)
        if not trusted(path.parent):
            return
        atomic_write(path, text)
        for pattern, newest in prune.items():
            found = sorted(path.parent.glob(pattern), key=lambda p: p.stat().st_mtime_ns, reverse=True)
            for stale in found[newest:]:
                stale.unlink(missing_ok=True)
    except OSError:
        pass


def private_dir(directory: Path) -> None:
    """Make a cache directory and each missing one above it 0700 (mkdir's parents=True gives the upper
    ones the umask's mode: 0775 under a umask of 002, which trusted() then refuses for good)."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for level in reversed(missing):
        level.mkdir(mode=0o700, exist_ok=True)
