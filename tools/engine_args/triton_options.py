"""Print tritonserver's option table as JSON, from its own source: the Option entries of
src/command_line_parser.cc (triton-inference-server/server at a release tag), each a long option
for getopt_long, with the kind of value it takes (Option::ArgNone/ArgBool/ArgInt/ArgFloat/ArgStr, or
a format such as "<string>,<string>=<string>", parsed as a string).

Usage: git show vRELEASE:src/command_line_parser.cc | python tools/engine_args/triton_options.py RELEASE CONTAINER
    > tests/groupsim/standins/tritonserver-RELEASE.json

Every option is kept whatever #if feature block it sits in: NGC's tritonserver images are built
with every endpoint and feature (build.py --enable-all), so all of them are registered. The
stand-in (tests/groupsim/standins/triton_getopt.py) hands them to glibc's own getopt_long.
"""

from __future__ import annotations

import json
import re
import sys

OPTION = re.compile(r'\{\s*(OPTION_[A-Z0-9_]+),\s*"([a-z0-9-]+)",\s*(?:Option::Arg(\w+)|"([^"]*)")')
KINDS = {"None": "none", "Bool": "boolean", "Int": "integer", "Float": "float", "Str": "string"}


def table(source: str, release: str, container: str) -> dict:
    options = {}
    for _, name, kind, _format in OPTION.findall(source):
        options[name] = KINDS[kind] if kind else "string"
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
