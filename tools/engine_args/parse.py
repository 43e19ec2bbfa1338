"""Parse command lines with an engine's own argument parser; run with the engine's venv python.

Input (stdin): a JSON list of argv lists, each the container's command line after the kubelet's
$(VAR) expansion. Output (stdout): a JSON list of the parsed namespaces (vars(), values as
JSON or str), then the option strings the parser knows, as {"parsed": [...], "options": [...]}.
"""

import argparse
import json
import os
import sys


def vllm_parser():
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # As vllm/entrypoints/cli/main.py and ServeSubcommand.subparser_init build `vllm serve`.
    top = FlexibleArgumentParser(description="vLLM CLI")
    serve = top.add_subparsers(required=False, dest="subparser").add_parser("serve")
    make_arg_parser(serve)
    return top, serve


def vllm(argvs):
    # No GPU: vLLM builds default configs while registering its flags, and needs a platform (read
    # when vllm is first imported).
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.entrypoints.common.cli_args import validate_parsed_serve_args

    top, serve = vllm_parser()
    parsed = []
    for argv in argvs:
        assert argv[0] == "vllm", argv
        namespace = top.parse_args(argv[1:])
        validate_parsed_serve_args(namespace)  # what `vllm serve` runs right after parsing
        parsed.append(vars(namespace))
    return parsed, serve


def aphrodite_parser():
    # No GPU: Aphrodite builds default configs (a DeviceConfig) while registering its flags. It has
    # no CPU switch for serve; its CLI's own fallback for `aphrodite bench` (entrypoints/cli/main.py,
    # 0.20.0) puts a CpuPlatform in place of the unspecified one, and so does this.
    from aphrodite import platforms

    if platforms.current_platform.is_unspecified():
        from aphrodite.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()
    from aphrodite.entrypoints.openai.cli_args import make_arg_parser
    from aphrodite.utils.argparse_utils import FlexibleArgumentParser

    # As aphrodite/entrypoints/cli/main.py and serve.py's subparser_init build `aphrodite serve` (0.20.0).
    top = FlexibleArgumentParser(description="Aphrodite CLI")
    serve = top.add_subparsers(required=False, dest="subparser").add_parser("serve")
    make_arg_parser(serve)
    return top, serve


def aphrodite(argvs):
    top, serve = aphrodite_parser()
    from aphrodite.entrypoints.openai.cli_args import validate_parsed_serve_args

    parsed = []
    for argv in argvs:
        assert argv[0] == "aphrodite", argv
        namespace = top.parse_args(argv[1:])
        validate_parsed_serve_args(namespace)  # what `aphrodite serve` runs after parsing (serve.py validate)
        parsed.append(vars(namespace))
    return parsed, serve


def sglang(argvs):
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    parsed = []
    for argv in argvs:
        assert argv[:3] == ["python3", "-m", "sglang.launch_server"], argv
        namespace = parser.parse_args(argv[3:])
        ServerArgs.from_cli_args(namespace)  # what launch_server builds from them
        parsed.append(vars(namespace))
    return parsed, parser


def main() -> int:
    argvs = json.load(sys.stdin)
    parsed, parser = {"vllm": vllm, "sglang": sglang, "aphrodite": aphrodite}[sys.argv[1]](argvs)
    options = sorted({s for action in parser._actions for s in action.option_strings})
    json.dump({"parsed": parsed, "options": options}, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
