"""Which files of a tree are profiles, for `render DIR` and `validate DIR`.

A named file is always taken as given. Walking a directory, lwsgen reads the *.yaml and *.yml files
that are profiles: a top-level `runtime:` or `extends:` key and no top-level `kind:` (Kubernetes
objects and kustomizations have one). It skips dot directories and dot files (.git, .github,
.pre-commit-config.yaml), and the output root being written. Every complete profile renders,
whether other profiles extend it or not: a file that is only a base says so (`base: true`), is
skipped by the walk and checked by `validate` as a partial profile
(schemas/profile-partial.schema.json is the schema editors use for it and for overlays).
"""

import re
from pathlib import Path

from lwsgen import bounds
from lwsgen.load.inherit import work_tree
from lwsgen.load.source import load_file
from lwsgen.problems import Problem, ProblemsError

YAML_SUFFIXES = (".yaml", ".yml")
_PROFILE_KEY = re.compile(rb"^(runtime|extends)\s*:", re.M)
_KIND_KEY = re.compile(rb"^kind\s*:", re.M)


def walk(root: Path, skip: Path | None = None) -> list[Path]:
    """The YAML files under root, in order, outside dot directories and the skipped tree. A file
    whose links loop, or lead out of root and its git work tree, is a ProblemsError: a walk reads
    only what the tree holds."""

    skipped = bounds.resolved(skip) if skip is not None else None
    roots = [r for r in (bounds.resolved(root), work_tree(root)) if r is not None]
    resolve = bounds.Resolver()
    found, problems = [], []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).parts
        if any(part.startswith(".") for part in relative) or path.suffix not in YAML_SUFFIXES:
            continue
        real = resolve(path)
        if real is None:
            problems.append(_refused(path, "its links loop; remove the link or point it at a file"))
            continue
        if skipped is not None and real.is_relative_to(skipped):
            continue
        if not any(real.is_relative_to(r) for r in roots):
            problems.append(_refused(path, f"links out of {root}; a directory's profiles are files inside it"))
        elif path.is_file():
            found.append(path)
        if len(found) > bounds.MAX_FILES:
            message = f"holds more than {bounds.MAX_FILES} YAML files; one command reads at most that many: split it"
            raise ProblemsError([_refused(root, message)])
    if problems:
        raise ProblemsError(problems)
    return found


def _refused(path: Path, message: str):
    return Problem(str(path), 0, 0, "", message, "link-outside")


def _head(path: Path) -> bytes | None:
    """The first 64 KiB (enough to tell what a file is), or None if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(65536)
    except OSError:
        return None


def looks_like_profile(path: Path) -> bool:
    """A top-level runtime: or extends: key, and no kind:."""
    head = _head(path)
    if head is None:
        return True  # unreadable: let the pipeline say so
    return bool(_PROFILE_KEY.search(head)) and not _KIND_KEY.search(head)


def is_base_only(path: Path) -> bool:
    """The file says it is only a base: a top-level `base: true`, read as the loader reads it (any
    YAML spelling of the key and the boolean; never a line inside a string). A file that does not
    load is not a base: the pipeline reports what is wrong with it."""

    try:
        if b"base" not in (_head(path) or b"") and path.stat().st_size <= 65536:
            return False  # the word is nowhere: no need to parse
        data = load_file(path).data
    except (ProblemsError, OSError):
        return False
    return isinstance(data, dict) and data.get("base") is True


def profiles(paths: list[str], out_root: Path | None = None) -> tuple[list[tuple[Path, str]], set[Path]]:
    """(profile, as shown) for named files and the profiles found under named directories, except
    those that say they are only bases; and the resolved paths of those bases."""
    named, walked = [], []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            walked += [(p, str(p)) for p in walk(path, out_root) if looks_like_profile(p)]
        else:
            named.append((path, raw))

    resolve = bounds.Resolver()
    bases = {resolve(path) for path, _ in walked if is_base_only(path)}
    return named + [(path, shown) for path, shown in walked if resolve(path) not in bases], bases
