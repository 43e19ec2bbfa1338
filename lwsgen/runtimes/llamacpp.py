"""llama.cpp over RPC: workers offer their GPUs with `rpc-server`, the leader serves with them.

Workers run `rpc-server --host 0.0.0.0 --port 50052` (`ggml-rpc-server` in newer builds), which
offers every GPU of the pod. The leader resolves (bounded, with retries) every worker of its own
group, `<name>-<group>-<i>.<subdomain>.<namespace>` for i in 1..size-1, derived from
`LWS_LEADER_ADDRESS` and `LWS_GROUP_SIZE`, waits until each rpc-server accepts connections, and
runs `llama-server --model <model.path> --host 0.0.0.0 --port 8080 --n-gpu-layers 999
--rpc <worker>:50052,...` (plus `--metrics` when monitoring is on). llama.cpp spreads the layers
over the leader's own GPUs and every worker's, in proportion to their memory. The leader keeps
checking the rpc-servers; when one stops answering for 3 polls it stops llama-server and exits 1,
so the group is recreated (llama-server would go on without that worker's layers). A worker waits
(bounded) for the leader's name first, so a worker whose leader never comes gives up.

Parallelism: llama.cpp has no separate tensor and pipeline degrees across RPC; it splits the
layers over every GPU of the group. `parallelism.tensor` is that number of GPUs (the world size),
`parallelism.pipeline` must stay 1, and the group size stays world size / `node.gpus`.
The image must contain `llama-server` and `rpc-server`, i.e. llama.cpp built with
`-DGGML_RPC=ON` (the project's published CUDA images are not). `model.path` is a GGUF file.
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import Capabilities, Probes, RuntimeParts, extra_args, model_path, per_pod_rule, served_name

NAME = "llamacpp"
SERVING_PORT = 8080

CAPABILITIES = Capabilities(
    derived_flags=("--model", "-m", "--alias", "--host", "--port", "--n-gpu-layers", "-ngl", "--rpc"),
    tensor_splits_heads=False,
    serving_port=SERVING_PORT,
    pipeline_parallel=False,
    metrics=("llamacpp:requests_processing", "llamacpp:requests_deferred"),
    leader_ready_needs_workers=True,
    needs_api_access=False,
    # common/arg.cpp --api-key set_env("LLAMA_API_KEY") (b6123); tools/server/server.cpp keeps only /health
    # (and /models) public, so /metrics needs the key: the PodMonitor sends it as a bearer token.
    api_key_env="LLAMA_API_KEY",
    metrics_need_api_key=True,
    image_has_pytorch=False,
    rules=(
        per_pod_rule("sum", "llamacpp:requests_deferred", autoscaling="queue-length"),
        per_pod_rule("sum", "llamacpp:requests_processing"),
    ),
)


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
    return launchers.llamacpp_rpc(
        profile,
        server_command(profile),
        SERVING_PORT,
        Probes(port="http", startup_path="/health", readiness_path="/health"),
    )
