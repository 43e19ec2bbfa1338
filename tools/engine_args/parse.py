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
    # `vllm serve` as vllm/entrypoints/cli/main.py builds it (0.8.5 and 0.33.0 alike): the top
    # FlexibleArgumentParser, its subparsers, and ServeSubcommand's own subparser_init.
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # before 0.11: vllm/utils/__init__.py
        from vllm.utils import FlexibleArgumentParser
    from vllm.entrypoints.cli.serve import ServeSubcommand

    top = FlexibleArgumentParser(description="vLLM CLI")
    serve = ServeSubcommand().subparser_init(top.add_subparsers(required=False, dest="subparser"))
    return top, serve


def vllm(argvs):
    # No GPU: vLLM builds default configs while registering its flags, and needs a platform (read
    # when vllm is first imported).
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.entrypoints.cli.serve import ServeSubcommand

    top, serve = vllm_parser()
    parsed = []
    for argv in argvs:
        assert argv[0] == "vllm", argv
        namespace = top.parse_args(argv[1:])
        ServeSubcommand().validate(namespace)  # what `vllm serve` runs right after parsing (cli/main.py)
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


def _answer_as_a_gpu_node(server_args) -> None:
    """SGLang 0.4's ServerArgs.__post_init__ asks the machine for its accelerator and its memory
    (get_device, get_device_memory_capacity: python/sglang/srt/server_args.py, v0.4.6), and raises on
    a machine without one. The pod has GPUs; answer as one 80 GB CUDA GPU would (the H100 of the
    examples), leaving every check of the arguments as it is. Later releases ask nothing at parse time."""
    if hasattr(server_args, "get_device"):
        server_args.get_device = lambda *_: "cuda"
    if hasattr(server_args, "get_device_memory_capacity"):
        server_args.get_device_memory_capacity = lambda *_: 81559  # MiB, as nvidia-smi gives an H100 80GB HBM3


def sglang(argvs):
    from sglang.srt import server_args
    from sglang.srt.server_args import ServerArgs

    _answer_as_a_gpu_node(server_args)

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
    # stdout is the answer alone: what the engines print while importing and parsing (vLLM 0.8.5
    # logs to stdout) goes to stderr
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    parsed, parser = {"vllm": vllm, "sglang": sglang, "aphrodite": aphrodite}[sys.argv[1]](argvs)
    options = sorted({s for action in parser._actions for s in action.option_strings})
    json.dump({"parsed": parsed, "options": options}, answer, default=str)
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
