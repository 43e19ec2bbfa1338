"""An MPI rank's program (tritonserver, trtllm-llmapi-launch, trtllm-serve): records its argv and
OpenMPI rank; rank 0 serves on the HTTP port, every rank runs until its job ends."""

import os
import sys

import standin


def main() -> int:
    program = standin.PROGRAM
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))
    if program == "trtllm-llmapi-launch" and rank == 0:  # rank 0 runs the server, the others serve MPI
        # As upstream does: task_with_command="${@:1}"; $task_with_command (joined, re-split on spaces)
        command = " ".join(sys.argv[1:]).split()
        os.execvp(command[0], command)
    if program == "trtllm-serve":
        import click_serve

        argv = sys.argv[2:] if sys.argv[1:2] == ["serve"] else sys.argv[1:]  # `trtllm-serve [serve] MODEL`
        for problem in click_serve.problems(argv):
            print(f"Usage: trtllm-serve serve [OPTIONS] MODEL\nError: {problem}", file=sys.stderr, flush=True)
            return 2
    if program == "tritonserver":
        import triton_getopt

        for problem in triton_getopt.problems(sys.argv[1:], os.environ.get("LWSGEN_STANDIN_ENGINE_VERSION")):
            # as src/main.cc does with a ParseException: the usage, the message, exit 1
            print(f"Usage: tritonserver [options]\n{problem}", file=sys.stderr, flush=True)
            return 1
    options = None
    if program == "trtllm-serve" and standin.flag("--extra_llm_api_options"):
        import yaml  # the options file trtllm-serve reads (a YAML mapping of LLM API options)

        with open(standin.flag("--extra_llm_api_options")) as text:
            options = yaml.safe_load(text)
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "0"))
    standin.record(program, rank=rank, world=world, options=options)
    port = standin.flag("--http-port") or (standin.flag("--port") if program == "trtllm-serve" else None)
    if rank in (0, -1) and port:
        standin.serve(int(port))
    standin.block()
    return 0


if __name__ == "__main__":
    sys.exit(main())
