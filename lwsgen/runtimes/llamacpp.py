"""llama.cpp over RPC: workers offer their GPUs with `rpc-server`, the leader serves with them.

Workers run `rpc-server --host 0.0.0.0 --port 50052` (`ggml-rpc-server` from build b9824, found
by name at start). From build b6688 one rpc-server offers every GPU of the pod; before it, an
rpc-server offers one device, so a worker runs one per GPU (`CUDA_VISIBLE_DEVICES=<i>`, port
50052 + i) and the leader lists each. The leader resolves (bounded, with retries) every worker of
its own group, `<name>-<group>-<i>.<subdomain>.<namespace>` for i in 1..size-1, derived from
`LWS_LEADER_ADDRESS` and `LWS_GROUP_SIZE`, waits until each answers its beacon and each rpc-server
accepts connections, and runs `llama-server --model <model.path> --host 0.0.0.0 --port 8080
--n-gpu-layers 999 --rpc <worker>:50052,...` (plus `--metrics` when monitoring is on). Once
llama-server runs, the leader never connects to an rpc-server port again: rpc-server serves one
client at a time with a listen backlog of 1 (llama.cpp b10359 `ggml/src/ggml-rpc/transport.cpp`
line 621, `rpc_serve_client` inline in the accept loop), so a probe queues behind llama-server's
connection and times out. It watches the workers' beacons instead; when one stops answering for 3
polls it stops llama-server and exits 1, so the group is recreated.
A worker waits (bounded)
for the leader's name first, so a worker whose leader never comes gives up.

RPC cache: from build b4981 every rpc-server runs with `-c`, caching the tensors it receives by
hash in `LLAMA_CACHE` (an emptyDir at /lwsgen/rpc-cache, counted in the pod's ephemeral storage),
so a restarted rpc-server in the same pod (lws.restartPolicy None) loads them from local disk
instead of over TCP; a recreated pod starts with an empty cache.

Parallelism: llama.cpp splits the model by layers over every GPU of the group (its default
`--split-mode layer`, which its docs call pipeline parallelism), so the split degree is
`parallelism.pipeline` (the world size; tensor stays 1). Profiles that give it as
`parallelism.tensor` (with pipeline 1) still render, with a note. The group size is world size /
`node.gpus`. The image must contain `llama-server`, `rpc-server` (`ggml-rpc-server` in newer
builds) and `python3` (the workers' beacon), i.e. llama.cpp built with `-DGGML_RPC=ON`, for example
the `full` target of `.devops/cuda.Dockerfile` with that flag added. The project's published images
(`ghcr.io/ggml-org/llama.cpp:server-cuda-*`, `full-*`, `light-*`) are built with GGML_RPC off and
are refused for a group of more than one pod. `model.path` is a GGUF file.
"""

from __future__ import annotations

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import (
    Capabilities,
    Probes,
    RouterMetrics,
    Runtime,
    RuntimeParts,
    ServingSeries,
    extra_args,
    model_path,
    per_pod_rule,
    served_name,
)
from lwsgen.runtimes.versions import Since

NAME = "llamacpp"
SERVING_PORT = 8080
RPC_CACHE = "/lwsgen/rpc-cache"

ENGINE = versions.Engine(
    title="llama.cpp",
    # ghcr.io/ggml-org/llama.cpp:server-cuda-b6123 and custom RPC builds tagged b<N> (.github/workflows/docker.yml)
    tag=r"(?:^|-)b(\d+)(?:-|$)",
    checked="10470",
    oldest="4980",
    prefix="b",
    table=(
        Since(
            "rpc-cache",
            "4981",
            "PR #12496 (examples/rpc/rpc-server.cpp@b4981 lines 117-143, 181, 290)",
            "rpc-server -c caches received tensors by hash under $LLAMA_CACHE/rpc",
        ),
        Since(
            "multi-device-rpc",
            "6688",
            "PR #16276 (tools/rpc/rpc-server.cpp@b6688 lines 139-268; ggml-rpc.cpp@b6688 lines 1951-1981)",
            "one rpc-server offers every GPU of its host; before it, one device per rpc-server",
        ),
        Since(
            "ggml-rpc-server",
            "9824",
            "PR #25045 (tools/rpc/CMakeLists.txt: target rpc-server renamed ggml-rpc-server, no alias)",
            "the binary is ggml-rpc-server (the launch script finds either name)",
        ),
    ),
)

