"""Engine command lines against the engines' own flag tables, without the engines.

The tables (lwsgen/runtimes/flags/ENGINE-VERSION.json) are dumped from the real parsers at pinned
releases by tools/engine_args/dump_flags.py: every option string the parser registers, whether it
takes a value (nargs), its choices and converter, plus the parser's allow_abbrev and, for vLLM, what
FlexibleArgumentParser.parse_args rewrites before argparse sees the argv.

argv_problems() finds every token that the real parser would reject or read as something else: an
unknown option, an abbreviation (argparse's allow_abbrev: a unique prefix is silently expanded to
the flag it starts, two or more make an "ambiguous option" error), a value given with '=' to a flag
that takes none, a flag without the value it needs, a value outside the flag's choices or not an
int/float where the flag converts to one, and a word no flag takes. It mirrors CPython 3.11's
Lib/argparse.py (3.11.7, the Python of the venvs the tables come from; later releases changed
details of option matching): ArgumentParser._parse_known_args (each token classified 'O' or 'A' by
_parse_optional before any is consumed, '--' ending the options), _parse_optional and
_get_option_tuples (exact match, then 'flag=value', then prefixes: for '--x' only when allow_abbrev,
for '-x' always, with '-xVALUE' when '-x' is a flag), consume_optional (explicit '=' values,
single-dash flags run together), _match_argument / _get_nargs_pattern (how many tokens a flag's
nargs takes) and _match_arguments_partial (positionals). Converters other than int, float and str
are not run, nor are the checks an engine makes after parsing; a missing required flag is not a
token, so it is not reported (argv may be a fragment, such as model.extraArgs).

argv is what the parser is given: for vLLM what follows `vllm serve` (its first token the model),
for SGLang what follows `python3 -m sglang.launch_server`.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

_FILE = re.compile(r"^(?P<engine>[a-z0-9_]+)-(?P<version>.+)\.json$")
_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")
# argparse's _negative_number_matcher
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _version_key(version: str) -> tuple:
    """A sort key for the engines' PEP 440 versions (0.5.23, 0.4.10.post2, 0.11.0rc1), stdlib only."""
    match = _VERSION.match(version.strip().lower())
    if not match:
        return ((-1,), version)
    release, pre, pre_n, post, dev = match.groups()
    numbers = tuple(int(n) for n in release.split("."))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers = numbers[:-1]
    # dev < a < b < rc < final < post
    stage = {"a": 1, "b": 2, "rc": 3}.get(pre or "", 4 if dev is None or pre else 0)
    return (numbers, stage, int(pre_n or 0), int(post or -1), int(dev) if dev is not None else 1 << 30)


def _directory():
    return resources.files("lwsgen.runtimes").joinpath("flags")


@cache
def _index() -> dict[str, dict[str, str]]:
    """engine -> {version: file name}."""
    out: dict[str, dict[str, str]] = {}
    for entry in _directory().iterdir():
        match = _FILE.match(entry.name)
        if match:
            out.setdefault(match["engine"], {})[match["version"]] = entry.name
    return out


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads(_directory().joinpath(name).read_text(encoding="utf-8"))


def known_versions(engine: str) -> list[str]:
    """The versions of the engine a table was dumped for, oldest first."""
    return sorted(_index().get(engine, {}), key=_version_key)


def table_for(engine: str, version: str | None) -> tuple[dict[str, Any], bool] | None:
    """(table, exact): the version's own table, else the newest one not newer than it (the oldest if
    all are newer; the newest if version is None), exact False; None if the engine has none."""
    versions = known_versions(engine)
    if not versions:
        return None
    files = _index()[engine]
    if version in files:
        return _load(files[version]), True
    if version is None:
        return _load(files[versions[-1]]), False
    key = _version_key(version)
    older = [v for v in versions if _version_key(v) <= key]
    return _load(files[older[-1] if older else versions[0]]), False


def neighbours(engine: str, version: str) -> list[str]:
    """For a version without a table: the versions of the tables on either side of it (one at either
    end of the range)."""
    key = _version_key(version)
    versions = known_versions(engine)
    older = [v for v in versions if _version_key(v) < key]
    newer = [v for v in versions if _version_key(v) > key]
    return [*older[-1:], *newer[:1]]


def argv_problems_at(engine: str, version: str | None, argv: list[str]) -> list[tuple[int, str]]:
    """argv_problems by the version's own table, or argv_problems_between for a version without one."""
    found = table_for(engine, version)
    if found is None or found[1] or version is None:
        return argv_problems(engine, version, argv)
    return argv_problems_between(engine, version, argv)


