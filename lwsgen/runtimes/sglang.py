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

Data and expert parallelism: `parallelism.data` > 1 is SGLang's data-parallel attention inside one
tensor-parallel group of data x tensor GPUs: `--tp-size <data x tensor>` with `--attn-dp-size
<data>` from 0.5.22 (`--enable-dp-attention --dp-size <data>` before); `parallelism.expert` adds
`--ep-size` of the same size, `parallelism.allToAll` DeepEP (`--moe-a2a-backend deepep`, from
0.4.10.post2; `--enable-deepep-moe` before; `--deepep-mode normal|low_latency|auto`). Under
data-parallel attention every node's schedulers report their own queue: from 0.4.10 the workers
also get `--host 0.0.0.0 --port 30000 --enable-metrics` (their placeholder server serves
`/metrics`), the PodMonitor scrapes every pod of the LeaderWorkerSet, and each record sums a group
onto its leader pod (`label_replace` of the pod label), which the autoscaler reads.

Probes, by version (only node rank 0 serves; the other ranks' placeholder server has no engine
behind it, so only the leader is probed): `/ready` from 0.5.20, which answers at once whether the
engine takes requests; before it, `/health`, which from 0.4.10.post2 runs a one-token generation
for up to `SGLANG_HEALTH_CHECK_TIMEOUT` (20 s), so the probe allows 25 s per call (a 5 s timeout
would flap under long prefills); before 0.4.10.post2 `/health` answers at once (5 s).
"""

from __future__ import annotations

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import (
    KV_PANEL,
    Capabilities,
    KvTransfer,
    Port,
    Probes,
    RouterMetrics,
    Runtime,
    RuntimeParts,
    ServingSeries,
    extra_args,
    model_path,
    per_group_rule,
    per_pod_rule,
    served_name,
)
from lwsgen.runtimes.versions import Since

NAME = "sglang"
DATA_AND_EXPERT = True  # parallelism.data and parallelism.expert are derived for SGLang
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
    oldest="0.4.6",
    table=(
        Since(
            "pp-size",
            "0.4.6.post2",
            "python/sglang/srt/server_args.py@v0.4.6.post2 lines 655-658 (absent in v0.4.6.post1)",
            "pipeline parallelism, --pp-size",
        ),
        Since(
            "worker-metrics",
            "0.4.10",
            "python/sglang/srt/utils.py@v0.4.10 launch_dummy_health_check_server(..., enable_metrics): the other "
            "nodes serve /metrics with --enable-metrics; scheduler metrics labelled dp_rank",
            "every node of the group serves its schedulers' metrics on its --host/--port",
        ),
        Since(
            "moe-a2a-backend",
            "0.4.10.post2",
            "python/sglang/srt/server_args.py@v0.4.10.post2 lines 1383-1389 (--enable-deepep-moe deprecated there)",
            "--moe-a2a-backend deepep (--enable-deepep-moe before)",
        ),
        Since(
            "health-generates",
            "0.4.10.post2",
            "PR #8444; python/sglang/srt/entrypoints/http_server.py@v0.4.10.post2 lines 233-300",
            "/health runs a one-token generation, up to SGLANG_HEALTH_CHECK_TIMEOUT (20 s)",
        ),
        Since(
            "attn-dp-size",
            "0.5.22",
            "python/sglang/srt/arg_groups/fields/parallel.py@v0.5.22 lines 81-90; --enable-dp-attention deprecated, "
            "server_args.py@v0.5.22 lines 418-423",
            "data-parallel attention as --attn-dp-size (--enable-dp-attention --dp-size before)",
        ),
        Since(
            "heterogeneous-tp",
            "0.4.9",
            "PR #6793 (MLA models from 0.4.6.post4, PR #5922); "
            "python/sglang/srt/disaggregation/mooncake/conn.py@v0.4.9",
            "prefill and decode with different tensor-parallel sizes",
        ),
        Since(
            "ready-endpoint",
            "0.5.20",
            "python/sglang/srt/entrypoints/http_server.py@v0.5.20 lines 662-666 (absent in v0.5.19)",
            "/ready: 200 when the engine takes requests, 503 while starting, paused or shutting down; no generation",
        ),
    ),
)


# Flags only newer SGLang has, checked on output against the image tag in the object (output/podneeds.py).
FLAG_FEATURES = {"--pp-size": "pp-size", "--attn-dp-size": "attn-dp-size"}

CAPABILITIES = Capabilities(
    derived_flags=(
        "--model-path",
        "--served-model-name",
        "--tp",
        "--tp-size",
        "--pp-size",
        "--pipeline-parallel-size",
        "--dp",
        "--dp-size",
        "--data-parallel-size",
        "--enable-dp-attention",
        "--attn-dp-size",
        "--attention-data-parallel-size",
        "--ep",
        "--ep-size",
        "--expert-parallel-size",
        "--moe-a2a-backend",
        "--enable-deepep-moe",
        "--deepep-mode",
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
    router_metrics=RouterMetrics("sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage"),
    # python/sglang/srt/observability/metrics_collector.py@v0.5.23 lines 1941, 2041, 2051, 1861 (the
    # tokenizer manager's, on the leader; with --enable-metrics, which lwsgen passes) and the
    # scheduler's retractions, line 559
    serving_series=ServingSeries(
        "sglang:num_requests_total",
        "sglang:time_to_first_token_seconds",
        "sglang:inter_token_latency_seconds",
        "sglang:generation_tokens_total",
        "sglang:num_retracted_requests_total",
    ),
    rules=(
        per_pod_rule("sum", "sglang:num_queue_reqs", autoscaling="queue-length", title="Requests waiting"),
        per_pod_rule("sum", "sglang:num_running_reqs", title="Requests running"),
        per_pod_rule("max", "sglang:token_usage", autoscaling="kv-cache-usage", **KV_PANEL),
    ),
)


# Under data-parallel attention each node's schedulers report their own queue (labelled dp_rank):
# every pod is scraped and each group summed onto its leader.
EVERY_POD = CAPABILITIES._replace(
    metrics_on_every_pod=True,
    rules=(
        per_group_rule("sum", "sglang:num_queue_reqs", autoscaling="queue-length", title="Requests waiting"),
        per_group_rule("sum", "sglang:num_running_reqs", title="Requests running"),
        per_group_rule("max", "sglang:token_usage", autoscaling="kv-cache-usage", **KV_PANEL),
    ),
)


def metrics_on_every_pod(profile: Profile, version: versions.EngineVersion) -> bool:
    return profile.parallelism.data > 1 and profile.group_size > 1 and version.has("worker-metrics")


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    return EVERY_POD if profile is not None and metrics_on_every_pod(profile, version) else CAPABILITIES


def check(profile: Profile) -> list[Finding]:
    version, par = versions.of(profile, ENGINE), profile.parallelism
    if par.pipeline > 1:
        problem = version.needs("pp-size", f"parallelism.pipeline {par.pipeline}")
        if problem:
            return [Finding(("parallelism", "pipeline"), problem, "needs-newer-engine")]
    if par.data > 1 and par.all_to_all == "deepep-auto" and not version.has("moe-a2a-backend"):
        # server_args.py@v0.4.6.post1 lines 309-318: "DeepEP MoE `auto` mode is not supported with DP Attention."
        problem = version.needs("moe-a2a-backend", "allToAll deepep-auto with data-parallel attention")
        return [Finding(("parallelism", "allToAll"), problem, "needs-newer-engine")]
    return []


def parallel_flags(profile: Profile) -> tuple[str, ...]:
    """SGLang's parallelism: one tensor-parallel group of data x tensor GPUs per pipeline stage,
    data-parallel attention inside it, experts over the world."""
    version, par = versions.of(profile, ENGINE), profile.parallelism
    flags = ["--tp-size", str(par.data * par.tensor)]
    if par.pipeline > 1:
        flags += ["--pp-size", str(par.pipeline)]
    if par.data > 1:
        if version.has("attn-dp-size"):
            flags += ["--attn-dp-size", str(par.data)]
        else:
            flags += ["--enable-dp-attention", "--dp-size", str(par.data)]
    if par.expert:
        flags += ["--ep-size", str(par.data * par.tensor)]
    if par.all_to_all != "default":
        mode = {"deepep-high-throughput": "normal", "deepep-low-latency": "low_latency", "deepep-auto": "auto"}
        backend = ["--moe-a2a-backend", "deepep"] if version.has("moe-a2a-backend") else ["--enable-deepep-moe"]
        flags += [*backend, "--deepep-mode", mode[par.all_to_all]]
    return tuple(flags)


def probes(version: versions.EngineVersion) -> Probes:
    if version.has("ready-endpoint"):
        return Probes(port="http", startup_path="/ready", readiness_path="/ready")
    timeout = GENERATING_HEALTH_TIMEOUT if version.has("health-generates") else 5
    return Probes(port="http", startup_path="/health", readiness_path="/health", readiness_timeout=timeout)


def node_command(profile: Profile) -> tuple[str, ...]:
    """What every pod of the group runs."""
    return (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model_path(profile),
        "--served-model-name",
        served_name(profile),
        # --tp-size itself: --tp works only as argparse's prefix of it (server_args.py has no --tp)
        *parallel_flags(profile),
        "--dist-init-addr",
        f"$(LWS_LEADER_ADDRESS):{DIST_INIT_PORT}",
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
    )


def parts(profile: Profile) -> RuntimeParts:
    node, version = node_command(profile), versions.of(profile, ENGINE)
    metrics = ("--enable-metrics",) if profile.monitoring.enabled else ()
    serve = ("--host", "0.0.0.0", "--port", str(SERVING_PORT))
    leader = (*node, *serve, *metrics, *extra_args(profile))
    # the other nodes' placeholder server (node rank > 0) serves their schedulers' metrics too
    everywhere = profile.monitoring.enabled and metrics_on_every_pod(profile, version)
    worker = (*node, *serve, *metrics, *extra_args(profile)) if everywhere else (*node, *extra_args(profile))
    parts = launchers.dial_leader(
        profile,
        leader,
        worker,
        leader_ports=(Port("http", SERVING_PORT), Port("dist-init", DIST_INIT_PORT)),
        probes=probes(version),
        rendezvous_port=DIST_INIT_PORT,
    )
    if everywhere:
        parts = parts._replace(worker=parts.worker._replace(ports=(Port("http", SERVING_PORT), *parts.worker.ports)))
    return parts


# Prefill/decode disaggregation (roles): docs/advanced_features/pd_disaggregation.md and the LWS
# guide (docs/references/multi_node_deployment/lws_pd/lws_pd_deploy.md).
# The sglang-router a set of roles runs (derive/disaggregation.py): --port and --prometheus-port defaults
# (sgl-model-gateway py_src/sglang_router/router_args.py).
ROUTER_PORT, ROUTER_METRICS_PORT = 30000, 29000
BOOTSTRAP_PORT = 8998  # --disaggregation-bootstrap-port's default (server_args.py), set explicitly
# What the router reads a prefill pod's bootstrap port from (a fixed name: sglang_router/router_args.py@0.3.2
# line 925); only prefill serves the bootstrap server (srt/managers/disagg_service.py@v0.5.23).
BOOTSTRAP_ANNOTATION = "sglang.ai/bootstrap-port"
KV_FLAGS = (
    "--disaggregation-mode",
    "--disaggregation-transfer-backend",
    "--disaggregation-ib-device",
    "--disaggregation-bootstrap-port",
)
# Flags that must be the same on both roles, or the transfer refuses (disaggregation/common/conn.py
# @v0.5.23: page size and KV cache dtype; "Set the same policy on both roles" for the allocation policy).
KV_MATCHING = ("--page-size", "--kv-cache-dtype", "--disaggregation-decode-allocation-policy")


def kv_transfer(profile: Profile, role: str, roles: tuple[str, ...]) -> KvTransfer:
    d = profile.disaggregation
    args = ["--disaggregation-mode", role]
    if d.transfer_backend is not None:
        args += ["--disaggregation-transfer-backend", d.transfer_backend]
    if d.ib_devices:
        args += ["--disaggregation-ib-device", ",".join(d.ib_devices)]
    if role != "prefill":
        return KvTransfer(tuple(args), "sglang-router")
    return KvTransfer(
        (*args, "--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT)),
        "sglang-router",
        leader_ports=(Port("bootstrap", BOOTSTRAP_PORT),),
        annotations={BOOTSTRAP_ANNOTATION: str(BOOTSTRAP_PORT)},
    )


def kv_problems(top: Profile) -> list[Finding]:
    """What SGLang needs of a disaggregated profile (check/disaggregation.py)."""
    out, roles = [], top.roles
    version = versions.of(top, ENGINE)
    sizes = {role: p.parallelism.data * p.parallelism.tensor for role, p in roles.items()}
    if len(set(sizes.values())) > 1 and not version.has("heterogeneous-tp"):
        problem = version.needs("heterogeneous-tp", f"tensor sizes {sizes}")
        out.append(Finding(("roles", "decode", "parallelism"), problem, "needs-newer-engine"))
    if "encode" in roles:
        message = (
            "SGLang's encoder disaggregation (--encoder-only, --language-only, 0.5.7 and newer) is routed by smg "
            "1.13's --epd-disaggregation, not by the sglang-router lwsgen runs: leave roles.encode out, or use vLLM"
        )
        out.append(Finding(("roles", "encode"), message, "not-supported"))
    return out


RUNTIME = Runtime(
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    check=check,
    kv_transfer=kv_transfer,
    kv_problems=kv_problems,
    kv_matching=KV_MATCHING,
    kv_flags=KV_FLAGS,
    data_and_expert=DATA_AND_EXPERT,
    reads_hub_ids=READS_HUB_IDS,
    flag_features=FLAG_FEATURES,
)
