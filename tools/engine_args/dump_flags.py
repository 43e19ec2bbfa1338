"""Print the flag table of an engine's own argument parser as JSON; run with the engine's venv python.

Usage: dump_flags.py vllm|sglang|aphrodite > lwsgen/runtimes/flags/ENGINE-VERSION.json

The parser is the one parse.py builds (vLLM: `vllm serve`'s FlexibleArgumentParser from
make_arg_parser; SGLang: argparse.ArgumentParser with ServerArgs.add_cli_args), so the table is what
the engine itself accepts. lwsgen/check/flags.py reads these tables without the engines installed.

Regenerate (the venvs: setup.sh; the output is deterministic and sorted, tests/test_engine_flags.py
compares it byte for byte with the committed file):

    bash tools/engine_args/setup.sh vllm .venv-engines/vllm
    .venv-engines/vllm/bin/python tools/engine_args/dump_flags.py vllm > lwsgen/runtimes/flags/vllm-0.33.0.json
    bash tools/engine_args/setup.sh sglang .venv-engines/sglang
    .venv-engines/sglang/bin/python tools/engine_args/dump_flags.py sglang > lwsgen/runtimes/flags/sglang-0.5.23.json
    bash tools/engine_args/setup.sh aphrodite .venv-engines/aphrodite
    .venv-engines/aphrodite/bin/python tools/engine_args/dump_flags.py aphrodite \
        > lwsgen/runtimes/flags/aphrodite-0.20.0.json
    # the oldest releases lwsgen checks (make engines builds these venvs too)
    .venv-engines/vllm-0.8.5/bin/python tools/engine_args/dump_flags.py vllm > lwsgen/runtimes/flags/vllm-0.8.5.json
    .venv-engines/sglang-0.4.6/bin/python tools/engine_args/dump_flags.py sglang \
        > lwsgen/runtimes/flags/sglang-0.4.6.json

setup.sh installs torch==2.13.0 without its dependencies: the CPU build where pip's find-links or
LWSGEN_TORCH_INDEX has it; PyPI's own wheel is the CUDA build, which imports only with its CUDA
libraries (torch's Requires-Dist: cuda-toolkit[...]==13.0.3, nvidia-cudnn-cu13, -cusparselt-cu13,
-nccl-cu13, -nvshmem-cu13: pip install them into the venv, about 3 GB; no GPU is needed).

Another release: a venv built the same way with that release of the engine, then the same command
into ENGINE-VERSION.json. Older ones may import more: sglang 0.5.19 also needs torchvision==0.28.0 and
what vllm-requirements.txt lists (all --no-deps).

The table, per option string the parser registers (its _option_string_actions, which includes
spellings hidden from --help such as vLLM's --no-enable-x): takes_value (nargs is not 0), nargs,
choices (null if none; a set's sorted), type (the qualified name of the converter, null for none:
choices are compared after conversion, so only str/null ones compare with the raw token), error (the
message a retired flag's action stops the parser with, or null) and deprecated. Beside the flags:
allow_abbrev, prefix_chars, whether a flag looks like a negative number (then "-1" is no value),
the positionals, the Python whose argparse parsed (its abbreviation rules differ between releases),
the parser's overrides of argparse.ArgumentParser, and for a parser that rewrites argv before
argparse sees it (vLLM's FlexibleArgumentParser.parse_args) probes: argvs and what argparse got.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# What decides whether argparse takes a token for a known option (CPython Lib/argparse.py).
ABBREVIATION_METHODS = {"_parse_optional", "_get_option_tuples", "_parse_known_args", "_match_argument", "_get_values"}

# argvs after `vllm` for the probes of FlexibleArgumentParser.parse_args; what argparse receives is recorded.
VLLM_PROBES = [
    ["serve", "m", "--a_b", "1", "--c_d=e_f", "--g_h.i_j", "2", "-x_y"],
    ["serve", "m", "-O3", "-O", "2", "-O=1", "-Odecode", "-O", "x"],
    ["serve", "--model", "m", "--p", "1"],
    ["serve", "--p", "1", "--model=m"],
    ["serve", "m", "--x.y", "1", "--x.z+", "a,b", "--x.w=true", "--q", "-0.5", "4"],
]


DISTRIBUTIONS = {"aphrodite": "aphrodite-engine"}  # the engine's name on PyPI, where it differs


def _json_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _choices(action):
    if action.choices is None:
        return None
    values = [_json_value(c) for c in action.choices]
    if isinstance(action.choices, (set, frozenset)):
        values.sort(key=repr)
    return values


def _type_name(action):
    if action.type is None:
        return None
    if isinstance(action.type, str):  # a registered type name
        return action.type
    return getattr(action.type, "__qualname__", type(action.type).__qualname__)


def _nargs(action):
    return action.nargs if action.nargs is None or isinstance(action.nargs, (int, str)) else str(action.nargs)


def _flag(action, deprecated_actions):
    deprecated = action in deprecated_actions or type(action).__name__.startswith("Deprecated")
    error = getattr(action, "error_message", None) if type(action).__name__ == "DeprecatedAction" else None
    return {
        "takes_value": action.nargs != 0,
        "nargs": _nargs(action),
        "choices": _choices(action),
        "type": _type_name(action),
        "error": error,
        "deprecated": bool(deprecated),
    }


def _overrides(cls):
    """Methods of argparse.ArgumentParser that the parser's class (or a base short of argparse) redefines."""
    names = set()
    for klass in cls.__mro__:
        if klass.__module__ == "argparse" or klass is object:
            break
        names |= {n for n in vars(klass) if hasattr(argparse.ArgumentParser, n) and not n.startswith("__")}
    return sorted(names)


