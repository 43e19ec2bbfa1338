"""vLLM across the group: natively (`--nnodes`, `--headless` workers) or on a Ray cluster.

Launch (`launch.mode`; the default is `native` from vLLM 0.11.1, `ray` before it):
- `native`: every pod runs `vllm serve <model.path> --tensor-parallel-size <tensor>
  --pipeline-parallel-size <pipeline> --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)
  --master-addr $(LWS_LEADER_ADDRESS) --master-port 29501`; the leader (node rank 0) adds `--host
  0.0.0.0 --port 8080` and serves the OpenAI-compatible API, the workers add `--headless`. vLLM's
  multiprocessing executor spans the nodes (no Ray), with the torch.distributed store on the
  leader's port 29501 and ZMQ and NCCL on ports it picks (the NetworkPolicy opens every port
  between the group's pods). `VLLM_HOST_IP` is the pod's IP. The leader waits (bounded) until its
  workers' names resolve, each worker until the leader's port 29501 answers. vLLM's leader would
  notice a lost node only at its next step (an idle group would go on reporting healthy), so every
  worker answers on a beacon port (29600) from its start, the leader waits for every beacon before
  the engine and watches them while serving: when one is gone for 3 polls it stops the engine and
  exits 1, and the group is recreated.
- `ray`: the leader starts the Ray head (`ray start --head`, port 6379), waits (bounded by
  `launch.rendezvousTimeoutSeconds`, counted from the pod's start) until `LWS_GROUP_SIZE` Ray
  nodes are alive, then runs `vllm serve` with `--distributed-executor-backend ray`. Workers retry
  until the leader's address resolves and its Ray head answers, then `ray start
  --address=$(LWS_LEADER_ADDRESS):6379 --block` (every call bounded; a join that fails at once is
  retried within the bound). The leader watches the Ray node count while serving: when a node is
  gone (Ray marks it dead after 5 failed health checks 3 s apart), it stops the engine within 3
  polls and exits 1, so the group is recreated instead of serving on fewer nodes. An image
  without Ray fails at once with that sentence.

Metrics are on the serving port: `vllm:num_requests_waiting`, `vllm:num_requests_running`, and the
KV-cache usage, `vllm:kv_cache_usage_perc` from 0.9.2 (`vllm:gpu_cache_usage_perc` before it; that
name is hidden from 0.11.0 and gone in 0.12.0). `model.path` is a hub id or a weights directory.
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import Capabilities, Probes, RuntimeParts, per_pod_rule
from lwsgen.runtimes.versions import Since

NAME = "vllm"
SERVING_PORT = 8080
LAUNCH_MODES = ("native", "ray")
FAMILY = launchers.VllmFamily(cli="vllm", module=None, host_ip_env="VLLM_HOST_IP")

READS_HUB_IDS = True  # model.path may be a hub id the engine downloads at start

ENGINE = versions.Engine(
    title="vLLM",
    # vllm/vllm-openai:v0.8.5, v0.10.1.1, v0.33.0 (and -x86_64, -aarch64 variants)
    tag=r"^v?(\d+\.\d+\.\d+(?:\.\d+)?(?:rc\d+)?(?:\.post\d+)?)(?:-|$)",
    checked="0.33.0",
    table=(
        Since(
            "serve-cli",
            "0.8.5",
            "pyproject.toml@v0.8.5 line 41 (vllm = vllm.entrypoints.cli.main:main); the oldest version lwsgen checked",
            "vllm serve <model>",
        ),
        Since(
            "kv-cache-usage-perc",
            "0.9.2",
            "PR #18354; vllm/v1/metrics/loggers.py@v0.9.2 (absent in v0.9.1); gpu_cache_usage_perc hidden in "
            "v0.11.0, removed in v0.12.0",
            "the KV-cache usage gauge is vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before)",
        ),
        Since(
            "native-multi-node",
            "0.11.1",
            "PR #23691; vllm/engine/arg_utils.py@v0.11.1 lines 757-760, vllm/entrypoints/cli/serve.py@v0.11.1 "
            "lines 114-129 (headless nodes with node rank > 0)",
            "vllm serve --nnodes/--node-rank/--master-addr/--master-port with --headless workers, no Ray",
        ),
    ),
)


def _rules(kv_metric: str) -> Capabilities:
    return Capabilities(
        derived_flags=launchers.VLLM_FAMILY_FLAGS,
        serving_port=SERVING_PORT,
        pipeline_parallel=True,
        metrics=("vllm:num_requests_waiting", "vllm:num_requests_running", kv_metric),
        leader_ready_needs_workers=True,
        needs_api_access=False,
        # vllm/envs.py VLLM_API_KEY (since v0.3.0, still read in v0.33.0); --api-key wins. Only /v1
        # (and /v2, /inference) need the key: /health and /metrics stay open.
        api_key_env="VLLM_API_KEY",
        rules=(
            per_pod_rule("sum", "vllm:num_requests_waiting", autoscaling="queue-length"),
            per_pod_rule("sum", "vllm:num_requests_running"),
            per_pod_rule("max", kv_metric, autoscaling="kv-cache-usage"),
        ),
    )


CURRENT, BEFORE_0_9_2 = _rules("vllm:kv_cache_usage_perc"), _rules("vllm:gpu_cache_usage_perc")


def capabilities(version: versions.EngineVersion) -> Capabilities:
    return CURRENT if version.has("kv-cache-usage-perc") else BEFORE_0_9_2


def mode(profile: Profile) -> str:
    """launch.mode, else native where the version has it."""
    if profile.launch.mode:
        return profile.launch.mode
    return "native" if versions.of(profile, ENGINE).has("native-multi-node") else "ray"


def check(profile: Profile) -> list[tuple[tuple, str, str]]:
    if profile.launch.mode == "native":
        problem = versions.of(profile, ENGINE).needs("native-multi-node", "launch.mode native")
        if problem:
            return [(("launch", "mode"), problem, "needs-newer-engine")]
    return []


PROBES = Probes(port="http", startup_path="/health", readiness_path="/health")


def parts(profile: Profile) -> RuntimeParts:
    if mode(profile) == "native":
        return launchers.vllm_family_native(profile, FAMILY, SERVING_PORT, PROBES)
    return launchers.vllm_family_on_ray(profile, FAMILY, SERVING_PORT, PROBES)
