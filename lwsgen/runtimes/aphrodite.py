"""Aphrodite Engine (a vLLM fork) on a Ray cluster that spans the group.

Started like vllm (Ray head on the leader, bounded wait for `LWS_GROUP_SIZE` nodes, workers retry
until the head answers, the leader watching the node count while serving), with Aphrodite's own
server:
`python3 -m aphrodite.endpoints.openai.api_server` on its default port 2242 with
`--tensor-parallel-size`, `--pipeline-parallel-size` and `--distributed-executor-backend ray`.
Metrics are on the serving port with the `aphrodite:` prefix (`aphrodite:num_requests_waiting`,
`aphrodite:num_requests_running`, `aphrodite:gpu_cache_usage_perc`). Health is `/health`.
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import Capabilities, Probes, RuntimeParts, per_pod_rule

NAME = "aphrodite"
SERVING_PORT = 2242

CAPABILITIES = Capabilities(
    derived_flags=launchers.OPENAI_ON_RAY_FLAGS,
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    metrics=("aphrodite:num_requests_waiting", "aphrodite:num_requests_running", "aphrodite:gpu_cache_usage_perc"),
    leader_ready_needs_workers=True,
    needs_api_access=False,
    # aphrodite/envs.py APHRODITE_API_KEY (commit 657aec0c, since v0.5.0); guards /v1, /health and /metrics stay open.
    api_key_env="APHRODITE_API_KEY",
    rules=(
        per_pod_rule("sum", "aphrodite:num_requests_waiting", autoscaling="queue-length"),
        per_pod_rule("sum", "aphrodite:num_requests_running"),
        per_pod_rule("max", "aphrodite:gpu_cache_usage_perc", autoscaling="kv-cache-usage"),
    ),
)


def parts(profile: Profile) -> RuntimeParts:
    serve = launchers.openai_server_on_ray(profile, "aphrodite.endpoints.openai.api_server", SERVING_PORT)
    return launchers.ray_group(
        profile, serve, SERVING_PORT, Probes(port="http", startup_path="/health", readiness_path="/health")
    )