def argv_problems_between(engine: str, version: str, argv: list[str]) -> list[tuple[int, str]]:
    """argv_problems for a version without its own table: between two tables, only what both find
    about one flag (a flag the releases before and after both lack, or both read as another, is
    most likely not one of this release either; one only one of them lacks may be), said with the
    older one's message. A post-release of a table's release (0.8.5.post1), and a version beyond
    the newest or before the oldest table: what the nearest one finds."""
    sides = neighbours(engine, version)
    if len(sides) < 2 or _version_key(sides[0])[0] == _version_key(version)[0]:
        return argv_problems(engine, version, argv)
    older, newer = sides
    found_newer = [index for index, _ in argv_problems(engine, newer, argv)]
    note = f" (nor of {engine} {newer}; {version} has no table of its own)"
    return [
        (index, message + note)
        for index, message in argv_problems(engine, older, argv)
        if any(_same_flag(argv, index, other) for other in found_newer)
    ]


def _same_flag(argv: list[str], one: int, other: int) -> bool:
    """Whether two findings are about one flag: the same token, or one within the other's flag and
    the words after it (0.8.5 finds an unknown --x that takes 'yes' with it, 0.33.0 'yes' left over)."""

    def span(index: int) -> range:
        end = index + 1
        while end < len(argv) and not argv[end].startswith("-"):
            end += 1
        return range(index, end)

    return one in span(other) or other in span(one)


def _without_config(args: list[tuple[str, int]], problems: list, name: str) -> list[tuple[str, int]]:
    """_pull_args_from_config (0.8.5 and 0.33.0 alike): the file's options take the place of
    --config FILE (not known here); more than one --config, none after it, or a file not named
    .yaml/.yml (load_config_file: vllm/utils.py@v0.8.5, vllm/utils/argparse_utils.py@v0.33.0) fails."""
    tokens = [t for t, _ in args]
    if "--config" not in tokens:
        return args
    i = tokens.index("--config")
    if tokens.count("--config") > 1:
        problems.append((args[i][1], f"--config more than once: {name}'s parser fails on it (AssertionError)"))
    if i == len(args) - 1:
        problems.append((args[i][1], f"--config needs a file: {name}'s parser fails on it (No config file)"))
        return args[:i]
    path, origin = args[i + 1]
    if path.split(".")[-1] not in ("yaml", "yml"):  # load_config_file's first check
        message = f"--config {path}: {name}'s parser reads only a .yaml or .yml file (ValueError)"
        problems.append((origin, message))
    return args[:i] + args[i + 2 :]


def _vllm_rewrite_0_8(argv: list[str], problems: list, name: str) -> list[tuple[str, int]]:
    """The tokens argparse gets from `vllm serve ARGV` by FlexibleArgumentParser.parse_args of
    vllm/utils.py at v0.8.5: the token --model raises (--model=X goes on to argparse, where
    EngineArgs has --model); --config FILE gives way to the file's options; '_' becomes '-' in the
    whole key of a --key or --key=value. Nothing else: its -O branch (`len(arg) == 2` and not
    '-O') never matches, so argparse reads -O3 itself."""
    for index, token in enumerate(argv):
        if token == "--model":
            message = f"--model with `vllm serve`: {name}'s parser refuses it"
            problems.append((index, message + " (ValueError: provide the model as a positional argument)"))
    out = []
    for token, origin in _without_config([(t, i) for i, t in enumerate(argv)], problems, name):
        if token.startswith("--"):
            key, equals, value = token.partition("=")
            token = "--" + key[2:].replace("_", "-") + equals + value
        out.append((token, origin))
    return out


