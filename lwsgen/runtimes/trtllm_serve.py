"""TensorRT-LLM's OpenAI-compatible `trtllm-serve`, one MPI rank per GPU across the group.

The launch is the one triton-trtllm uses (and so is its failure as a group): the leader waits
(bounded) for every pod of its group, then `mpirun -np <world size>` over the group's pods through
`kubectl exec` runs `trtllm-llmapi-launch trtllm-serve <model.path> --tp_size <tensor> --pp_size
<pipeline>` on every rank. trtllm-llmapi-launch joins its arguments and re-splits them on spaces,
so the serve command travels as JSON in `LWSGEN_SERVE_ARGV` and `exec-argv.sh` runs it argument by
argument: extraArgs with spaces or JSON arrive unchanged. Rank 0, on the leader, serves HTTP on
8000 and the other ranks join its MPI session. The stock NGC image
`nvcr.io/nvidia/tensorrt-llm/release:<ver>` works unmodified (kubectl from an init container,
scripts from a ConfigMap). Health is `/health`. trtllm-serve has no Prometheus metrics for queue
length, so it scales on group GPU utilisation only.
"""

from __future__ import annotations

import json

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import (
    SCRIPTS_MOUNT,
    Capabilities,
    Port,
    Probes,
    RuntimeParts,
    extra_args,
    model_path,
    plain_env,
)

NAME = "trtllm-serve"
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"  # HPC-X OpenMPI as shipped in NGC images
SERVING_PORT = 8000

CAPABILITIES = Capabilities(
    derived_flags=("--host", "--port", "--tp_size", "--pp_size"),
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    metrics=(),
    leader_ready_needs_workers=True,
    needs_api_access=True,
)


def serve_command(profile: Profile) -> tuple[str, ...]:
    return (
        "trtllm-serve",
        model_path(profile),
        "--host",
        "0.0.0.0",
        "--port",
        str(SERVING_PORT),
        "--tp_size",
        str(profile.parallelism.tensor),
        "--pp_size",
        str(profile.parallelism.pipeline),
        *extra_args(profile),
    )


# What every rank runs: trtllm-llmapi-launch re-splits its arguments on spaces, so the serve command
# is in LWSGEN_SERVE_ARGV (JSON) and exec-argv.sh runs it argument by argument on rank 0.
RANK_COMMAND = ("trtllm-llmapi-launch", "/bin/bash", f"{SCRIPTS_MOUNT}/exec-argv.sh")


def parts(profile: Profile) -> RuntimeParts:
    return launchers.mpi_over_kubectl(
        profile,
        RANK_COMMAND,
        (Port("http", SERVING_PORT),),
        MPIRUN,
        probes=Probes(port="http", startup_path="/health", readiness_path="/health"),
        service_ports=("http",),
        extra_scripts=("exec-argv.sh",),
        leader_env=(plain_env("LWSGEN_SERVE_ARGV", json.dumps(serve_command(profile))),),
    )
