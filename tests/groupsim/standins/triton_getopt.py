"""tritonserver's command line as tritonserver reads it (TritonParser::Parse, src/command_line_parser.cc
of triton-inference-server/server at the image's release): glibc's own getopt_long, called through
ctypes, over the option table of that source (tritonserver-RELEASE.json, dumped by
tools/engine_args/triton_options.py), then each value as Parse() reads it: ParseOption<bool>
true/on/1/false/off/0 in any case; ParseOption<int> / <int64_t> std::stoi / stoll (ASCII digits
after optional blanks and a sign, the rest of the word ignored as stoi ignores it, within the type's
range); ParseOption<double> std::stod; ParseIntBoolOption true/false or an int. --help (and its
prefixes) stops it as the ParseException it throws. The first refusal stops it; a word left over is
"Unexpected argument". Not mirrored (taken as written): values read by other parsers (pairs such as
--cuda-memory-pool-byte-size 0:256, trace, cache, rate-limit and metrics settings) and the choices
Parse() checks later (--model-control-mode, --log-format).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

HERE = Path(__file__).resolve().parent


class _Option(ctypes.Structure):  # <getopt.h> struct option
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("has_arg", ctypes.c_int),
        ("flag", ctypes.POINTER(ctypes.c_int)),
        ("val", ctypes.c_int),
    ]


def table(container: str | None) -> dict:
    """The option table of the image's release (NGC container YY.MM): its own, else the newest not
    newer, else the oldest (lwsgen/runtimes/options, as lwsgen's own check reads them)."""
    from lwsgen.check import getopt

    return getopt.table_for(container)[0]


def problems(argv: list[str], container: str | None = None) -> list[str]:
    """What tritonserver refuses in argv (its arguments, without the program name): [] or the one
    message it stops with. glibc prints its own line for an unknown option or a missing value."""
    from lwsgen.check import getopt

    options = table(container)["options"]
    names = sorted(options)
    entries = [_Option(n.encode(), int(options[n]["takes_value"]), None, 256 + i) for i, n in enumerate(names)]
    longopts = (_Option * (len(entries) + 1))(*entries, _Option(None, 0, None, 0))
    words = (ctypes.c_char_p * (len(argv) + 2))(b"tritonserver", *(a.encode() for a in argv), None)
    libc = ctypes.CDLL(None)
    libc.getopt_long.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
    optind = ctypes.c_int.in_dll(libc, "optind")
    optarg = ctypes.c_char_p.in_dll(libc, "optarg")
    optind.value = 0  # glibc: start over
    while (found := libc.getopt_long(len(argv) + 1, words, b"", longopts, None)) != -1:
        if not 256 <= found < 256 + len(names):  # '?': unknown, ambiguous or missing its value
            return ["getopt_long refused an option (its line above): tritonserver prints its usage and exits 1"]
        name = names[found - 256]
        if options[name]["parse"] == "help":
            return ["--help: tritonserver prints its usage and exits 1"]
        if optarg.value is not None:
            message = getopt.value_problem(options[name]["parse"], optarg.value.decode())
            if message:
                return [f'Bad option: "--{name}".\n{message}']
    if optind.value < len(argv) + 1:
        return [f"Unexpected argument: {words[optind.value].decode()}"]
    return []