def _vllm_rewrite(argv: list[str], problems: list, name: str) -> list[tuple[str, int]]:
    """The tokens argparse gets from `vllm serve ARGV` (vllm/utils/argparse_utils.py, 0.33.0), each
    with the index of the argv token it comes from; rewrites that raise add problems."""
    args = [(token, index) for index, token in enumerate(argv)]
    # --model VALUE / --model=VALUE move to the front as the positional model
    for i, (token, origin) in enumerate(args):
        if re.match(r"^--model(=.+|$)", token):
            if token == "--model":
                if i + 1 >= len(args):
                    problems.append((origin, f"--model needs a value: {name}'s parser fails on it (IndexError)"))
                    del args[i]
                    break
                model, rest = args[i + 1], i + 2
            else:
                model, rest = (token.removeprefix("--model="), origin), i + 1
            args = [model, *args[:i], *args[rest:]]
            break
    tokens = [t for t, _ in args]
    if (
        args
        and tokens[0].startswith("-")
        and not any(re.match(r"^--config(=.+|$)", t) for t in tokens)
        and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", t) for t in tokens)
    ):
        at = next(o for t, o in args if re.match(r"^--served[-_]model[-_]name(=.+|$)", t))
        message = f"--served-model-name without the model as the first argument: {name}'s parser refuses it"
        problems.append((at, message + " (ValueError: `model` should be provided as the first positional argument)"))
    args = _without_config(args, problems, name)
    # underscores to dashes in --names (up to the first '.'), -O shorthands
    key_part = re.compile(r"(?<=--)[^\.]*")

    def dashes(text: str) -> str:
        return key_part.sub(lambda m: m.group(0).replace("_", "-"), text, count=1)

    processed: list[tuple[str, int]] = []
    for i, (token, origin) in enumerate(args):
        if token.startswith("--help="):
            processed.append(("--help", origin))
        elif token.startswith("--"):
            if "=" in token:
                key, value = token.split("=", 1)
                processed.append((dashes(key) + "=" + value, origin))
            else:
                processed.append((dashes(token), origin))
        elif token.startswith("-O") and token != "-O":
            level = token[3:] if token[2] == "=" else token[2:]
            processed += [("--optimization-level", origin), (level, origin)]
        elif token == "-O" and i + 1 < len(args) and args[i + 1][0] in {"0", "1", "2", "3"}:
            processed.append(("--optimization-level", origin))
        else:
            processed.append((token, origin))
    # dotted keys (--json-arg.key VALUE, --json-arg.key=VALUE, --json-arg.key+ a,b): merged into one
    # --json-arg JSON appended at the end. Every token starting with '-' that has a '.' is one, a
    # negative decimal too.
    delete: set[int] = set()
    dotted: dict[str, int] = {}
    for i, (token, origin) in enumerate(processed):
        if i in delete:
            continue
        if token.startswith("--") and "." not in token:
            continue
        if token.startswith("-") and "." in token:
            if "=" in token:
                token = token.split("=", 1)[0]
                if "." not in token:
                    continue
            else:
                if i + 1 >= len(processed):
                    problems.append((origin, f"{token} needs a value: {name}'s parser fails on it (IndexError)"))
                    delete.add(i)
                    continue
                delete.add(i + 1)
            key = token.removesuffix("+").split(".")[0]
            if not key.startswith("--"):
                message = (
                    f"{name}'s parser reads {argv[origin]!r} as the dotted key {token!r} (every token "
                    "starting with '-' that has a '.'), taking the next token as its value; as a value write "
                    f"--flag={argv[origin]}"
                )
                problems.append((origin, message))
            dotted.setdefault(key, origin)
            delete.add(i)
    out = [pair for i, pair in enumerate(processed) if i not in delete]
    for key, origin in dotted.items():
        out += [(key, origin), ("{}", origin)]  # a JSON object: always an argument to argparse
    return out


# The rewrite mirror of each table's FlexibleArgumentParser.parse_args (its recorded probes hold it:
# tests/test_engine_flags.py); the others (vLLM 0.33.0, Aphrodite 0.20.0's copy) are _vllm_rewrite.
_REWRITES = {("vllm", "0.8.5"): _vllm_rewrite_0_8}


def _rewrite_of(table: dict[str, Any]):
    return _REWRITES.get((table["engine"], table["version"]), _vllm_rewrite)


# ---- argparse (CPython 3.11.7 Lib/argparse.py) -----------------------------------------------------


def _nargs_pattern(nargs, optional: bool) -> str:
    """ArgumentParser._get_nargs_pattern."""
    if nargs is None:
        pattern = "(-*A-*)"
    elif nargs == "?":
        pattern = "(-*A?-*)"
    elif nargs == "*":
        pattern = "(-*[A-]*)"
    elif nargs == "+":
        pattern = "(-*A[A-]*)"
    elif nargs == "...":  # REMAINDER
        pattern = "([-AO]*)"
    elif nargs == "A...":  # PARSER
        pattern = "(-*A[-AO]*)"
    elif nargs == "==SUPPRESS==":
        pattern = "(-*-*)"
    else:
        pattern = "(-*" + "-*".join("A" * int(nargs)) + "-*)"
    if optional:  # an optional's arguments never include '--'
        pattern = pattern.replace("-*", "").replace("-", "")
    return pattern


