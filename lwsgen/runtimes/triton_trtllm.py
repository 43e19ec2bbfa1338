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

Every rank gets `--backend-config=python,shm-region-prefix-name=prefix<rank>_` (the ranks of a pod
share /dev/shm); ranks other than 0 load only the models that run the TensorRT-LLM engine
(`model.engineModels`, default `tensorrt_llm`), as the upstream launcher
(tensorrtllm_backend scripts/launch_triton_server.py) does. Every model of the repository reports
its own series (the ensemble and each model in it), so the recording rules count only the model
clients call: `model.servedName`, default `ensemble`.
"""

from __future__ import annotations

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import (
    SCRIPTS_MOUNT,
    Capabilities,
    Port,
    Probes,
    RecordingRule,
    RouterMetrics,
    Runtime,
    RuntimeParts,
    ServingSeries,
    extra_args,
    model_path,
    plain_env,
    rate_per_pod,
    safe_ratio,
)
from lwsgen.runtimes.versions import Since

NAME = "triton-trtllm"
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"  # HPC-X OpenMPI as shipped in NGC images
PORTS = (Port("http", 8000), Port("grpc", 8001), Port("metrics", 8002))
DEFAULT_SERVED_NAME = "ensemble"  # all_models/inflight_batcher_llm: clients call /v2/models/ensemble
DEFAULT_ENGINE_MODELS = ("tensorrt_llm",)
OWN_FIELDS = (
    ("model", "engineModels"),
)  # profile fields no other runtime reads  # launch_triton_server.py --tensorrt_llm_model_name default

# NGC release YY.MM -> the TensorRT-LLM it ships: server v2.71.0 docs/introduction/compatibility.md
# lines 37-68 (24.07 -> 0.11.0, 25.08 -> 0.21.0, 25.09 -> 1.0.0, 25.12 -> 1.1.0, 26.03 -> 1.2.0, 26.07 -> 1.2.1).
ENGINE = versions.Engine(
    title="Triton (NGC tritonserver)",
    tag=r"^(\d{2}\.\d{2})-trtllm",  # nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3
    checked="26.07",
    oldest="24.07",
    table=(
        Since(
            "per-model-metrics",
            "20.03",
            "triton-inference-server/core src/constants.h lines 85-86, src/metric_model_reporter.cc lines 367-393",
            "nv_inference_* series per model, labelled model and version",
        ),
        Since(
            "rank-shm-prefix",
            "24.07",
            "tensorrtllm_backend v0.11.0 scripts/launch_triton_server.py lines 81-101 (v0.19.0 lines 148-196)",
            "every rank's --backend-config=python,shm-region-prefix-name=prefix<rank>_, non-zero ranks "
            "--model-control-mode=explicit with one --load-model per engine model",
        ),
    ),
)

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
    hub_patterns=None,  # a model repository (engines, tokenizer, config.pbtxt): every file
    # The TensorRT-LLM backend's batcher gauges, on Triton's metrics port, as llm-d-router reads them
    # (pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go@v0.10.0, "triton-tensorrt-llm").
    # Triton's /v2 generate API is none the picker's default parsers read: its passthrough parser
    # routes without the body (the chart's choice for triton, config/charts/routerlib/templates/_config.yaml).
    router_metrics=RouterMetrics(
        "nv_trt_llm_request_metrics{request_type=waiting}",
        "nv_trt_llm_request_metrics{request_type=scheduled}",
        "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}",
        cache_block_size="nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=tokens_per}",
        cache_num_blocks="nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=max}",
        parser="passthrough-parser",
    ),
    # triton-inference-server/core r26.06 src/metrics.cc line 54 (prometheus-cpp: no _total suffix),
    # labelled model and version; its first-response histogram is off unless histogram_latencies=true
    # (metrics.cc line 155), so the dashboard has no latency quantiles for Triton.
    serving_series=ServingSeries(requests="nv_inference_request_success", model_label="model"),
    # The awsome-inference rules, correct for counters: rates over 1m, per request or per compute time.
    rules=(
        RecordingRule(
            "namespace_pod:triton_compute_duration_us_per_request:rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_compute_infer_duration_us", served_model_only=True),
                rate_per_pod("nv_inference_request_success", served_model_only=True),
            ),
            title="Compute time per request",
            unit="µs",
        ),
        RecordingRule(
            "namespace_pod:triton_queue_duration_us_per_request:rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_queue_duration_us", served_model_only=True),
                rate_per_pod("nv_inference_request_success", served_model_only=True),
            ),
            title="Queue time per request",
            unit="µs",
        ),
        RecordingRule(
            "namespace_pod:triton_request_duration_us_per_request:rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_request_duration_us", served_model_only=True),
                rate_per_pod("nv_inference_request_success", served_model_only=True),
            ),
            title="Request time per request",
            unit="µs",
        ),
        # Where requests really queue: an ensemble's own queue time is two timestamps taken back to back
        # (triton-inference-server/core r24.07 src/ensemble_scheduler/ensemble_scheduler.cc 1414
        # CaptureQueueStartNs in Enqueue, 389 compute_start_ns first in the EnsembleContext
        # constructor; src/infer_stats.cc 105 queue = compute_start - queue_start), ~0 under any
        # load, while each model it runs is a request of its own with its batcher's real queue time
        # (dynamic_batch_scheduler.cc CaptureQueueStartNs) and its own compute. So the ratio sums the
        # models the entry model runs, not the entry model (whose compute is their sum again).
        RecordingRule(
            "namespace_pod:triton_queue_compute:ratio_rate1m",
            safe_ratio(
                rate_per_pod("nv_inference_queue_duration_us", composing_only=True),
                rate_per_pod("nv_inference_compute_infer_duration_us", composing_only=True),
            ),
            autoscaling="queue-compute-ratio",
            title="Queue time per compute time (the models the entry model runs)",
        ),
    ),
)


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    return CAPABILITIES


def engine_models(profile: Profile) -> tuple[str, ...]:
    return profile.model.engine_models or DEFAULT_ENGINE_MODELS


def check(profile: Profile) -> list[Finding]:
    path = profile.model.path
    if not path.startswith("/"):
        return [
            Finding(
                ("model", "path"),
                f"{path!r} is not an absolute path; Triton needs the model repository directory (for example "
                "/var/run/models/<model>/triton_model_repo)",
                "bad-model-path",
            )
        ]
    return []


def parts(profile: Profile) -> RuntimeParts:
    models = ",".join(engine_models(profile))
    rank = ("/bin/bash", f"{SCRIPTS_MOUNT}/triton-rank.sh", model_path(profile), models, *extra_args(profile))
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


RUNTIME = Runtime(
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    check=check,
    default_served_name=DEFAULT_SERVED_NAME,
    own_fields=OWN_FIELDS,
)
