"""Triton Inference Server with the TensorRT-LLM backend, one tritonserver rank per GPU under MPI.

The leader waits (bounded by `launch.rendezvousTimeoutSeconds`) until every pod of its own group
runs with its containers ready, found by the `leaderworkerset.sigs.k8s.io/group-key` label, then
runs `mpirun -np <world size>` over the group's pods by DNS name, leader first. MPI reaches the workers through
`kubectl exec` (an OpenMPI remote-shell agent script), so the stock NGC image
`nvcr.io/nvidia/tritonserver:<ver>-trtllm-python-py3` works unmodified: an init container copies a
pinned `kubectl` binary (from `launch.kubectlImage`) into the leader and the scripts come from a
ConfigMap. Rank 0 runs on the leader and serves HTTP 8000, gRPC 8001 and metrics 8002; the other
ranks have HTTP, gRPC and metrics off. Workers keep their pod alive until MPI drives them and give
up at the bound if it never does; once the MPI daemon that mpirun started there is gone (the
leader's job ended), a worker exits 1 so the group is recreated; mpirun itself exits when it loses
a worker's daemon.
The leader's ServiceAccount may get and list pods and create pods/exec in its namespace.
`model.path` is the Triton model repository (an absolute path, usually on `storage`).
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import (
    SCRIPTS_MOUNT,
    Capabilities,
    Port,
    Probes,
    RecordingRule,
    RuntimeParts,
    extra_args,
    model_path,
    plain_env,
    rate_per_pod,
    safe_ratio,
)

NAME = "triton-trtllm"
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"  # HPC-X OpenMPI as shipped in NGC images
PORTS = (Port("http", 8000), Port("grpc", 8001), Port("metrics", 8002))

CAPABILITIES = Capabilities(
    derived_flags=("--model-repository", "--http-port", "--grpc-port", "--metrics-port", "--id"),
    serving_port=8000,
    pipeline_parallel=True,
    metrics=(
        "nv_inference_request_success",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_inference_request_duration_us",
    ),
    leader_ready_needs_workers=True,
    needs_api_access=True,
    metrics_port="metrics",
    # The awsome-inference rules, correct for counters: rates over 1m, per request or per compute time.
    rules=(
        RecordingRule(
            "namespace_pod:triton_compute_duration_us_per_request:rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_compute_infer_duration_us"), rate_per_pod("nv_inference_request_success")
            ),
        ),
        RecordingRule(
            "namespace_pod:triton_queue_duration_us_per_request:rate1m",
            safe_ratio(rate_per_pod("nv_inference_queue_duration_us"), rate_per_pod("nv_inference_request_success")),
        ),
        RecordingRule(
            "namespace_pod:triton_request_duration_us_per_request:rate1m",
            safe_ratio(rate_per_pod("nv_inference_request_duration_us"), rate_per_pod("nv_inference_request_success")),
        ),
        RecordingRule(
            "namespace_pod:triton_queue_compute:ratio_rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_queue_duration_us"), rate_per_pod("nv_inference_compute_infer_duration_us")
            ),
            autoscaling="queue-compute-ratio",
        ),
    ),
)


def check(profile: Profile) -> list[tuple[tuple, str, str]]:
    path = profile.model.path
    if not path.startswith("/"):
        return [
            (
                ("model", "path"),
                f"{path!r} is not an absolute path; Triton needs the model repository directory (for example "
                "/var/run/models/<model>/triton_model_repo)",
                "bad-model-path",
            )
        ]
    return []


def parts(profile: Profile) -> RuntimeParts:
    rank = ("/bin/bash", f"{SCRIPTS_MOUNT}/triton-rank.sh", model_path(profile), *extra_args(profile))
    ports_env = tuple(plain_env(f"LWSGEN_{p.name.upper()}_PORT", p.number) for p in PORTS)
    return launchers.mpi_over_kubectl(
        profile,
        rank,
        PORTS,
        MPIRUN,
        probes=Probes(port="http", startup_path="/v2/health/live", readiness_path="/v2/health/ready"),
        service_ports=("http", "grpc"),
        extra_scripts=("triton-rank.sh",),
        leader_env=ports_env,
    )
