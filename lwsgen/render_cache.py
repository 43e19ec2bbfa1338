"""Renders of unchanged input, kept between runs: a profile whose files, lwsgen and libraries are as
they were when it last rendered and passed validation gets that validated result back instead of
being rendered again (a monorepo's drift check, `render --check`, mostly re-renders what did not
change).

A record is found by what names the render: the profile's resolved path, how it is shown, the
output root, the command line's --set, --default and --root, and lwsgen's identity (each file of
the package, its templates and schemas by size and modification time, as Python's own bytecode
cache judges a source; the Python and library versions). It lists every profile file the render
read (the profile and each base its `extends` reaches) with where its path led and its SHA-256, and is
used only while each still resolves alike and has it; the git work tree the profile is in (how far
bases may reach) is part of the name. Never kept: standard input, and profiles with `templates:` (Jinja may include any
file). Records are pickles, so they are read only from a cache directory this user alone can write
(files.trusted). LWSGEN_NO_RENDER_CACHE=1 turns them off, LWSGEN_NO_CACHE=1 with the other caches.
One record per name: a changed profile replaces its record; beyond MAX_RECORDS the least recently
used go.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from lwsgen import bounds, files
from lwsgen.load.given import STDIN, Given

if TYPE_CHECKING:
    from lwsgen.pipeline import Rendered

RECORDS = "renders"
MAX_RECORDS = 5000  # ~80 kB each: at most ~400 MB, the most recently used kept
_LIBRARIES = ("yaml", "_yaml", "jinja2", "markupsafe", "jsonschema_rs", "kubernetes_validate")


def _tree(root: Path) -> list[tuple[str, int, int]]:
    out = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(names):
            if not name.endswith((".pyc", ".tmp")):
                info = os.stat(os.path.join(directory, name))
                out.append((os.path.join(directory, name), info.st_size, info.st_mtime_ns))
    return out


@cache
def identity() -> str:
    """lwsgen as it is installed or checked out now, and what it renders and validates with: each
    library by its module file (a reinstall writes it anew), found without importing it (a kept
    render needs no Jinja)."""
    from importlib.util import find_spec

    from lwsgen import resources

    package = Path(__file__).resolve().parent
    found: list = [sys.version, *_tree(package)]
    for data in ("templates", "schemas"):
        where = resources.package_dir(data).resolve()
        if not where.is_relative_to(package):  # a checkout: beside the package, not inside it
            found += _tree(where)
    for library in _LIBRARIES:
        spec = find_spec(library)
        origin = spec.origin if spec is not None else None
        info = os.stat(origin) if origin else None
        found.append((library, origin, info and (info.st_size, info.st_mtime_ns)))
    return hashlib.sha256(repr(found).encode()).hexdigest()


def _directory() -> Path | None:
    base = files.cache_dir()
    return None if base is None or os.environ.get("LWSGEN_NO_RENDER_CACHE") else base / RECORDS


def _record_path(path: Path, out_root: str, display: str, given: Given) -> Path | None:
    directory = _directory()
    if directory is None or str(path) == STDIN or given.stdin is not None:
        return None
    from lwsgen.load.inherit import work_tree  # bases may reach anywhere in it: its top is part of the name

    tree = work_tree(path)
    name = (identity(), str(path.resolve()), display, out_root, given.root, given.sets, given.defaults, str(tree))
    return directory / f"{hashlib.sha256(repr(name).encode()).hexdigest()}.pickle"


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _unchanged(reached: str, resolved: str, digest: str) -> bool:
    return str(bounds.resolved(Path(reached))) == resolved and _digest(resolved) == digest


def find(path: Path, out_root: str, display: str, given: Given) -> Rendered | None:
    """The kept result of this render, if every file it read is unchanged; else None."""
    record = _record_path(path, out_root, display, given)
    if record is None or not files.trusted(record.parent):
        return None
    try:
        with open(record, "rb") as handle:
            read, result = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
        return None  # none yet, or written by another lwsgen: rendered again and replaced
    if not all(_unchanged(*entry) for entry in read):
        return None
    try:
        os.utime(record)  # used now: prune() removes the records used longest ago
    except OSError:
        pass
    return result


def keep(path: Path, out_root: str, display: str, given: Given, result: Rendered, read: list) -> None:
    """Record a render that passed; nothing when it cannot be kept or the cache cannot be written.
    `read`: (path as reached, path resolved) of each profile file the render read."""
    record = _record_path(path, out_root, display, given)
    if record is None or result.profile.templates is not None:
        return
    entries = [(str(reached), str(resolved), _digest(str(resolved))) for reached, resolved in dict.fromkeys(read)]
    if any(digest is None for *_, digest in entries):
        return
    try:
        record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if files.trusted(record.parent):
            files.atomic_write(record, pickle.dumps((entries, result), protocol=pickle.HIGHEST_PROTOCOL))
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
