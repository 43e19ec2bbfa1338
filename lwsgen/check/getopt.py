"""tritonserver's command line as tritonserver reads it, without tritonserver: glibc's getopt_long
(posix/getopt.c, long options only: TritonParser::Parse passes an empty optstring) over the options
of src/command_line_parser.cc at the image's release (lwsgen/runtimes/options/tritonserver-RELEASE.json,
dumped by tools/engine_args/triton_options.py), then each value as Parse() reads it.

getopt_long: `--name` or `--name=value`; an exact name, else a unique prefix of one (two or more
prefixes of different options: ambiguous); a value after '=' for an option that takes none, or no
value (neither '=' nor a next word) for one that takes one, is refused; `--` ends the options; a
single-dash word is a short option, and there are none. Words that are not options are moved to
the end (GNU permutation) and the first of them is "Unexpected argument". Values: ParseOption<bool>
true/on/1/false/off/0 in any case; ParseOption<int>/<int64_t> (std::stoi/stoll: ASCII digits after
optional blanks and a sign, within the type's range); ParseOption<double> (std::stod);
ParseIntBoolOption true/false or an int; --help stops with the usage. The first refusal stops it,
as the ParseException does (said on one line: tritonserver prints 'Bad option: "--x".' and the
value's message on two). tests/test_getopt.py holds this to glibc's own getopt_long (ctypes).
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

_BOOLS = {"true", "on", "1", "false", "off", "0"}
_INTEGER = re.compile(r"^[ \t\n\v\f\r]*([+-]?[0-9]+)", re.ASCII)
_FLOAT = re.compile(r"^[ \t\n\v\f\r]*[+-]?([0-9]|\.[0-9]|inf|nan)", re.ASCII | re.IGNORECASE)
_RANGES = {"int": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _key(container: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", container)[:2])


@cache
def _tables() -> tuple[dict, ...]:
    directory = resources.files("lwsgen.runtimes").joinpath("options")
    found = [json.loads(p.read_text(encoding="utf-8")) for p in directory.iterdir() if p.name.endswith(".json")]
    return tuple(sorted(found, key=lambda t: _key(t["container"])))


def table_for(container: str | None) -> tuple[dict, bool]:
    """(table, exact): the image's release's own, else the newest not newer, else the oldest."""
    tables = _tables()
    for table in tables:
        if container and _key(table["container"]) == _key(container):
            return table, True
    older = [t for t in tables if container and _key(t["container"]) <= _key(container)]
    return (older[-1] if older else tables[-1] if not container else tables[0]), False


def _integer_problem(value: str, kind: str) -> str | None:
    match = _INTEGER.match(value)
    if not match:
        return f"Invalid option value. Got {value}"
    low, high = _RANGES[kind]
    if not low <= int(match[1]) <= high:
        return f"Provided option value is out of bound. Got {value}"
    return None


def value_problem(kind: str, value: str) -> str | None:
    """What Parse() says of a value read as kind (the table's "parse"), or None."""
    if kind == "boolean" and value.lower() not in _BOOLS:
        return f"invalid value for bool option: {value}"
    if kind in _RANGES:
        return _integer_problem(value, kind)
    if kind == "int-or-bool" and value.lower() not in ("true", "false"):
        return _integer_problem(value, "int")
    if kind == "double" and not _FLOAT.match(value):
        return f"Invalid option value. Got {value}"
    return None


def _match(token: str, options: dict) -> tuple[str | None, str | None]:
    """(option name, None) or (None, getopt_long's complaint) for a --token (without '=value')."""
    name = token[2:]
    if name in options:
        return name, None
    candidates = [o for o in options if o.startswith(name)]
    if len(candidates) == 1:
        return candidates[0], None
    if candidates:
        possible = " ".join(f"'--{c}'" for c in sorted(candidates))
        return None, f"option '{token}' is ambiguous; possibilities: {possible}"
    return None, f"unrecognized option '{token}'"


def _option_problem(argv: list[str], i: int, options: dict, prefix: str) -> tuple[int, str | None]:
    """Read the option at argv[i]: (index after it and its value, the problem or None)."""
    word = argv[i]
    if not word.startswith("--"):
        return i + 1, f"{prefix}invalid option -- '{word[1]}'"
    head, equals, value = word.partition("=")
    name, complaint = _match(head, options)
    if complaint:
        return i + 1, prefix + (complaint if not equals else complaint.replace(f"'{head}'", f"'{word}'", 1))
    option = options[name]
    if equals and not option["takes_value"]:
        return i + 1, f"{prefix}option '--{name}' doesn't allow an argument"
    if option["takes_value"] and not equals:
        if i + 1 >= len(argv):
            return i + 1, f"{prefix}option '--{name}' requires an argument"
        value, i = argv[i + 1], i + 1
    if option["parse"] == "help":
        return i + 1, "--help: tritonserver prints its usage and exits 1"
    message = value_problem(option["parse"], value) if option["takes_value"] else None
    return i + 1, f"Bad option --{name}: {message}" if message else None


def problems(argv: list[str], container: str | None) -> list[tuple[int, str]]:
    """(index into argv, message) of what tritonserver refuses in its arguments argv (without the
    program name): the first refusal, as tritonserver stops at it; [] if it takes them all."""
    table, exact = table_for(container)
    options = table["options"]
    prefix = "tritonserver: "
    leftover: int | None = None
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest = i + 1
            if leftover is None and rest < len(argv):
                leftover = rest
            break
        if not word.startswith("-") or word == "-":
            leftover = i if leftover is None else leftover
            i += 1
            continue
        after, problem = _option_problem(argv, i, options, prefix)
        if problem:
            return [(i, problem)]
        i = after
    if leftover is not None:
        return [(leftover, f"Unexpected argument: {argv[leftover]}")]
    return []
