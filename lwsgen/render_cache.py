"""Renders of unchanged input, kept between runs: a profile whose files, lwsgen and libraries are as
they were when it last rendered and passed validation gets that validated result back instead of
being rendered again (a monorepo's drift check, `render --check`, mostly re-renders what did not
change).

A record is found by what names the render: the profile's resolved path, how it is shown, the
output root, the command line's --set and --default, the --root directory it resolves to, and
lwsgen's identity (each file of the package, its templates and schemas, and each library it
imports, by size, inode and modification and change times; the Python version). It lists every
profile file the render read (the profile and each base its `extends` reaches): the path it was
reached by, where that led, the git work tree above it (how far its bases may reach), and the
SHA-256 of the bytes the render read. It is used only while each is still so. Never kept: standard
input, and profiles with `templates:` (Jinja may include any file).

Records are pickles with a SHA-256 of their payload, so they are read only from an absolute cache
directory this user alone can write (files.trusted), through a descriptor whose file is checked
again (owned by this user, writable by no one else, one link): a directory swapped in between the
check and the open yields a file that fails it. LWSGEN_NO_RENDER_CACHE=1 turns records off,
LWSGEN_NO_CACHE=1 with the other caches. One record per name: a changed profile replaces its
record; beyond MAX_RECORDS the least recently used go.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from lwsgen import bounds, files, resources
from lwsgen.load.given import STDIN, Given
from lwsgen.load.inherit import work_tree
from lwsgen.load.source import MAX_PROFILE_BYTES, read_bytes
from lwsgen.problems import ProblemsError

if TYPE_CHECKING:
    from lwsgen.pipeline import Rendered

RECORDS = "renders"
MAX_RECORDS = 5000  # ~75 kB each: at most ~375 MB, the most recently used kept
# Every library lwsgen imports (a test reads lwsgen/'s imports and holds this to them), with what
# jsonschema (the endpoint-picker configuration) and celpy (CRD rules) build on.
_LIBRARIES = (
    "yaml",
    "_yaml",
    "jinja2",
    "markupsafe",
    "jsonschema_rs",
    "kubernetes_validate",
    "jsonpatch",
    "jsonpointer",
    "packaging",
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "celpy",
    "lark",
)


def _stamp(path: str) -> tuple | None:
    """A file as it is now: an edit changes its change time even when size and mtime are put back."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


def _tree(root: Path) -> list[tuple]:
    out = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        out += [(os.path.join(directory, n), _stamp(os.path.join(directory, n))) for n in sorted(names)]
    return out


@cache
def identity() -> str:
    """lwsgen as it is installed or checked out now, and what it renders and validates with: each
    library by its module file (a reinstall writes it anew), found without importing it (a kept
    render needs no Jinja)."""
    from importlib.util import find_spec

    package = Path(__file__).resolve().parent
    found: list = [sys.version, *_tree(package)]
    for data in ("templates", "schemas"):
        where = resources.package_dir(data).resolve()
        if not where.is_relative_to(package):  # a checkout: beside the package, not inside it
            found += _tree(where)
    for library in _LIBRARIES:
        try:
            spec = find_spec(library)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        found.append((library, origin, _stamp(origin) if origin else None))
    return hashlib.sha256(repr(found).encode()).hexdigest()


def _directory() -> Path | None:
    base = files.cache_dir()
    return None if base is None or os.environ.get("LWSGEN_NO_RENDER_CACHE") else base / RECORDS


def record_for(path: Path, out_root: str, display: str, given: Given) -> Path | None:
    """Where this render's record is kept, or None when it is never kept (no cache, standard input)."""
    directory = _directory()
    resolved = bounds.resolved(path)
    if directory is None or resolved is None or str(path) == STDIN or given.stdin is not None:
        return None
    root = bounds.resolved(Path(given.root)) if given.root is not None else None
    name = (identity(), str(resolved), display, out_root, given.sets, given.defaults, given.root, str(root))
    return directory / f"{hashlib.sha256(repr(name).encode()).hexdigest()}.pickle"


def _where(reached: str) -> tuple | None:
    """Where a path leads now, as the kernel and lwsgen's resolution see it, and the work tree above."""

    resolved = bounds.resolved(Path(reached))
    try:
        info = os.stat(reached)  # the kernel's walk: `dir/..` needs dir
    except OSError:
        return None
    return (str(resolved), info.st_dev, info.st_ino, str(work_tree(Path(reached))))


def _unchanged(reached: str, where: tuple, digest: str) -> bool:
    if _where(reached) != where:
        return False
    try:  # as a render reads it: a named pipe refused, not waited on; no more than a profile's bound
        raw = read_bytes(Path(reached), reached, MAX_PROFILE_BYTES)
    except ProblemsError:
        return False
    return hashlib.sha256(raw).hexdigest() == digest


def find(record: Path | None) -> Rendered | None:
    """The kept result of a render (record_for), if every file it read is unchanged; else None."""
    data = files.read_cached(record)
    if data is None or len(data) < 32 or hashlib.sha256(data[32:]).digest() != data[:32]:
        return None  # none yet, or damaged: rendered again and replaced
    try:
        read, result = pickle.loads(data[32:])
    except Exception:  # noqa: BLE001 - written by another lwsgen: rendered again and replaced
        return None
    if not all(_unchanged(*entry) for entry in read):
        return None
    try:
        os.utime(record)  # used now: prune() removes the records used longest ago
    except OSError:
        pass
    return result


def keep(record: Path | None, result: Rendered, read: list[Path], digests: dict[str, str]) -> None:
    """Record a render that passed; nothing when it cannot be kept or the cache cannot be written.
    `read`: the path each profile file the render read was reached through; `digests`: the SHA-256
    of the bytes read, by that path (load/source.digesting)."""
    if record is None or result.profile.templates is not None:
        return
    entries = [(str(reached), _where(str(reached)), digests.get(str(reached))) for reached in dict.fromkeys(read)]
    if any(where is None or digest is None for _, where, digest in entries):
        return
    payload = pickle.dumps((entries, result), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        files.private_dir(record.parent)
        if files.trusted(record.parent):
            files.atomic_write(record, hashlib.sha256(payload).digest() + payload)
    except OSError:
        pass  # an unwritable cache only means rendering again next time


def prune() -> None:
    """Once a command is done: beyond MAX_RECORDS, remove those used longest ago (paths that no longer
    exist, a CI's former checkouts, leave records nothing reads)."""
    directory = _directory()
    if directory is None or not files.trusted(directory):
        return
    try:
        entries = [e for e in os.scandir(directory) if e.name.endswith(".pickle")]
        if len(entries) <= MAX_RECORDS:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for entry in entries[: len(entries) - MAX_RECORDS]:
            os.unlink(entry.path)
    except OSError:
        pass
