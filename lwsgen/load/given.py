"""What the command line adds to a profile: `--set PATH=VALUE` over it, `--default PATH=VALUE`
under it (where no file of the profile sets the field), a profile read from standard input
(`render -`), and the root `extends` may reach (`--root`).

A value is one YAML scalar or flow collection (`4`, `true`, `'4'`, `[a, b]`, `{key: v}`), parsed as
a profile file is, so `--set replicas=four` is refused exactly as `replicas: four` would be, at a
position that names the flag: `--set:2:10` is the second --set, its value's first character. In a
PATH, `.` separates keys and `\\.` is a dot inside one (`labels.team\\.example\\.com/owner=ml`).
"""

from __future__ import annotations

import re

from lwsgen.load.source import Source, load_text
from lwsgen.problems import Problem, ProblemsError
from lwsgen.records import Record

STDIN = "-"
STDIN_SHOWN = "<stdin>"
_SEGMENT = re.compile(r"(?:\\.|[^.\\])+")
_KEY = re.compile(r"^[A-Za-z0-9_][-A-Za-z0-9_./]*$")
REFUSED = ("extends", "base")  # the file's own statements, never the command line's
MAX_DEPTH = 16  # keys in a PATH: the deepest profile field is far shallower


class Given(Record):
    """Everything a render takes besides the profile files (picklable: sent to batch workers)."""

    root: str | None = None  # a directory extends may reach besides the profile's own tree and git work tree
    stdin: bytes | None = None  # what `render -` read from standard input
    sets: tuple[tuple[str, str], ...] = ()  # (flag, PATH=VALUE) in command-line order
    defaults: tuple[tuple[str, str], ...] = ()


NOTHING = Given()


def _path(text: str) -> tuple[str, ...]:
    segments = tuple(s.replace("\\.", ".") for s in _SEGMENT.findall(text))
    if ".".join(s.replace(".", "\\.") for s in segments) != text or not all(_KEY.match(s) for s in segments):
        return ()
    return segments


def _one(flag: str, index: int, assignment: str) -> Source:
    """One --set or --default as a Source of its own, positioned at the flag."""
    key, sep, value = assignment.partition("=")
    path = _path(key) if sep else ()
    if len(path) > MAX_DEPTH:
        message = f"a field path of more than {MAX_DEPTH} keys; no profile field is that deep"
        raise ProblemsError([Problem(flag, index, 1, "", message, "too-deep")])
    if not path:
        message = "must be PATH=VALUE (a dotted field path of the profile, e.g. autoscaling.maxReplicas=4)"
        raise ProblemsError([Problem(flag, index, 1, "", message, "bad-assignment")])
    if path[0] in REFUSED:
        raise ProblemsError(
            [Problem(flag, index, 1, ".".join(path), "is the file's to say; set it there", "not-settable")]
        )
    column = len(key) + 2
    try:
        parsed = load_text(value, flag)
    except ProblemsError as err:
        problem = err.problems[0]
        raise ProblemsError([problem._replace(line=index, col=column, path=".".join(path))]) from None
    data: object = parsed.data if value.strip() else ""
    for segment in reversed(path):
        data = {segment: data}
    src = Source(flag, data)
    for depth in range(1, len(path) + 1):
        src.keys_at[path[:depth]] = (index, 1)
        src.values_at[path[:depth]] = (index, column)
        src.files_at[path[:depth]] = flag
    for sub, (line, col) in parsed.values_at.items():  # inside a flow value: columns from the value's start
        src.values_at[path + sub] = (index, column + col - 1) if line == 1 else (index, column)
        src.files_at[path + sub] = flag
    return src


def sources(given: Given) -> tuple[list[Source], list[Source]]:
    """The --set and --default assignments as Sources: (over the profile, under it)."""
    problems, over, under = [], [], []
    for assignments, into in ((given.sets, over), (given.defaults, under)):
        counts: dict[str, int] = {}
        for flag, assignment in assignments:
            counts[flag] = counts.get(flag, 0) + 1
            try:
                into.append(_one(flag, counts[flag], assignment))
            except ProblemsError as err:
                problems += err.problems
    if problems:
        raise ProblemsError(problems)
    return over, under
