"""SGLang, every pod running the same `sglang.launch_server` as one node of the group.

Every pod runs `python3 -m sglang.launch_server --model-path <model.path> --tp <tensor>`
(`--pp-size <pipeline>` when pipeline > 1; with pipeline 1, `--tp` is the world size, so tensor
parallelism spans the nodes) with `--dist-init-addr $(LWS_LEADER_ADDRESS):20000
--nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)`; the leader adds
`--host 0.0.0.0 --port 30000` and, when monitoring is on, `--enable-metrics`. Before the engine,
the leader waits (bounded) until every worker's name resolves and each worker until the leader's
name resolves and its rendezvous port 20000 accepts connections, so a missing or stale peer is a
"waiting" line and then a clear failure instead of a silent wait inside torch.distributed. A lost
peer fails the others through SGLang itself: its scheduler broadcasts across the group on every
loop iteration, and a broken connection ends the process. Health is `/health` on the serving
port, metrics on the same port (`sglang:num_queue_reqs`, `sglang:num_running_reqs`, `sglang:token_usage`).
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import (
    Capabilities,
    Port,
    Probes,
    RuntimeParts,
    extra_args,
    model_path,
    per_pod_rule,
    served_name,
)

NAME = "sglang"
SERVING_PORT = 30000
DIST_INIT_PORT = 20000

CAPABILITIES = Capabilities(
    derived_flags=(
        "--model-path",
        "--served-model-name",
        "--tp",
        "--tp-size",
        "--pp-size",
        "--dist-init-addr",
        "--nnodes",
        "--node-rank",
        "--host",
        "--port",
    ),
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    metrics=("sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage"),
    leader_ready_needs_workers=True,
    needs_api_access=False,
    # python/sglang/srt/server_args.py --api-key; no environment variable (v0.4.6.post1, v0.5.23).
    # srt/utils.py (0.4.6.post1, lines 790-802) leaves /health* and /metrics open.
    api_key_flag="--api-key",
    rules=(
        per_pod_rule("sum", "sglang:num_queue_reqs", autoscaling="queue-length"),
        per_pod_rule("sum", "sglang:num_running_reqs"),
        per_pod_rule("max", "sglang:token_usage", autoscaling="kv-cache-usage"),
    ),
)


def node_command(profile: Profile) -> tuple[str, ...]:
    """What every pod of the group runs."""
    pipeline = ("--pp-size", str(profile.parallelism.pipeline)) if profile.parallelism.pipeline > 1 else ()
    return (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model_path(profile),
        "--served-model-name",
        served_name(profile),
        "--tp",
        str(profile.parallelism.tensor),
        *pipeline,
        "--dist-init-addr",
        f"$(LWS_LEADER_ADDRESS):{DIST_INIT_PORT}",
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
    )


def parts(profile: Profile) -> RuntimeParts:
    node = node_command(profile)
    metrics = ("--enable-metrics",) if profile.monitoring.enabled else ()
    leader = (*node, "--host", "0.0.0.0", "--port", str(SERVING_PORT), *metrics, *extra_args(profile))
    return launchers.dial_leader(
        profile,
        leader,
        (*node, *extra_args(profile)),
        leader_ports=(Port("http", SERVING_PORT), Port("dist-init", DIST_INIT_PORT)),
        probes=Probes(port="http", startup_path="/health", readiness_path="/health"),
        rendezvous_port=DIST_INIT_PORT,
    )
