"""Profile inheritance: `extends: <relative path>` deep-merges a profile over its base.

Maps merge key by key; lists and scalars in the child replace the base's. Chains are followed,
a cycle is an error naming the files, and every value keeps the position in the file that set it,
so a problem points into the base or the overlay, wherever the offending value was written.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from lwsgen import bounds
from lwsgen.load.source import PathKey, Source, load_mapping
from lwsgen.problems import Problem, ProblemsError

EXTENDS = "extends"
BASE = "base"  # `base: true`: a file that is only a base; not inherited by the profiles extending it


def _merge(base: Any, child: Any) -> Any:
    if isinstance(base, dict) and isinstance(child, dict):
        merged = dict(base)
        for key, value in child.items():
            merged[key] = _merge(base[key], value) if key in base else value
        return merged
    return child


def _replaced(child: Any, path: PathKey = ()) -> set[PathKey]:
    """Paths whose whole subtree the child sets (lists and scalars replace; maps recurse)."""
    if isinstance(child, dict):
        return {p for key, value in child.items() for p in _replaced(value, path + (key,))}
    return {path}


def _kept(path: PathKey, replaced: set[PathKey]) -> bool:
    """The base's value at path survives: no prefix of it is replaced by the child (a set lookup
    per prefix, so a merge costs the paths times their depth, never base x child)."""
    return not any(path[:length] in replaced for length in range(len(path) + 1))


def _merge_positions(base: Source, child: Source, merged: Any) -> Source:
    out = Source(child.file, merged)
    replaced = _replaced(child.data)
    for table, base_table, child_table in (
        (out.values_at, base.values_at, child.values_at),
        (out.keys_at, base.keys_at, child.keys_at),
    ):
        for path, position in base_table.items():
            if _kept(path, replaced):
                table[path] = position
        table.update(child_table)
    for path in base.values_at:
        if _kept(path, replaced):
            out.files_at[path] = base.file_of(path)
    for path in child.values_at:
        out.files_at[path] = child.file_of(path)
    return out


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


MAX_DEPTH = bounds.MAX_EXTENDS  # bases in one chain


def work_tree(path: Path) -> Path | None:
    """The git work tree holding path (the nearest directory above it with a .git), if any."""
    real = bounds.resolved(path)
    for directory in real.parents if real is not None else ():
        if (directory / ".git").exists():
            return directory
    return None


def _confined(target: str, child: Path, root: str | None = None) -> Path | None:
    """The base a child names, if it stays inside the child's directory tree, its git work tree, or
    the root the command line names (--root: an Argo CD checkout may carry no .git)."""
    if os.path.isabs(target):
        return None
    base, here = bounds.resolved(child.parent / target), bounds.resolved(child)
    roots = [here.parent if here is not None else None, work_tree(child)]
    if root is not None:
        roots.append(bounds.resolved(Path(root)))
    return base if base is not None and any(r is not None and base.is_relative_to(r) for r in roots) else None


class _Reuse:
    """What one command has read: each file's mapping and link (steps), each chain's merge; a
    profile's own too with `profiles` (validate, whose directories hold bases among the profiles)."""

    def __init__(self, profiles: bool) -> None:
        self.profiles = profiles
        self.unkept = 0  # files read and not kept (profiles, with profiles=False): MAX_FILES counts them
        self.steps: dict[tuple, Any] = {}
        self.merged: dict[tuple, tuple[Source, int]] = {}


# A context variable, not a global: a render in another thread (a test's, a server's) never sees
# this command's files, and none outlives the command that read it.
_REUSE: ContextVar[_Reuse | None] = ContextVar("lwsgen_reuse", default=None)


@contextmanager
def reuse(profiles: bool = True):
    """Within it, a profile that several others extend is read, checked and merged once (validate
    of a directory of thousands that share bases costs each file once, not once per chain). With
    profiles=False only the bases are kept, not each profile's own file and merge: a render batch
    (whose profiles are no other's base, commands/discover.py) would otherwise hold every one."""
    token = _REUSE.set(_REUSE.get() or _Reuse(profiles))
    try:
        yield
    finally:
        _REUSE.reset(token)


# The profile files one render reads, by the path each was reached through: lwsgen/render_cache.py
# keeps a render while each still leads to the same file with the same bytes.
_READ: ContextVar[list[Path] | None] = ContextVar("lwsgen_read", default=None)


@contextmanager
def recording():
    """Within it, every profile file a load reads (the profile and each base) is listed in the list yielded."""
    read: list[Path] = []
    token = _READ.set(read)
    try:
        yield read
    finally:
        _READ.reset(token)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode's surrogate escapes of bytes that are not UTF-8
        return False
    return True


