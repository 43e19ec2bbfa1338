"""Triton Inference Server with the TensorRT-LLM backend, one tritonserver rank per GPU under MPI.

The leader waits (bounded by `launch.rendezvousTimeoutSeconds`) until every pod of its own group
runs, found by the `leaderworkerset.sigs.k8s.io/group-key` label, then runs
`mpirun -np <world size>` over the group's pods. MPI reaches the workers through `kubectl exec`
(an OpenMPI remote-shell agent script), so the stock NGC image
`nvcr.io/nvidia/tritonserver:<ver>-trtllm-python-py3` works unmodified: an init container copies a
pinned `kubectl` binary (from `launch.kubectlImage`) into the leader, and the scripts come from a
ConfigMap. Rank 0 runs on the leader and serves HTTP 8000, gRPC 8001 and metrics 8002; the other
ranks have HTTP, gRPC and metrics off. Workers only keep their pod alive until MPI drives them.
The leader's ServiceAccount may get and list pods and create pods/exec in its namespace.
`model.path` is the Triton model repository (an absolute path, usually on `storage`).
"""

from __future__ import annotations

from lwsgen import resources
from lwsgen.runtimes.base import (
    TOOLS_MOUNT,
    Capabilities,
    Context,
    Port,
    Probes,
    Role,
    RuntimeParts,
    field_env,
    plain_env,
    rendezvous_env,
    script_command,
)

NAME = "triton-trtllm"
# HPC-X OpenMPI as shipped in NGC tritonserver images.
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"
WORKER_CONTAINER = "worker"
PORTS = (Port("http", 8000), Port("grpc", 8001), Port("metrics", 8002))

CAPABILITIES = Capabilities(
    serving_port=8000,
    pipeline_parallel=True,
    metrics=("nv_inference_request_success", "nv_inference_queue_duration_us",
             "nv_inference_compute_infer_duration_us", "nv_inference_request_duration_us"),
    autoscaling_metrics=("gpu-utilization", "queue-compute-ratio"),
    leader_ready_needs_workers=True,
    needs_api_access=True,
)

SCRIPTS = ("triton-leader.sh", "triton-rank.sh", "triton-worker.sh", "kubectl-rsh")


def check(profile: dict) -> list[tuple[tuple, str, str]]:
    path = profile["model"]["path"]
    if not path.startswith("/"):
        return [(("model", "path"), f"{path!r} is not an absolute path; Triton needs the model repository directory (for example /var/run/models/<model>/triton_model_repo)", "bad-model-path")]
    return []


def parts(ctx: Context) -> RuntimeParts:
    port_env = tuple(plain_env(f"LWSGEN_{p.name.upper()}_PORT", p.number) for p in PORTS)
    leader_env = (
        field_env("GROUP_KEY", "metadata.labels['leaderworkerset.sigs.k8s.io/group-key']"),
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        plain_env("LWSGEN_WORLD_SIZE", ctx.world_size),
        plain_env("LWSGEN_GPUS_PER_POD", ctx.gpus_per_pod),
        plain_env("LWSGEN_MODEL_REPOSITORY", ctx.model_path),
        plain_env("LWSGEN_MPIRUN", MPIRUN),
        plain_env("LWSGEN_WORKER_CONTAINER", WORKER_CONTAINER),
        *port_env,
        *rendezvous_env(ctx),
    )
    kubectl_image = ctx.profile["launch"]["kubectlImage"]
    install_kubectl = ("install-kubectl", kubectl_image,
                       ("/bin/sh", "-c", f'cp "$(command -v kubectl)" {TOOLS_MOUNT}/kubectl && chmod 0555 {TOOLS_MOUNT}/kubectl'))
    return RuntimeParts(
        leader=Role(command=script_command("triton-leader.sh"), args=ctx.extra_args, env=leader_env,
                    ports=PORTS, tool_installers=(install_kubectl,), api_access=True),
        worker=Role(command=script_command("triton-worker.sh")),
        probes=Probes(port="http", startup_path="/v2/health/live", readiness_path="/v2/health/ready"),
        service_ports=("http", "grpc"),
        scripts={name: resources.script(name) for name in SCRIPTS},
        role_rules=(
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
            # create: SPDY exec and WebSocket exec on Kubernetes >= 1.35; get: WebSocket exec before 1.35.
            {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"]},
        ),
    )


