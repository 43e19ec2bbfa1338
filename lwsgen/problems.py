"""One problem type for every stage, and pure formatters for it."""

import json
from collections.abc import Callable

from lwsgen.records import Record

ERROR, WARNING = "error", "warning"

# What must not reach a terminal or a log raw: C0 controls (newline and tab included: a message is
# one line), DEL, C1 controls and the Unicode line separators. Shown as Python escapes (\x1b, \n).
_CONTROL = {
    code: chr(code).encode("unicode_escape").decode("ascii")
    for code in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)
}


def printable(text: str) -> str:
    return text.translate(_CONTROL)


class Problem(Record):
    """Something wrong with an input, at a position (1-based line and column; 0 = unknown).
    A warning is valid input said out loud; --strict makes warnings errors."""

    file: str
    line: int
    col: int
    path: str
    message: str
    code: str = "invalid"
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def text(self) -> str:
        where = f"{printable(self.file)}:{self.line}:{self.col}"
        message = printable(self.message if self.is_error else f"{self.severity}: {self.message}")
        return f"{where}: {printable(self.path)}: {message}" if self.path else f"{where}: {message}"


class Finding(Record):
    """What a rule found, before it is placed in a file: the field path it is at (a profile's or a
    rendered object's), what is wrong and what to do, its code and severity. at_key: point at the key
    itself (an unknown field), not at its value. A stage places it (Source.problem, output/locate.py)."""

    path: tuple
    message: str
    code: str = "invalid"
    severity: str = ERROR
    at_key: bool = False


NOTICE = "notice"  # said, and left alone by --strict (a GitHub annotation level too)


class ProblemsError(Exception):
    """Raised by a stage that found problems; the CLI formats them and exits 1."""

    def __init__(self, problems: list[Problem]):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = sorted(problems)


def format_text(problems: list[Problem]) -> str:
    return "".join(p.text() + "\n" for p in sorted(problems))


def format_json(problems: list[Problem]) -> str:
    rows = [
        {
            "file": printable(p.file),
            "line": p.line,
            "column": p.col,
            "path": printable(p.path),
            "message": printable(p.message),
            "code": p.code,
            "severity": p.severity,
        }
        for p in sorted(problems)
    ]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def _escape_data(value: str) -> str:
    return printable(value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def format_github(problems: list[Problem]) -> str:
    lines = []
    for p in sorted(problems):
        props = f"file={_escape_property(p.file)},line={p.line},col={p.col}"
        message = f"{p.path}: {p.message}" if p.path else p.message
        lines.append(f"::{p.severity} {props}::{_escape_data(message)}\n")
    return "".join(lines)


FORMATTERS: dict[str, Callable[[list[Problem]], str]] = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
}
