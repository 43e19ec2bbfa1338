"""`lwsgen render`'s work before anything is printed or written: which files are profiles, and every
profile through the pipeline (batch.py), with the problems of the set."""

from pathlib import Path

from lwsgen import batch
from lwsgen.commands import discover
from lwsgen.load.given import NOTHING, STDIN, STDIN_SHOWN, Given
from lwsgen.pipeline import Rendered
from lwsgen.problems import Problem


def profile_paths(paths: list[str], out_root: str | None = None) -> list[tuple[Path, str]]:
    """Profiles named on the command line, and the profiles under a named directory except the bases
    other profiles there extend (commands/discover.py); nothing under the output root."""
    found = discover.profiles(paths, Path(out_root) if out_root else None)[0]
    return [(path, STDIN_SHOWN if shown == STDIN else shown) for path, shown in found]


def duplicate_names(results: list[Rendered]) -> list[Problem]:
    """Two profiles of one batch with one name would write one directory: an error at the second's name."""
    seen: dict[str, str] = {}
    problems = []
    for result in results:
        name = result.name
        if name in seen:
            file, line, col = result.name_at
            message = f"{name!r} is also the name of {seen[name]}; both would write the same directory"
            problems.append(Problem(file, line, col, "name", message, "duplicate-name"))
        seen.setdefault(name, result.source)
    return problems


def render_all(
    profiles: list[tuple[Path, str]], out_root: str, given: Given = NOTHING
) -> tuple[list[Rendered], list[Problem]]:
    """The rendered profiles, and every problem and warning (a name two profiles share included)."""
    results, problems = [], []
    for outcome in batch.render_all(profiles, out_root, given):
        problems += outcome.problems
        if outcome.result is not None:
            results.append(outcome.result)
            problems += outcome.result.warnings
    return results, problems + duplicate_names(results) + shared_objects(results)


def shared_objects(results: list[Rendered]) -> list[Problem]:
    """Two profiles of one batch that write one object differently (a kind and name in one
    namespace, say an added ConfigMap named like another deployment's launch scripts): whichever
    applies last replaces the other's. An error at the second profile's name."""
    owner: dict[tuple, tuple[Rendered, str, int]] = {}
    problems = []
    for result in results:
        for namespace, kind, name, file, index in result.identities:
            first = owner.setdefault((namespace, kind, name), (result, file, index))
            if first[0] is not result and _object(*first) != _object(result, file, index):
                file_, line, col = result.name_at
                message = (
                    f"writes {kind} {name} in namespace {namespace}, which {first[0].source} writes differently; "
                    "rename one"
                )
                problems.append(Problem(file_, line, col, "name", message, "shared-object"))
                break
    return problems


def _object(result: Rendered, file: str, index: int):
    """The object as two profiles may share it: their labels and annotations (which profile wrote
    it) aside, so two deployments may mount one model claim (storage.create on both)."""
    import yaml

    obj = [d for d in yaml.safe_load_all(result.files[file]) if d is not None][index]
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("labels", "annotations")}
    return {**obj, "metadata": meta}
