"""TensorRT-LLM's OpenAI-compatible `trtllm-serve`, one MPI rank per GPU across the group.

The launch is the one triton-trtllm uses (and so is its failure as a group): the leader waits
(bounded) for every pod of its group, then `mpirun -np <world size>` over the group's pods through
`kubectl exec` runs `trtllm-llmapi-launch trtllm-serve <model.path> --tp_size <tensor> --pp_size
<pipeline>` on every rank. trtllm-llmapi-launch joins its arguments and re-splits them on spaces,
so the serve command travels as JSON in `LWSGEN_SERVE_ARGV` and `exec-argv.sh` runs it argument by
argument: extraArgs with spaces or JSON arrive unchanged. Rank 0, on the leader, serves HTTP on
8000 and the other ranks join its MPI session. The stock NGC image
`nvcr.io/nvidia/tensorrt-llm/release:<ver>` works unmodified (kubectl from an init container,
scripts from a ConfigMap). Health is `/health`.

Metrics, by version: from TensorRT-LLM 1.1.0rc5 trtllm-serve serves Prometheus metrics at
`/prometheus/metrics` (not `/metrics`, which is a JSON list of iteration stats that drains as it is
read), registered only when the LLM API option `return_perf_metrics` is true: lwsgen writes it into
an options file (`--extra_llm_api_options`, from the scripts ConfigMap) when monitoring is on,
together with `model.llmApiOptions` (lwsgen's keys win, and render says so). The
request histograms give the queue/compute ratio (`queue-compute-ratio`); their names gained a
`trtllm_` prefix in a later release, so every record reads either spelling. From 1.3.0rc0 the
iteration gauges (`trtllm_num_requests_waiting`, `trtllm_num_requests_running`,
`trtllm_kv_cache_utilization`, which need `enable_iter_perf_stats`) add `queue-length` and
`kv-cache-usage`. Before 1.1.0rc5 there are no Prometheus metrics, and it scales on group GPU
utilisation only.
"""

from __future__ import annotations

import json

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import (
    KV_PANEL,
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
    per_pod_rule,
    plain_env,
    safe_ratio,
)
from lwsgen.runtimes.versions import Since

NAME = "trtllm-serve"
MPIRUN = "/opt/hpcx/ompi/bin/mpirun"  # HPC-X OpenMPI as shipped in NGC images
SERVING_PORT = 8000

OPTIONS_FILE = "trtllm-options.yaml"  # in the scripts ConfigMap

READS_HUB_IDS = True  # model.path may be a hub id the engine downloads at start

ENGINE = versions.Engine(
    title="TensorRT-LLM",
    # nvcr.io/nvidia/tensorrt-llm/release:1.2.1, 1.0.0rc4, 1.2.0rc6.post3 (no leading v)
    tag=r"^v?(\d+\.\d+\.\d+(?:rc\d+)?(?:\.post\d+)?)(?:-|$)",
    checked="1.4.0rc1",
    oldest="0.18.2",
    table=(
        Since(
            "prometheus-metrics",
            "1.1.0rc5",
            "PR #5785 (tensorrt_llm/serve/openai_server.py mount_metrics, tensorrt_llm/metrics/collector.py); "
            "the first release documented with it is 1.1.0rc5 (Dynamo's TensorRT-LLM Prometheus guide)",
            "/prometheus/metrics with return_perf_metrics: request counter and latency/queue-time histograms",
        ),
        Since(
            "iteration-gauges",
            "1.3.0rc0",
            "PR #12545 (collector.py num_requests_running, num_requests_waiting, kv_cache_utilization)",
            "queue and KV-cache gauges on /prometheus/metrics, with enable_iter_perf_stats",
        ),
    ),
)

# --extra_llm_api_options: lwsgen's options file (model.llmApiOptions goes into it)
DERIVED_FLAGS = ("--host", "--port", "--tp_size", "--pp_size", "--extra_llm_api_options")
OWN_FIELDS = (("model", "llmApiOptions"),)


def _either(metric: str) -> str:
    """A rate over the metric with or without the trtllm_ prefix it gained in a later release."""
    return f"rate(trtllm_{metric}{{sel}}[1m]) or rate({metric}{{sel}}[1m])"


def _sum(expr: str) -> str:
    return f"sum by ({{by}}) ({expr})"


