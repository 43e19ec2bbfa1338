"""`lwsgen render`'s work before anything is printed or written: which files are profiles, and every
profile through the pipeline (batch.py), with the problems of the set."""

from collections.abc import Callable
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
    profiles: list[tuple[Path, str]], out_root: str, given: Given = NOTHING, sink: Callable | None = None
) -> tuple[list[Rendered], list[Problem]]:
    """The rendered profiles, and every problem and warning (a name two profiles share included).
    With `sink`, each result is handed to it as it comes and kept without its files (--stdout
    spools the stream: memory stays flat however many profiles)."""
    results, problems = [], []
    for outcome in batch.render_all(profiles, out_root, given):
        problems += outcome.problems
        if outcome.result is not None:
            result = outcome.result
            if sink is not None:
                sink(result)
                result = result._replace(files={})
            results.append(result)
            problems += result.warnings
    return results, problems + duplicate_names(results) + shared_objects(results)


def shared_objects(results: list[Rendered]) -> list[Problem]:
    """Two profiles of one batch that write one object differently (a kind and name in one
    namespace, say an added ConfigMap named like another deployment's launch scripts): whichever
    applies last replaces the other's. An error at the second profile's name."""
    owner: dict[tuple, tuple[Rendered, str]] = {}
    problems = []
    for result in results:
        for namespace, kind, name, digest in result.identities:
            first = owner.setdefault((namespace, kind, name), (result, digest))
            if first[0] is not result and first[1] != digest:
                file_, line, col = result.name_at
                message = (
                    f"writes {kind} {name} in namespace {namespace}, which {first[0].source} writes differently; "
                    "rename one"
                )
                problems.append(Problem(file_, line, col, "name", message, "shared-object"))
                break
    return problems
