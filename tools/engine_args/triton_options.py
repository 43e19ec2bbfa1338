"""Print tritonserver's option table as JSON, from its own source: the Option entries of
src/command_line_parser.cc (triton-inference-server/server at a release tag), each a long option
for getopt_long (a value unless declared Option::ArgNone), and how TritonParser::Parse reads its
value (the ParseOption<T> call in the option's `case`: what it declares is not always what it
parses, e.g. --metrics-interval-ms is declared a float and read with ParseOption<int>).

Usage: git show vRELEASE:src/command_line_parser.cc | python tools/engine_args/triton_options.py RELEASE CONTAINER
    > lwsgen/runtimes/options/tritonserver-RELEASE.json

Every option is kept whatever #if feature block it sits in: NGC's tritonserver images are built
with every endpoint and feature (build.py --enable-all), so all of them are registered. The
stand-in (tests/groupsim/standins/triton_getopt.py) hands them to glibc's own getopt_long;
lwsgen/check/getopt.py reads them at render.
"""

from __future__ import annotations

import json
import re
import sys

OPTION = re.compile(r'\{\s*(OPTION_[A-Z0-9_]+),\s*"([a-z0-9-]+)",\s*(?:Option::Arg(\w+)|"([^"]*)")')
CASE = re.compile(r"\n\s*case (OPTION_[A-Z0-9_]+)\s*:")
# How TritonParser::Parse reads each option's value (the call in its `case OPTION_...:`): the kinds
# tests/groupsim/standins/triton_getopt.py checks; a value read by another parser (pairs, trace or
# cache settings, ...) is "other" and taken as it is.
PARSERS = {
    "ParseOption<bool>": "boolean",
    "ParseOption<int>": "int",
    "ParseOption<int64_t>": "int64",
    "ParseOption<double>": "double",
    "ParseIntBoolOption": "int-or-bool",
}


def _value_parsers(source: str) -> dict[str, str]:
    """OPTION_X -> how Parse() reads its value, from the switch over getopt_long's answers."""
    body = source[source.index("switch (flag) {") :]
    body = body[: body.index("catch (const ParseException& pe)")]
    marks = list(CASE.finditer(body))
    out = {}
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        block = body[mark.end() : after.start() if after else len(body)]
        found = sorted({p for p in PARSERS if p + "(" in block.replace(" (", "(")})
        out[mark.group(1)] = PARSERS[found[0]] if len(found) == 1 else "other"
    out["OPTION_HELP"] = "help"  # falls through to '?': a ParseException, usage and exit 1
    return out


def table(source: str, release: str, container: str) -> dict:
    parsers = _value_parsers(source)
    options = {}
    for option_id, name, declared, _format in OPTION.findall(source):
        takes_value = declared != "None"
        options[name] = {"takes_value": takes_value, "parse": parsers.get(option_id, "other")}
    if not options:
        raise SystemExit("no Option entries found: not src/command_line_parser.cc?")
    return {
        "engine": "tritonserver",
        "release": release,
        "container": container,
        "source": f"triton-inference-server/server v{release} src/command_line_parser.cc",
        "options": dict(sorted(options.items())),
    }


if __name__ == "__main__":
    release, container = sys.argv[1:3]
    sys.stdout.write(json.dumps(table(sys.stdin.read(), release, container), indent=1, sort_keys=True) + "\n")