QUEUE = _sum(_either("request_queue_time_seconds_sum"))
END_TO_END = _sum(_either("e2e_request_latency_seconds_sum"))
REQUEST_RULES = (
    RecordingRule(
        "namespace_pod:trtllm_request_success:rate1m",
        _sum(_either("request_success_total")),
        title="Requests finished",
        unit="reqps",
    ),
    RecordingRule(
        "namespace_pod:trtllm_request_queue_time_seconds_per_request:rate1m",
        safe_ratio(QUEUE, _sum(_either("request_queue_time_seconds_count"))),
        title="Queue time per request",
        unit="s",
    ),
    # Time in the queue per second of time being served (end to end minus the queue).
    RecordingRule(
        "namespace_pod:trtllm_queue_compute:ratio_rate1m",
        safe_ratio(QUEUE, f"{END_TO_END} - {QUEUE}"),
        autoscaling="queue-compute-ratio",
        title="Queue time per second served",
    ),
)
GAUGE_RULES = (
    per_pod_rule("sum", "trtllm_num_requests_waiting", autoscaling="queue-length", title="Requests waiting"),
    per_pod_rule("sum", "trtllm_num_requests_running", title="Requests running"),
    per_pod_rule("max", "trtllm_kv_cache_utilization", autoscaling="kv-cache-usage", **KV_PANEL),
)
# tensorrt_llm/metrics/collector.py: at 1.2.x unprefixed (request_success_total, time_to_first_token_seconds,
# time_per_output_token_seconds; no token counter), with the trtllm_ prefix and token counters from the
# release of the iteration gauges (PR #12545). Read from the 1.3 line's source and the names reported of
# 1.2.x (the v1.2.1 file itself is not in any archive this project reaches).
UNPREFIXED = ServingSeries("request_success_total", "time_to_first_token_seconds", "time_per_output_token_seconds")
PREFIXED = ServingSeries(
    "trtllm_request_success_total",
    "trtllm_time_to_first_token_seconds",
    "trtllm_time_per_output_token_seconds",
    "trtllm_generation_tokens_total",
)
ROUTER_METRICS = RouterMetrics(
    "trtllm_num_requests_waiting", "trtllm_num_requests_running", "trtllm_kv_cache_utilization"
)
BASE = Capabilities(
    derived_flags=DERIVED_FLAGS,
    serving_port=SERVING_PORT,
    pipeline_parallel=True,
    metrics=(),
    leader_ready_needs_workers=True,
    needs_api_access=True,
    metrics_path="/prometheus/metrics",
)


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    if not version.has("prometheus-metrics"):
        return BASE
    series = ("request_success_total", "request_queue_time_seconds_sum", "request_queue_time_seconds_count")
    series += ("e2e_request_latency_seconds_sum",)
    metrics = tuple(name for s in series for name in (f"trtllm_{s}", s))
    rules = REQUEST_RULES
    if version.has("iteration-gauges"):
        metrics += ("trtllm_num_requests_waiting", "trtllm_num_requests_running", "trtllm_kv_cache_utilization")
        rules += GAUGE_RULES
        return BASE._replace(metrics=metrics, rules=rules, router_metrics=ROUTER_METRICS, serving_series=PREFIXED)
    return BASE._replace(metrics=metrics, rules=rules, serving_series=UNPREFIXED)


def _metrics_options(profile: Profile) -> dict[str, bool]:
    """What monitoring needs of the engine, where it has Prometheus metrics."""
    version = versions.of(profile, ENGINE)
    if not (profile.monitoring.enabled and version.has("prometheus-metrics")):
        return {}
    if version.has("iteration-gauges"):
        return {"return_perf_metrics": True, "enable_iter_perf_stats": True}
    return {"return_perf_metrics": True}


def options(profile: Profile) -> dict | None:
    """The options file: model.llmApiOptions, and the options monitoring needs (lwsgen's win);
    None when there is nothing to write."""
    return {**profile.model.llm_api_options, **_metrics_options(profile)} or None


def warnings(profile: Profile) -> list[Finding]:
    """model.llmApiOptions keys that monitoring overrides, said rather than dropped in silence."""
    given = profile.model.llm_api_options
    return [
        Finding(
            ("model", "llmApiOptions", key),
            f"is set to {value!r} because monitoring reads the engine's Prometheus metrics; set "
            "monitoring.enabled false to keep yours",
            "overridden",
        )
        for key, value in _metrics_options(profile).items()
        if key in given and given[key] != value
    ]


def serve_command(profile: Profile) -> tuple[str, ...]:
    chosen = ("--extra_llm_api_options", f"{SCRIPTS_MOUNT}/{OPTIONS_FILE}") if options(profile) else ()
    return (
        "trtllm-serve",
        model_path(profile),
        "--host",
        "0.0.0.0",
        "--port",
        str(SERVING_PORT),
        "--tp_size",
        str(profile.parallelism.tensor),
        "--pp_size",
        str(profile.parallelism.pipeline),
        *chosen,
        *extra_args(profile),
    )


# What every rank runs: trtllm-llmapi-launch re-splits its arguments on spaces, so the serve command
# is in LWSGEN_SERVE_ARGV (JSON) and exec-argv.sh runs it argument by argument on rank 0.
RANK_COMMAND = ("trtllm-llmapi-launch", "/bin/bash", f"{SCRIPTS_MOUNT}/exec-argv.sh")


def _yaml(options: dict) -> str:
    import yaml

    return yaml.safe_dump(_plain(options), sort_keys=True)


def _plain(value):
    """FrozenDicts and tuples of the profile as the dicts and lists YAML writes."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def parts(profile: Profile) -> RuntimeParts:
    chosen = options(profile)
    files = {OPTIONS_FILE: _yaml(chosen)} if chosen else {}
    return launchers.mpi_over_kubectl(
        profile,
        RANK_COMMAND,
        (Port("http", SERVING_PORT),),
        MPIRUN,
        probes=Probes(port="http", startup_path="/health", readiness_path="/health"),
        service_ports=("http",),
        extra_scripts=("exec-argv.sh",),
        leader_env=(plain_env("LWSGEN_SERVE_ARGV", json.dumps(serve_command(profile))),),
        files=files,
    )


RUNTIME = Runtime(
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    warnings=warnings,
    reads_hub_ids=READS_HUB_IDS,
    own_fields=OWN_FIELDS,
)
