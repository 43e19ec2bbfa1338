"""The series each engine exports on /metrics at the release the examples pin, as the engine's own
source defines them, for tests that evaluate rules and dashboard queries over series shaped like the
engine's (tests/test_dashboard.py). Written from the engines' source, not from lwsgen: a name lwsgen
gets wrong finds no series here.

Each entry: (name as scraped, type, labels beyond what the scrape adds). prometheus_client adds
`_total` to counters; histograms are scraped as <name>_bucket{le}, <name>_sum and <name>_count.
`{model}` stands for the served model's name.
"""

from __future__ import annotations

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"


def _vllm_logger(prefix: str) -> tuple:
    """vLLM's v1 PrometheusStatLogger (vllm/v1/metrics/loggers.py@v0.33.0: labels model_name, engine,
    line 499; waiting 537, running 527, kv_cache_usage_perc 619, request_success 808 with
    finished_reason, prompt_tokens 747, generation_tokens 798, time_to_first_token 930,
    inter_token_latency 940, num_preemptions 739); Aphrodite's is the same logger under its prefix
    (aphrodite/v1/metrics/loggers.py@v0.20.0 lines 462, 487, 479, 540, 667, 630, 659, 742, 775, 623)."""
    labels = {"model_name": "{model}", "engine": "0"}
    return (
        (f"{prefix}:num_requests_waiting", GAUGE, labels),
        (f"{prefix}:num_requests_running", GAUGE, labels),
        (f"{prefix}:kv_cache_usage_perc", GAUGE, labels),
        (f"{prefix}:request_success_total", COUNTER, {**labels, "finished_reason": "stop"}),
        (f"{prefix}:prompt_tokens_total", COUNTER, labels),
        (f"{prefix}:generation_tokens_total", COUNTER, labels),
        (f"{prefix}:time_to_first_token_seconds", HISTOGRAM, labels),
        (f"{prefix}:inter_token_latency_seconds", HISTOGRAM, labels),
        (f"{prefix}:request_time_per_output_token_seconds", HISTOGRAM, labels),
        (f"{prefix}:num_preemptions_total", COUNTER, labels),
    )


# python/sglang/srt/observability/metrics_collector.py@v0.5.23: the scheduler's series (labels
# model_name, engine_type, tp_rank, pp_rank, moe_ep_rank, line 1382; num_running_reqs 365,
# num_queue_reqs 371, token_usage 405, num_retracted_requests 559) and the tokenizer manager's
# (labels model_name, engine_type, line 1804; num_requests 1941, prompt_tokens 1856,
# generation_tokens 1861 with is_streaming, time_to_first_token 2041 with is_streaming,
# inter_token_latency 2051).
_SCHEDULER = {"model_name": "{model}", "engine_type": "unified", "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
_TOKENIZER = {"model_name": "{model}", "engine_type": "unified"}
SGLANG = (
    ("sglang:num_running_reqs", GAUGE, _SCHEDULER),
    ("sglang:num_queue_reqs", GAUGE, _SCHEDULER),
    ("sglang:token_usage", GAUGE, _SCHEDULER),
    ("sglang:num_retracted_requests_total", COUNTER, _SCHEDULER),
    ("sglang:num_requests_total", COUNTER, {**_TOKENIZER, "is_streaming": "false"}),
    ("sglang:prompt_tokens_total", COUNTER, {**_TOKENIZER, "is_streaming": "false"}),
    ("sglang:generation_tokens_total", COUNTER, {**_TOKENIZER, "is_streaming": "false"}),
    ("sglang:time_to_first_token_seconds", HISTOGRAM, {**_TOKENIZER, "is_streaming": "false"}),
    ("sglang:inter_token_latency_seconds", HISTOGRAM, _TOKENIZER),
)

# tools/server/server-task.cpp@b10470 server_task_result_metrics::to_metrics (served by get_metrics in
# server-context.cpp with --metrics): unlabelled counters and gauges, no request counter, no histogram.
LLAMACPP = (
    ("llamacpp:prompt_tokens_total", COUNTER, {}),
    ("llamacpp:tokens_predicted_total", COUNTER, {}),
    ("llamacpp:n_decode_total", COUNTER, {}),
    ("llamacpp:requests_processing", GAUGE, {}),
    ("llamacpp:requests_deferred", GAUGE, {}),
    ("llamacpp:n_busy_slots_per_decode", GAUGE, {}),
)

# triton-inference-server/core r26.06 src/metrics.cc lines 54-99 (prometheus-cpp counters, no _total;
# labels model and version): every model of the repository reports, the ensemble entry model and the
# models it runs (tensorrt_llm here). The first-response histogram is off by default (line 155).
_TRITON_COUNTERS = (
    "nv_inference_request_success",
    "nv_inference_count",
    "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_infer_duration_us",
)
TRITON = tuple(
    (name, COUNTER, {"model": model, "version": "1"})
    for name in _TRITON_COUNTERS
    for model in ("{model}", "tensorrt_llm")
)

# tensorrt_llm/metrics/collector.py at 1.2.x, unprefixed, labels model_name and engine_type (both
# "undefined" before PR #12545); /prometheus/metrics with return_perf_metrics.
_TRTLLM = {"model_name": "undefined", "engine_type": "undefined"}
TRTLLM_SERVE = (
    ("request_success_total", COUNTER, {**_TRTLLM, "finished_reason": "stop"}),
    ("e2e_request_latency_seconds", HISTOGRAM, _TRTLLM),
    ("time_to_first_token_seconds", HISTOGRAM, _TRTLLM),
    ("time_per_output_token_seconds", HISTOGRAM, _TRTLLM),
    ("request_queue_time_seconds", HISTOGRAM, _TRTLLM),
)

ENGINES = {
    "vllm": _vllm_logger("vllm"),
    "aphrodite": _vllm_logger("aphrodite"),
    "sglang": SGLANG,
    "llamacpp": LLAMACPP,
    "triton-trtllm": TRITON,
    "trtllm-serve": TRTLLM_SERVE,
}