def _source(module_file: str, site: Path) -> str:
    return Path(module_file).resolve().relative_to(site).as_posix()


def _vllm_probes(parser_class):
    """What FlexibleArgumentParser.parse_args hands to argparse for each probe argv."""
    captured = []
    original = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        captured.append(list(args))
        return argparse.Namespace()

    argparse.ArgumentParser.parse_args = capture
    try:
        out = []
        for argv in VLLM_PROBES:
            captured.clear()
            try:
                parser_class().parse_args(list(argv))
            except Exception as error:  # a rewrite that refuses the argv (0.8.5: --model)
                out.append({"argv": argv, "raises": type(error).__name__})
                continue
            out.append({"argv": argv, "argparse_gets": captured[0]})
        return out
    finally:
        argparse.ArgumentParser.parse_args = original


def _serve_command(program: str, package, make_arg_parser, top, parser):
    """The table's parts for a `PROGRAM serve` built on vLLM's FlexibleArgumentParser (vLLM's own, and
    Aphrodite's copy of it): parse_args of the top parser rewrites the whole argv, then the `serve`
    subparser's parse_known_args (argparse's own matching) takes everything after "serve"."""
    site = Path(package.__file__).resolve().parent.parent
    cls = type(parser)
    source = (
        f"{_source(inspect.getsourcefile(make_arg_parser), site)} make_arg_parser "
        f"({program} serve; {cls.__name__} from {_source(inspect.getsourcefile(cls), site)})"
    )
    extra = {
        "parser_class": f"{cls.__module__}.{cls.__qualname__}",
        "rewrites": {"by": f"{cls.__module__}.{cls.__qualname__}.parse_args", "probes": _vllm_probes(cls)},
        "top_allow_abbrev": top.allow_abbrev,
    }
    return parser, source, getattr(parser, "_deprecated", set()), extra


def vllm():
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm as package
    from parse import vllm_parser

    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
    except ImportError:  # before 0.20: the OpenAI server's module
        from vllm.entrypoints.openai.cli_args import make_arg_parser

    top, parser = vllm_parser()
    _choices_every_run_takes(parser)
    return _serve_command("vllm", package, make_arg_parser, top, parser)


def _choices_every_run_takes(parser) -> None:
    """vLLM 0.8.5 gives a config field typed as a Union of Literals the choices of whichever Literal a
    set yields first (get_kwargs, vllm/engine/arg_utils.py@v0.8.5 lines 144-157). A Literal hashes by
    its arguments' types, whose hash is their address, so the choices change from run to run
    (DecodingConfig.guided_decoding_backend: auto, guidance, xgrammar in some runs, with
    lm-format-enforcer and outlines in others). The table keeps what every run accepts: the values
    all the Literals share. A release that gives such a field other choices is left as it is."""
    import dataclasses
    import typing

    import vllm.config as config

    for cls in vars(config).values():
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            continue
        for field in dataclasses.fields(cls):
            if typing.get_origin(field.type) is not typing.Union:
                continue
            literals = [
                set(typing.get_args(a)) for a in typing.get_args(field.type) if typing.get_origin(a) is typing.Literal
            ]
            for action in parser._actions:
                picked = action.dest == field.name and action.choices is not None and len(literals) > 1
                if picked and set(action.choices) in literals:
                    action.choices = sorted(set.intersection(*literals))


def aphrodite():
    import aphrodite as package
    from parse import aphrodite_parser

    top, parser = aphrodite_parser()  # puts the CPU platform in place before anything builds configs
    from aphrodite.entrypoints.openai.cli_args import make_arg_parser

    return _serve_command("aphrodite", package, make_arg_parser, top, parser)


def sglang():
    import sglang as package
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    site = Path(package.__file__).resolve().parent.parent
    # the repository keeps the package under python/
    source = f"python/{_source(inspect.getsourcefile(ServerArgs), site)} ServerArgs.add_cli_args"
    cls = type(parser)
    return parser, source, set(), {"parser_class": f"{cls.__module__}.{cls.__qualname__}", "rewrites": None}


def table(engine: str) -> dict:
    parser, source, deprecated, extra = {"vllm": vllm, "sglang": sglang, "aphrodite": aphrodite}[engine]()
    version = importlib.metadata.version(DISTRIBUTIONS.get(engine, engine))
    overrides = _overrides(type(parser))
    return {
        "engine": engine,
        "version": version,
        "source": f"{engine} {version} {source}",
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "allow_abbrev": parser.allow_abbrev,
        "prefix_chars": parser.prefix_chars,
        "negative_number_flags": bool(parser._has_negative_number_optionals),
        "overrides": overrides,
        "abbreviation_overridden": bool(ABBREVIATION_METHODS & set(overrides)),
        "positionals": [{"dest": a.dest, "nargs": _nargs(a)} for a in parser._actions if not a.option_strings],
        "required": sorted(a.option_strings[0] for a in parser._actions if a.option_strings and a.required),
        "flags": {s: _flag(a, deprecated) for s, a in sorted(parser._option_string_actions.items())},
        **extra,
    }


def main() -> int:
    # Whatever the engines print while importing and building (vLLM logs to stdout) goes to stderr:
    # stdout is the table alone.
    sys.stdout.flush()
    out = os.dup(1)
    os.dup2(2, 1)
    real, sys.stdout = sys.stdout, sys.stderr
    try:
        data = table(sys.argv[1])
    finally:
        sys.stdout.flush()
        os.dup2(out, 1)
        sys.stdout = real
    sys.stdout.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