def _nargs_error(nargs) -> str:
    """ArgumentParser._match_argument's messages."""
    fixed = {None: "expected one argument", "?": "expected at most one argument", "+": "expected at least one argument"}
    if nargs in fixed:
        return fixed[nargs]
    return f"expected {nargs} argument" + ("" if nargs == 1 else "s")


class _Parser:
    def __init__(self, table: dict[str, Any], exact: bool, requested: str | None):
        self.flags: dict[str, dict] = table["flags"]
        self.chars: str = table.get("prefix_chars", "-")
        self.allow_abbrev: bool = table.get("allow_abbrev", True)
        self.negative_flags: bool = table.get("negative_number_flags", False)
        self.name = f"{table['engine']} {table['version']}"
        if not exact and requested:
            self.name += f" (the nearest table to {requested})"

    def option_tuples(self, token: str) -> list[tuple[str, str | None]]:
        """_get_option_tuples: (option string, explicit argument) of every flag the token may mean."""
        out = []
        if token[0] in self.chars and token[1] in self.chars:
            if self.allow_abbrev:
                prefix, explicit = token.split("=", 1) if "=" in token else (token, None)
                out = [(s, explicit) for s in self.flags if s.startswith(prefix)]
        elif token[0] in self.chars:
            short, short_explicit = token[:2], token[2:]
            for s in self.flags:
                if s == short:
                    out.append((s, short_explicit))
                elif s.startswith(token):
                    out.append((s, None))
        return out

    def classify(self, token: str):
        """_parse_optional: None for an argument ('A'), else (option string or None if unknown,
        explicit argument, the ambiguous candidates or None)."""
        if not token or token[0] not in self.chars:
            return None
        if token in self.flags:
            return token, None, None
        if len(token) == 1:
            return None
        if "=" in token:
            option, explicit = token.split("=", 1)
            if option in self.flags:
                return option, explicit, None
        tuples = self.option_tuples(token)
        if len(tuples) > 1:
            return None, None, sorted(s for s, _ in tuples)
        if len(tuples) == 1:
            return tuples[0][0], tuples[0][1], None
        if _NEGATIVE_NUMBER.match(token) and not self.negative_flags:
            return None
        if " " in token:
            return None
        return None, None, None

    def value_problem(self, option: str, value: str) -> str | None:
        """_get_values: the converter (int, float, str only) and the choices."""
        flag = self.flags[option]
        kind = flag.get("type")
        converted: Any = value
        if kind in ("int", "float"):
            try:
                converted = (int if kind == "int" else float)(value)
            except ValueError:
                article = "an int" if kind == "int" else "a float"
                return f"{option}: {value!r} is not {article} (argparse: invalid {kind} value)"
        elif kind not in (None, "str"):
            return None
        choices = flag.get("choices")
        if choices is not None and converted not in choices:
            shown = ", ".join(str(c) for c in choices)
            return f"{option}: {value!r} is not one of its choices in {self.name} ({shown})"
        return None


