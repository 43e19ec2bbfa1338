"""Profile inheritance: `extends: <relative path>` deep-merges a profile over its base.

Maps merge key by key; lists and scalars in the child replace the base's. Chains are followed,
a cycle is an error naming the files, and every value keeps the position in the file that set it,
so a problem points into the base or the overlay, wherever the offending value was written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def _under(path: PathKey, prefix: PathKey) -> bool:
    return path[: len(prefix)] == prefix


def _replaced(child: Any, path: PathKey = ()) -> set[PathKey]:
    """Paths whose whole subtree the child sets (lists and scalars replace; maps recurse)."""
    if isinstance(child, dict):
        return {p for key, value in child.items() for p in _replaced(value, path + (key,))}
    return {path}


def _merge_positions(base: Source, child: Source, merged: Any) -> Source:
    out = Source(child.file, merged)
    replaced = _replaced(child.data)
    for table, base_table, child_table in (
        (out.values_at, base.values_at, child.values_at),
        (out.keys_at, base.keys_at, child.keys_at),
    ):
        for path, position in base_table.items():
            if not any(_under(path, r) for r in replaced):
                table[path] = position
        table.update(child_table)
    for path in base.values_at:
        if not any(_under(path, r) for r in replaced):
            out.files_at[path] = base.file_of(path)
    for path in child.values_at:
        out.files_at[path] = child.file_of(path)
    return out


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


MAX_DEPTH = 32  # bases in one chain


def work_tree(path: Path) -> Path | None:
    """The git work tree holding path (the nearest directory above it with a .git), if any."""
    for directory in path.resolve().parents:
        if (directory / ".git").exists():
            return directory
    return None


def _confined(target: str, child: Path, root: str | None = None) -> Path | None:
    """The base a child names, if it stays inside the child's directory tree, its git work tree, or
    the root the command line names (--root: an Argo CD checkout may carry no .git)."""
    if os.path.isabs(target):
        return None
    base = (child.parent / target).resolve()
    roots = [child.resolve().parent, *filter(None, [work_tree(child)])]
    if root is not None:
        roots.append(Path(root).resolve())
    return base if any(base.is_relative_to(r) for r in roots) else None


def load(
    path: Path,
    display: str | None = None,
    chain: tuple[Path, ...] = (),
    root: str | None = None,
    text: str | None = None,
) -> Source:
    """A profile with every base it extends merged under it; the result has no `extends`. `text`:
    the profile's content when it was not read from `path` (standard input)."""
    resolved = path.resolve()
    if len(chain) > MAX_DEPTH:
        raise ProblemsError(
            [
                Problem(
                    display or str(path),
                    1,
                    1,
                    EXTENDS,
                    (f"more than {MAX_DEPTH} bases in one extends chain; flatten it"),
                    "extends-too-deep",
                )
            ]
        )
    if resolved in chain:
        names = " -> ".join(_display(p) for p in (*chain, resolved))
        raise ProblemsError([Problem(display or str(path), 1, 1, EXTENDS, f"extends cycle: {names}", "extends-cycle")])
    src = load_mapping(path, display, text)
    target = src.data.get(EXTENDS)
    if target is None:
        return src
    if not isinstance(target, str) or not target:
        raise ProblemsError([src.problem((EXTENDS,), "must be the relative path of a base profile", "wrong-type")])
    if _confined(target, path, root) is None:
        raise ProblemsError(
            [
                src.problem(
                    (EXTENDS,),
                    (
                        "a base must be a relative path inside this profile's directory, its git work tree or "
                        "the --root given; absolute paths and paths that leave them are refused"
                    ),
                    "base-outside",
                )
            ]
        )
    base_path = path.parent / target
    if not base_path.is_file():
        raise ProblemsError(
            [
                src.problem(
                    (EXTENDS,), f"base profile {target!r} not found (looked for {_display(base_path)})", "missing-base"
                )
            ]
        )
    # Name the base as the user would: relative to the child's path as it was given.
    shown = os.path.normpath(os.path.join(os.path.dirname(display or str(path)), target))
    base = load(base_path, shown, (*chain, resolved), root)
    child_data = {k: v for k, v in src.data.items() if k != EXTENDS}
    merged = _merge({k: v for k, v in base.data.items() if k != BASE}, child_data)
    return _merge_positions(base, Source(src.file, child_data, src.values_at, src.keys_at, src.files_at), merged)


def overlaid(src: Source, over: Source) -> Source:
    """`over` (a --set) merged over a profile, or (a --default) the profile merged over it; the
    result keeps the profile's file as its own, and each value the file that set it."""
    top, bottom = (over, src) if over.file.startswith("--set") else (src, over)
    merged = _merge(bottom.data, top.data)
    out = _merge_positions(bottom, top, merged)
    out.file = src.file
    return out