def _utf8_safe(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _identity(resolved: Path) -> tuple:
    """The file as it is now: a file rewritten between two reads is another file."""
    try:
        info = os.stat(resolved)
    except OSError:
        return ()
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def load(path: Path, display: str | None = None, root: str | None = None, text: str | None = None) -> Source:
    """A profile with every base it extends merged under it; the result has no `extends`. `text`:
    the profile's content when it was not read from `path` (standard input). The chain is walked
    without recursion, at most MAX_DEPTH bases; within reuse() each file is read and each chain
    merged once."""
    steps: list[tuple[tuple, Source]] = []  # the profile first, then each base
    below: tuple[Source, int] | None = None  # a chain merged before, where the walk reached one
    while True:
        resolved = bounds.resolved(path)
        if resolved is None:
            message = "its links loop or its path cannot be resolved; point it at a file"
            raise ProblemsError([Problem(display or str(path), 0, 0, "", message, "link-loop")])
        if not _utf8(str(resolved)):  # .lwsgen-files records it; YAML and messages carry it
            message = "its path is not valid UTF-8; rename the file"
            raise ProblemsError([Problem(_utf8_safe(display or str(path)), 0, 0, "", message, "bad-path")])
        key = (resolved, display, root, _identity(resolved))
        if any(resolved == seen[0] for seen, _ in steps):
            names = " -> ".join(_display(k[0]) for k, _ in steps) + f" -> {_display(resolved)}"
            raise ProblemsError(
                [Problem(display or str(path), 1, 1, EXTENDS, f"extends cycle: {names}", "extends-cycle")]
            )
        if len(steps) > MAX_DEPTH:
            raise ProblemsError([_too_deep(display or str(path))])
        reused, read = _REUSE.get(), _READ.get()
        if read is not None:
            read.append(path)
        if text is None and reused is not None and read is None and key in reused.merged:
            below = reused.merged[key]
            if len(steps) + below[1] > MAX_DEPTH:
                raise ProblemsError([_too_deep(display or str(path))])
            break
        src, base = _step(path, resolved, display, root, text, kept=bool(steps) or _keeps_profiles())
        steps.append((key, src))
        if base is None:
            break
        path, display, text = (*base, None)
    return _merged(steps, below)


def _merged(steps: list[tuple[tuple, Source]], below: tuple[Source, int] | None) -> Source:
    """The chain merged from its deepest base up; each base's result kept within reuse(), and the
    profile's own unless reuse(profiles=False)."""
    profile_key = steps[0][0] if steps and not _keeps_profiles() else None
    if below is None:
        key, src = steps.pop()
        below = (src, 0)
        if key is not profile_key:
            _keep(key, below)
    for key, src in reversed(steps):
        base, depth = below
        child_data = {k: v for k, v in src.data.items() if k != EXTENDS}
        merged = _merge({k: v for k, v in base.data.items() if k != BASE}, child_data)
        child = Source(src.file, child_data, src.values_at, src.keys_at, src.files_at)
        below = (_merge_positions(base, child, merged), depth + 1)
        if key is not profile_key:
            _keep(key, below)
    src = below[0]
    return Source(src.file, dict(src.data), src.values_at, src.keys_at, src.files_at)  # the caller's to change


def _keeps_profiles() -> bool:
    reused = _REUSE.get()
    return reused is None or reused.profiles


def _keep(key: tuple, merged: tuple[Source, int]) -> None:
    reused = _REUSE.get()
    if reused is not None and key[0] is not None:
        reused.merged[key] = merged


def _too_deep(file: str) -> Problem:
    message = f"more than {MAX_DEPTH} bases in one extends chain; flatten it"
    return Problem(file, 1, 1, EXTENDS, message, "extends-too-deep")


def _step(path: Path, resolved: Path, display: str | None, root: str | None, text: str | None, kept: bool):
    """(the file's mapping, (its base's path, as shown) or None); raises ProblemsError. Within
    reuse(), once per base file (`kept`): what is wrong with a file is so whichever profile reaches it."""
    key = (resolved, display, root, _identity(resolved))
    reused = _REUSE.get()
    if reused is None or text is not None:
        return _read_step(path, display, root, text)
    steps = reused.steps
    if key not in steps:
        if len(steps) + reused.unkept >= bounds.MAX_FILES:
            message = f"one command reads at most {bounds.MAX_FILES} profile files; split the directory"
            raise ProblemsError([Problem(display or str(path), 0, 0, "", message, "too-many-files")])
        if not kept:  # counted, not kept
            reused.unkept += 1
            return _read_step(path, display, root, None)
        try:
            steps[key] = _read_step(path, display, root, None)
        except ProblemsError as err:
            steps[key] = err
    found = steps[key]
    if isinstance(found, ProblemsError):
        raise ProblemsError(found.problems)
    return found


def _read_step(path: Path, display: str | None, root: str | None, text: str | None):
    src = load_mapping(path, display, text)
    target = src.data.get(EXTENDS)
    if target is None:
        return src, None
    if not isinstance(target, str) or not target:
        raise ProblemsError([src.problem((EXTENDS,), "must be the relative path of a base profile", "wrong-type")])
    if (why := bounds.path_problem(target)) is not None:
        raise ProblemsError([src.problem((EXTENDS,), f"{why}; name the base's relative path", "bad-path")])
    if bounds.resolved(path.parent / target) is None:
        message = f"{target!r}: its links loop; point extends at the base profile file itself"
        raise ProblemsError([src.problem((EXTENDS,), message, "link-loop")])
    if _confined(target, path, root) is None:
        message = (
            "a base must be a relative path inside this profile's directory, its git work tree or the --root given; "
            "absolute paths and paths that leave them are refused"
        )
        raise ProblemsError([src.problem((EXTENDS,), message, "base-outside")])
    base_path = path.parent / target
    if not base_path.is_file():
        message = f"base profile {target!r} not found (looked for {_display(base_path)})"
        raise ProblemsError([src.problem((EXTENDS,), message, "missing-base")])
    # Name the base as the user would: relative to the child's path as it was given.
    shown = os.path.normpath(os.path.join(os.path.dirname(display or str(path)), target))
    return src, (base_path, shown)


def overlaid(src: Source, over: Source) -> Source:
    """`over` (a --set) merged over a profile, or (a --default) the profile merged over it; the
    result keeps the profile's file as its own, and each value the file that set it."""
    top, bottom = (over, src) if over.file.startswith("--set") else (src, over)
    merged = _merge(bottom.data, top.data)
    out = _merge_positions(bottom, top, merged)
    out.file = src.file
    return out