# rpc-server workers hold no weights: the leader's llama-server loads the GGUF and sends each worker
# its tensors over RPC (tools/rpc/README.md), so only the leader mounts the model (output/podneeds.py).
WORKERS_LOAD_MODEL = False

CAPABILITIES = Capabilities(
    derived_flags=("--model", "-m", "--alias", "--host", "--port", "--n-gpu-layers", "-ngl", "--rpc"),
    tensor_splits_heads=False,
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    # tools/server/server.cpp@b6123 lines 3955-4019; server-task.cpp at b10470 keeps both names.
    metrics=("llamacpp:requests_processing", "llamacpp:requests_deferred"),
    leader_ready_needs_workers=True,
    needs_api_access=False,
    # common/arg.cpp --api-key set_env("LLAMA_API_KEY") (b6123); tools/server/server.cpp keeps only /health
    # (and /models) public, so /metrics needs the key: the PodMonitor sends it as a bearer token.
    api_key_env="LLAMA_API_KEY",
    metrics_need_api_key=True,
    image_has_pytorch=False,
    # one GGUF file (model.source.file); the images are C++ only, with no python3 to download with
    hub_patterns=None,
    loads_one_file=True,
    image_has_hub_client=False,
    # llama-server reports no KV-cache fraction (server-task.cpp@b10470 /metrics): the picker scores queues only.
    router_metrics=RouterMetrics("llamacpp:requests_deferred", "llamacpp:requests_processing"),
    # tools/server/server-task.cpp@b10470 server_task_result_metrics::to_metrics: token counters, no
    # request counter and no latency histogram
    serving_series=ServingSeries(generated_tokens="llamacpp:tokens_predicted_total"),
    rules=(
        per_pod_rule("sum", "llamacpp:requests_deferred", autoscaling="queue-length", title="Requests deferred"),
        per_pod_rule("sum", "llamacpp:requests_processing", title="Requests processing"),
    ),
)


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    return CAPABILITIES


def check(profile: Profile) -> list[Finding]:
    par = profile.parallelism
    if not profile.model.path.startswith("/"):  # llama-server -m opens a file; it downloads nothing by this path
        message = (
            f"{profile.model.path!r} is not an absolute path; llama.cpp needs the GGUF file's path in the pod (for "
            "example /models/<model>.gguf)"
        )
        return [Finding(("model", "path"), message, "bad-model-path")]
    if par.tensor > 1 and par.pipeline > 1:
        return [
            Finding(
                ("parallelism", "tensor"),
                (
                    f"llama.cpp splits the model by layers over every GPU of the group and has no tensor x pipeline "
                    f"layout across RPC; set parallelism.pipeline to the number of GPUs ({profile.world_size}) and "
                    "leave tensor out"
                ),
                "not-supported",
            )
        ]
    return []


def warnings(profile: Profile) -> list[Finding]:
    if profile.parallelism.tensor > 1:
        return [
            Finding(
                ("parallelism", "tensor"),
                (
                    f"llama.cpp splits layers, not heads: tensor {profile.parallelism.tensor} is read as a layer split "
                    f"over {profile.world_size} GPUs; say it as parallelism.pipeline {profile.world_size} (what "
                    "lwsgen plan emits)"
                ),
                "layer-split",
            )
        ]
    return []


def rpc_servers_per_pod(profile: Profile) -> int:
    """rpc-servers each worker runs: one for all its GPUs, or one per GPU on older builds."""
    return 1 if versions.of(profile, ENGINE).has("multi-device-rpc") else profile.gpus_per_pod


def server_command(profile: Profile) -> tuple[str, ...]:
    metrics = ("--metrics",) if profile.monitoring.enabled else ()
    return (
        "llama-server",
        "--model",
        model_path(profile),
        "--alias",
        served_name(profile),
        "--host",
        "0.0.0.0",
        "--port",
        str(SERVING_PORT),
        "--n-gpu-layers",
        "999",
        *metrics,
        *extra_args(profile),
    )


def parts(profile: Profile) -> RuntimeParts:
    cache = RPC_CACHE if versions.of(profile, ENGINE).has("rpc-cache") else None
    return launchers.llamacpp_rpc(
        profile,
        server_command(profile),
        SERVING_PORT,
        Probes(port="http", startup_path="/health", readiness_path="/health"),
        servers_per_pod=rpc_servers_per_pod(profile),
        cache_dir=cache,
    )


RUNTIME = Runtime(
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    check=check,
    warnings=warnings,
    workers_load_model=WORKERS_LOAD_MODEL,
)
