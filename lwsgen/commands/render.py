"""`lwsgen render`'s work before anything is printed or written: which files are profiles, and every
profile through the pipeline (batch.py), with the problems of the set."""

import hashlib
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


class Collisions:
    """What a batch remembers of each profile to find two that collide, and nothing else (so a
    streamed batch keeps no profile's result): the names, and each object's owner and digest.
    Problems are said at the later profile, in input order, after the profiles' own."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.sources: list[str] = []  # of the profiles added, in order
        # the object's (namespace, kind, name) -> its first writer's index and digest, each as
        # 16 bytes of BLAKE2b: ~2 kB a profile where the strings themselves took ~9
        self.owners: dict[bytes, tuple[int, bytes]] = {}
        self.duplicate_names: list[Problem] = []
        self.shared_objects: list[Problem] = []

    def add(self, result: Rendered) -> None:
        self._name(result)
        self._objects(result)

    def problems(self) -> list[Problem]:
        return self.duplicate_names + self.shared_objects

    def _name(self, result: Rendered) -> None:
        """Two profiles of one batch with one name would write one directory: an error at the second's name."""
        name = result.name
        if name in self.names:
            file, line, col = result.name_at
            message = f"{name!r} is also the name of {self.names[name]}; both would write the same directory"
            self.duplicate_names.append(Problem(file, line, col, "name", message, "duplicate-name"))
        self.names.setdefault(name, result.source)

    def _objects(self, result: Rendered) -> None:
        """Two profiles of one batch that write one object differently (a kind and name in one
        namespace, say an added ConfigMap named like another deployment's launch scripts): whichever
        applies last replaces the other's. An error at the second profile's name."""
        index = len(self.sources)
        self.sources.append(result.source)
        for namespace, kind, name, digest in result.identities:
            key, written = _short_digest(f"{namespace}\0{kind}\0{name}"), _short_digest(digest)
            first = self.owners.setdefault(key, (index, written))
            if first[0] != index and first[1] != written:
                file_, line, col = result.name_at
                message = (
                    f"writes {kind} {name} in namespace {namespace}, which {self.sources[first[0]]} writes "
                    "differently; rename one"
                )
                self.shared_objects.append(Problem(file_, line, col, "name", message, "shared-object"))
                break


def _short_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def render_all(
    profiles: list[tuple[Path, str]], out_root: str, given: Given = NOTHING, sink: Callable | None = None
) -> tuple[list[Rendered], list[Problem]]:
    """The rendered profiles, and every problem and warning (a name two profiles share included).
    With `sink`, each result is handed to it as it comes and not kept (--stdout spools the stream:
    memory grows only by the names and digests Collisions holds, ~2 kB a profile)."""
    results, problems = [], []
    collisions = Collisions()
    for outcome in batch.render_all(profiles, out_root, given):
        problems += outcome.problems
        if outcome.result is not None:
            collisions.add(outcome.result)
            problems += outcome.result.warnings
            if sink is not None:
                sink(outcome.result)
            else:
                results.append(outcome.result)
    return results, problems + collisions.problems()
