"""SGLang, every pod running the same `sglang.launch_server` as one node of the group.

Every pod runs `python3 -m sglang.launch_server --model-path <model.path> --tp-size <tensor>`
(`--pp-size <pipeline>` when pipeline > 1, from SGLang 0.4.6.post2; with pipeline 1, `--tp-size`
is the world size, so tensor parallelism spans the nodes) with `--dist-init-addr
$(LWS_LEADER_ADDRESS):20000 --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)`; the
leader adds `--host 0.0.0.0 --port 30000` and, when monitoring is on, `--enable-metrics`. Before
the engine, the leader waits (bounded) until every worker's name resolves and each worker until
the leader's name resolves and its rendezvous port 20000 accepts connections, so a missing or
stale peer is a "waiting" line and then a clear failure instead of a silent wait inside
torch.distributed. A lost peer fails the others through SGLang itself: its scheduler broadcasts
across the group on every loop iteration, and a broken connection ends the process. Metrics are
on the serving port (`sglang:num_queue_reqs`, `sglang:num_running_reqs`, `sglang:token_usage`).

Probes, by version (only node rank 0 serves; the other ranks' placeholder server has no engine
behind it, so only the leader is probed): `/ready` from 0.5.20, which answers at once whether the
engine takes requests; before it, `/health`, which from 0.4.10.post2 runs a one-token generation
for up to `SGLANG_HEALTH_CHECK_TIMEOUT` (20 s), so the probe allows 25 s per call (a 5 s timeout
would flap under long prefills); before 0.4.10.post2 `/health` answers at once (5 s).
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers, versions
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
from lwsgen.runtimes.versions import Since

NAME = "sglang"
SERVING_PORT = 30000
DIST_INIT_PORT = 20000
# SGLANG_HEALTH_CHECK_TIMEOUT's default (http_server.py, 0.4.6.post1 line 143 to 0.5.23 line 218),
# plus a margin for the HTTP round trip.
GENERATING_HEALTH_TIMEOUT = 25

READS_HUB_IDS = True  # model.path may be a hub id the engine downloads at start

ENGINE = versions.Engine(
    title="SGLang",
    # lmsysorg/sglang tags: v0.4.6.post1-cu124, v0.5.5-cu129-amd64, v0.5.23
    tag=r"^v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?:-|$)",
    checked="0.5.23",
    table=(
        Since(
            "pp-size",
            "0.4.6.post2",
            "python/sglang/srt/server_args.py@v0.4.6.post2 lines 655-658 (absent in v0.4.6.post1)",
            "pipeline parallelism, --pp-size",
        ),
        Since(
            "health-generates",
            "0.4.10.post2",
            "PR #8444; python/sglang/srt/entrypoints/http_server.py@v0.4.10.post2 lines 233-300",
            "/health runs a one-token generation, up to SGLANG_HEALTH_CHECK_TIMEOUT (20 s)",
        ),
        Since(
            "ready-endpoint",
            "0.5.20",
            "python/sglang/srt/entrypoints/http_server.py@v0.5.20 lines 662-666 (absent in v0.5.19)",
            "/ready: 200 when the engine takes requests, 503 while starting, paused or shutting down; no generation",
        ),
    ),
)

CAPABILITIES = Capabilities(
    derived_flags=(
        "--model-path",
        "--served-model-name",
        "--tp",
        "--tp-size",
        "--pp-size",
        "--pipeline-parallel-size",
        "--dist-init-addr",
        "--nnodes",
        "--node-rank",
        "--host",
        "--port",
    ),
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    # srt/metrics/collector.py@v0.4.6.post1 lines 42-75; the same names in
    # srt/observability/metrics_collector.py@v0.5.23.
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


def capabilities(version: versions.EngineVersion) -> Capabilities:
    return CAPABILITIES


def check(profile: Profile) -> list[tuple[tuple, str, str]]:
    version = versions.of(profile, ENGINE)
    if profile.parallelism.pipeline > 1:
        problem = version.needs("pp-size", f"parallelism.pipeline {profile.parallelism.pipeline}")
        if problem:
            return [(("parallelism", "pipeline"), problem, "needs-newer-engine")]
    return []


def probes(version: versions.EngineVersion) -> Probes:
    if version.has("ready-endpoint"):
        return Probes(port="http", startup_path="/ready", readiness_path="/ready")
    timeout = GENERATING_HEALTH_TIMEOUT if version.has("health-generates") else 5
    return Probes(port="http", startup_path="/health", readiness_path="/health", readiness_timeout=timeout)


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
        # --tp-size itself: --tp works only as argparse's prefix of it (server_args.py has no --tp)
        "--tp-size",
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
        probes=probes(versions.of(profile, ENGINE)),
        rendezvous_port=DIST_INIT_PORT,
    )
