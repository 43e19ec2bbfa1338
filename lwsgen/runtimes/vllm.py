"""vLLM on a Ray cluster that spans the group.

The leader starts the Ray head (`ray start --head`, port 6379), waits (bounded by
`launch.rendezvousTimeoutSeconds`, counted from the pod's start) until `LWS_GROUP_SIZE` Ray nodes
are alive, then serves the
OpenAI-compatible API on port 8080 with `--tensor-parallel-size` and `--pipeline-parallel-size`
taken from `parallelism` and `--distributed-executor-backend ray`. Workers retry until the
leader's address resolves and its Ray head answers (the leader's DNS name is unresolvable for a
while after the group is created), then `ray start --address=$(LWS_LEADER_ADDRESS):6379 --block`
(every call bounded; a join that fails at once is retried within the bound).
The leader watches the Ray node count while serving: when a node is gone (Ray marks it dead
after 5 failed health checks 3 s apart), it stops the engine within 3 polls and exits 1, so the
group is recreated instead of serving on fewer nodes.
Metrics are on the serving port (`vllm:num_requests_waiting`, `vllm:num_requests_running`,
`vllm:kv_cache_usage_perc`; `vllm:gpu_cache_usage_perc` was removed upstream).
`model.path` is a hub id or a weights directory.
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import Capabilities, Probes, RuntimeParts, per_pod_rule

NAME = "vllm"
SERVING_PORT = 8080

CAPABILITIES = Capabilities(
    derived_flags=launchers.OPENAI_ON_RAY_FLAGS,
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    metrics=("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"),
    leader_ready_needs_workers=True,
    needs_api_access=False,
    # vllm/envs.py VLLM_API_KEY (since v0.3.0); read when --api-key is not given
    # (vllm/entrypoints/openai/api_server.py v0.8.5, lines 842-843); guards /v1, /health and /metrics stay open.
    api_key_env="VLLM_API_KEY",
    rules=(
        per_pod_rule("sum", "vllm:num_requests_waiting", autoscaling="queue-length"),
        per_pod_rule("sum", "vllm:num_requests_running"),
        per_pod_rule("max", "vllm:kv_cache_usage_perc", autoscaling="kv-cache-usage"),
    ),
)


def parts(profile: Profile) -> RuntimeParts:
    serve = launchers.openai_server_on_ray(profile, "vllm.entrypoints.openai.api_server", SERVING_PORT)
    return launchers.ray_group(
        profile, serve, SERVING_PORT, Probes(port="http", startup_path="/health", readiness_path="/health")
    )