def argv_problems(engine: str, version: str | None, argv: list[str]) -> list[tuple[int, str]]:
    """(index into argv, message) for each token the engine's parser would reject or reinterpret,
    by the table of that version (or the nearest, table_for); [] when the engine has no table."""
    found = table_for(engine, version)
    if found is None:
        return []
    table, exact = found
    parser = _Parser(table, exact, version)
    name = parser.name
    problems: list[tuple[int, str]] = []
    if table.get("rewrites"):
        pairs = _rewrite_of(table)(list(argv), problems, name)
    else:
        pairs = [(token, index) for index, token in enumerate(argv)]
    tokens = [t for t, _ in pairs]
    origin = [o for _, o in pairs]

    def report(i: int, message: str) -> None:
        written = argv[origin[i]]
        if written != tokens[i] and written not in message:
            message += f" ({name}'s parser reads {written!r} as {tokens[i]!r})"
        problems.append((origin[i], message))

    # _parse_known_args: classify every token first ('O', 'A', '-' for '--' and 'A' after it)
    classes: dict[int, tuple] = {}
    pattern = []
    for i, token in enumerate(tokens):
        if "-" in pattern:
            pattern.append("A")
        elif token == "--":
            pattern.append("-")
            report(i, "'--' ends the options: argparse takes every token after it as a positional argument")
        else:
            found_option = parser.classify(token)
            if found_option is None:
                pattern.append("A")
            else:
                classes[i] = found_option
                pattern.append("O")
    pattern_text = "".join(pattern)

    extras: list[int] = []
    dead: set[int] = set()  # unknown or ambiguous options: the arguments after them are theirs, said with them

    def consume_optional(start: int) -> int:
        option, explicit, ambiguous = classes[start]
        token = tokens[start]
        if ambiguous:
            dead.add(start)
            report(
                start,
                f"{token} is not a flag of {name} (argparse finds it ambiguous: {', '.join(ambiguous)}); "
                "use one of those",
            )
            return start + 1
        if option is None:
            # a suggestion for the first few: a list of thousands of unknown flags is not a typo
            close = difflib.get_close_matches(token.split("=", 1)[0], list(parser.flags), n=1) if len(dead) < 20 else []
            dead.add(start)
            report(start, f"{token} is not a flag of {name}" + (f"; did you mean {close[0]}?" if close else ""))
            extras.append(start)
            return start + 1
        if token != option and not (explicit is not None and token == f"{option}={explicit}"):
            if token[1] in parser.chars or not token.startswith(option):  # a prefix of a longer flag
                written = token.split("=", 1)[0] if token[1] in parser.chars else token
                report(
                    start,
                    f"{written} is not a flag of {name}: argparse expands the abbreviation to {option}; write {option}",
                )
            else:  # -xREST: a short flag with its value, or short flags run together
                report(start, f"argparse splits {token} into {option} and {explicit!r}; write them apart")
        while True:
            flag = parser.flags[option]
            if flag.get("error"):
                report(start, f"{option}: {flag['error']}")
            if option in ("-h", "--help"):
                report(start, f"{option} prints the help and exits instead of starting the server")
            nargs = flag.get("nargs")
            if explicit is not None:
                matched = re.match(_nargs_pattern(nargs, True), "A")
                count = len(matched.group(1)) if matched else None
                if count is None:
                    error = _nargs_error(nargs)
                    report(start, f"{option} takes {error[9:]}, not one value with '=' (argparse: {error})")
                    return start + 1
                if count == 0 and option[1] not in parser.chars and explicit != "":
                    # single-dash flags run together (-xyz for -x -y -z)
                    option, explicit = option[0] + explicit[0], explicit[1:] or None
                    if option in parser.flags:
                        continue
                    report(start, f"argparse reads {token} as flags run together, and {option} is not one")
                    return start + 1
                if count == 1:
                    message = parser.value_problem(option, explicit)
                    if message:
                        report(start, message)
                    return start + 1
                report(
                    start,
                    f"{option} takes no value, but {token} gives it {explicit!r} (argparse: ignored explicit argument)",
                )
                return start + 1
            match = re.match(_nargs_pattern(nargs, True), pattern_text[start + 1 :])
            if match is None:
                after = f"{tokens[start + 1]!r}, an option to argparse," if start + 1 < len(tokens) else "nothing"
                report(start, f"{option} needs a value, but {after} follows (argparse: {_nargs_error(nargs)})")
                return start + 1
            stop = start + 1 + len(match.group(1))
            values = tokens[start + 1 : stop]
            if nargs == "A...":
                values = values[:1]
            if nargs != "...":
                for offset, value in enumerate(values):
                    message = parser.value_problem(option, value)
                    if message:
                        report(start + 1 + offset, message)
            return stop

    positionals = list(table.get("positionals") or [])

    def consume_positionals(start: int) -> int:
        nonlocal positionals
        counts: list[int] = []
        for n in range(len(positionals), 0, -1):  # _match_arguments_partial
            match = re.match("".join(_nargs_pattern(p["nargs"], False) for p in positionals[:n]), pattern_text[start:])
            if match:
                counts = [len(g) for g in match.groups()]
                break
        for count in counts:
            start += count
        positionals = positionals[len(counts) :]
        return start

    start = 0
    options = sorted(classes)  # the next option at or after start by bisection: linear in the tokens
    last_option = options[-1] if options else -1
    while start <= last_option:
        next_option = options[bisect.bisect_left(options, start)]
        if start != next_option:
            end = consume_positionals(start)
            if end > start:
                start = end
                continue
            start = end
        if start not in classes:
            extras.extend(range(start, next_option))
            start = next_option
        start = consume_optional(start)
    start = consume_positionals(start)
    extras.extend(range(start, len(tokens)))
    for i in sorted(set(extras)):
        if i in classes or tokens[i] == "--":
            continue  # an unknown option, said above
        if i - 1 in dead and pattern_text[i] == "A":
            dead.add(i)
            continue
        report(i, f"{tokens[i]!r} is no flag's value here: argparse leaves it unrecognized (unrecognized arguments)")
    seen = set()
    out = []
    for problem in sorted(problems, key=lambda p: p[0]):
        if problem not in seen:
            seen.add(problem)
            out.append(problem)
    return out
