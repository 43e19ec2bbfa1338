"""Every runtime's group run for real as pods (tests/groupsim): network namespaces on a bridge,
dnsmasq for cluster DNS, real Ray, OpenMPI and torch.distributed (gloo), engine stand-ins. Each
scenario is a cell of the runtime x scenario table; the cells run concurrently (most of their time
is waiting) once per session, and each test asserts one cell."""

from __future__ import annotations

import concurrent.futures
import copy
import sys
import threading
from pathlib import Path

import pytest

import fastyaml
from conftest import REPO
from groupsim import scenarios, sim
from groupsim.net import netns_available

WHY_NOT = netns_available()
pytestmark = [pytest.mark.tools, pytest.mark.groupsim, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]

# DisaggregatedSets: every role's group runs at once (roles_together), and each role starts as this
# example's group does (the same launch scripts, command and image; only engine flags differ:
# test_each_role_launches_as_the_one_it_copies), whose cells cover the other scenarios.
ROLES_LAUNCH = {
    "sglang-deepseek-r1-pd": "sglang-deepseek-r1",
    "vllm-llama33-70b-pd": "vllm-llama31-405b",
    "vllm-deepseek-r1-pd-kserve": "vllm-deepseek-r1-kserve",  # KServe's spec.prefill: two LeaderWorkerSets
}
ROLES = [(example, "roles_together") for example in sorted(ROLES_LAUNCH)]
EXAMPLES = sorted(p.name for p in (REPO / "out").iterdir() if p.name not in ROLES_LAUNCH)
# KServe's: no one-pod variant (a one-pod group is refused on both platforms), and an InferenceService's
# Deployments restart a lost pod alone rather than recreate the group: it forms its group and serves.
KSERVE = {p.parent.name for p in (REPO / "out").glob("*/*inferenceservice.yaml")}
ISVC = {p.parent.name for p in (REPO / "out").glob("*/inferenceservice.yaml")}
LWS = [
    (example, s.__name__)
    for example in EXAMPLES
    for s in scenarios.LWS_SCENARIOS
    if example not in ISVC or s is scenarios.together
]
SINGLE = [(example, "single_pod") for example in EXAMPLES if example not in KSERVE]
NCCL = [
    ("triton-llama3-405b", "mpijob_passes"),
    ("triton-llama3-405b", "mpijob_fails"),
    ("vllm-llama31-405b", "indexed_job_passes"),
    ("vllm-llama31-405b", "indexed_job_fails"),
    ("vllm-llama31-405b", "indexed_job_pod_missing"),
]
# The examples run current engines; these variants keep the launches of older ones (and Ray, now
# an opt-in for vLLM) under the same scenarios: name -> (example, profile changes).
VARIANTS = {
    "vllm-ray": ("vllm-llama31-405b", {"launch": {"mode": "ray"}}),
    "aphrodite-0.6": ("aphrodite-llama31-70b", {"runtimeVersion": "0.6.5"}),  # the old server module, on Ray
    "llamacpp-b6123": ("llamacpp-llama31-70b", {"image": "registry.example.com/ml/llama.cpp-rpc-cuda:b6123"}),
    # KServe's mp backend: vLLM's own launch on an InferenceService's head and worker Deployments
    "isvc-native": ("vllm-llama31-405b-kserve-isvc", {"launch": {"mode": "native"}}),
}
# model.source: the pods wait for the download Job's marker on the shared claim
DELIVERY = [("sglang-deepseek-r1", "model_arrives_late")]
VARIANT_CELLS = [
    ("vllm-ray", "together"),
    ("vllm-ray", "worker_dies"),
    ("aphrodite-0.6", "together"),
    ("llamacpp-b6123", "together"),
    ("llamacpp-b6123", "worker_dies"),
    ("isvc-native", "together"),
    ("isvc-native", "head_node_lost"),
    ("vllm-llama31-405b-kserve-isvc", "head_node_lost"),
    ("vllm-ray", "node_lost"),
    ("llamacpp-b6123", "node_lost"),
]
# Scenario by scenario across the runtimes, so the Ray clusters (the heaviest pods) are spread over
# the run instead of starting all at once; the Indexed Job (16 torch processes) last, near alone.
ORDER = [*(s.__name__ for s in scenarios.LWS_SCENARIOS), "roles_together", "model_arrives_late", "single_pod"]
ORDER += ["head_node_lost", "mpijob_passes"]
ORDER += ["mpijob_fails"]
ORDER += ["indexed_job_pod_missing", "indexed_job_passes", "indexed_job_fails"]


def _single_pod_profile(example: str, into: Path) -> Path:
    """The example's profile with tensor = the node's GPUs and no pipeline: a group of one pod."""
    profile = fastyaml.load((REPO / "profiles" / f"{example}.yaml").read_text())
    single = copy.deepcopy(profile)
    single["parallelism"] = {"tensor": single["node"]["gpus"]}
    path = into / f"{example}.yaml"
    path.write_text(fastyaml.dump(single))
    return path


def _render_single(example: str, root: Path) -> Path:
    from lwsgen.cli import main

    assert main(["render", str(_single_pod_profile(example, root)), "-o", str(root / "single")]) == 0
    return root / "single" / example


def _render_variant(variant: str, root: Path) -> Path:
    from lwsgen.cli import main

    example, changes = VARIANTS[variant]
    profile = {**fastyaml.load((REPO / "profiles" / f"{example}.yaml").read_text()), **changes}
    (root / variant).mkdir(exist_ok=True)
    path = root / variant / f"{example}.yaml"
    path.write_text(fastyaml.dump(profile))
    assert main(["render", str(path), "-o", str(root / variant / "out")]) == 0
    return root / variant / "out" / example


def _run(cell: tuple[str, str], root: Path) -> scenarios.Outcome:
    example, name = cell
    directory = REPO / "out" / example
    if example in VARIANTS:
        return getattr(scenarios, name)(_render_variant(example, root))
    if name == "single_pod":
        return scenarios.single_pod(_render_single(example, root))
    if name.startswith("mpijob"):
        return scenarios.mpijob(directory, 150 if name.endswith("passes") else 50)
    if name == "indexed_job_pod_missing":
        return scenarios.indexed_job_pod_missing(directory)
    if name.startswith("indexed_job"):
        return scenarios.indexed_job(directory, 0.0001 if name.endswith("passes") else None)
    return getattr(scenarios, name)(directory)


# Cells whose pods start whole Ray clusters, or the Indexed Job's 16 torch processes: one at a time,
# so that two of them never share the 2 cores (they missed their bounds when eight cells started
# at once); the others, mostly waiting, run beside them.
HEAVY_VARIANTS = {"vllm-ray", "aphrodite-0.6"}
_HEAVY = threading.Semaphore(1)
CONCURRENT = 6


def _heavy(cell: tuple[str, str]) -> bool:
    return cell[0] in HEAVY_VARIANTS or cell[1].startswith("indexed_job")


def _run_cell(cell: tuple[str, str], root: Path) -> scenarios.Outcome:
    if not _heavy(cell):
        return _run(cell, root)
    with _HEAVY:
        return _run(cell, root)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> dict[tuple[str, str], scenarios.Outcome]:
    sim.cleanup_stale()
    scenarios.calibrate()
    root = tmp_path_factory.mktemp("groupsim")
    cells = sorted(LWS + SINGLE + NCCL + VARIANT_CELLS + DELIVERY + ROLES, key=lambda c: (ORDER.index(c[1]), c[0]))
    with concurrent.futures.ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        futures = {cell: pool.submit(_run_cell, cell, root) for cell in cells}
        return {cell: future.result() for cell, future in futures.items()}


@pytest.mark.parametrize("example, scenario", LWS + SINGLE + NCCL + VARIANT_CELLS + DELIVERY + ROLES)
def test_scenario(table, example, scenario):
    outcome = table[(example, scenario)]
    print(f"{example} {scenario} {'PASS' if outcome.passed else 'FAIL'}")
    assert outcome.passed, str(outcome)


def _records(outcome: scenarios.Outcome, program: str) -> list[dict]:
    return [r for r in outcome.records if r["program"] == program]


def _flag_value(argv: list[str], prefix: str) -> str:
    return next(a[len(prefix) :] for a in argv if a.startswith(prefix))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("variant", ["vllm-ray", "aphrodite-0.6"])
def test_ray_engine_gets_a_placement_group_of_every_gpu_of_the_group(table, variant):
    outcome = table[(variant, "together")]
    example = VARIANTS[variant][0]
    [engine] = _records(outcome, example.split("-")[0])
    lws = fastyaml.load((REPO / "out" / example / "leaderworkerset.yaml").read_text())
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    argv = engine["argv"]
    world = int(_flag(argv, "--tensor-parallel-size")) * int(_flag(argv, "--pipeline-parallel-size"))
    assert engine["ray_nodes"] == size and engine["ray_gpus"] == world and engine["placement_group_ready"]


def test_aphrodite_0_6_runs_its_old_server_module(table):
    outcome = table[("aphrodite-0.6", "together")]
    log = outcome.logs["aphrodite-llama31-70b-0/leader exit=None"]
    assert "starting: python3 -m aphrodite.endpoints.openai.api_server --model" in log


@pytest.mark.parametrize("example", ["vllm-llama31-405b", "aphrodite-llama31-70b"])
def test_native_nodes_rendezvous_at_the_leaders_master_port_and_only_the_leader_serves(table, example):
    outcome = table[(example, "together")]
    nodes = sorted(_records(outcome, example.split("-")[0]), key=lambda r: r["rank"])
    assert [(r["rank"], r["world"], r["headless"]) for r in nodes] == [(0, 2, False), (1, 2, True)]
    for node in nodes:
        assert _flag(node["argv"], "--master-addr") == f"{example}-0.{example}.inference"
        assert _flag(node["argv"], "--master-port") == "29501"
        assert "--distributed-executor-backend" not in node["argv"]
    assert nodes[0]["hostname"] == f"{example}-0"


def test_isvc_native_nodes_rendezvous_at_kserves_head_service(table):
    """launch.mode native on an InferenceService: the head (node rank 0) and its one worker (1) meet
    at the head's headless Service, named from the labels KServe puts on the pods."""
    outcome = table[("isvc-native", "together")]
    nodes = sorted(_records(outcome, "vllm"), key=lambda r: r["rank"])
    assert [(r["rank"], r["world"], r["headless"]) for r in nodes] == [(0, 2, False), (1, 2, True)]
    example = VARIANTS["isvc-native"][0]
    for node in nodes:
        assert _flag(node["argv"], "--master-addr") == f"{example}-head-1.inference.svc"
        assert "--distributed-executor-backend" not in node["argv"]


def test_vllm_data_parallel_pods_take_their_ranks_from_their_index(table):
    example = "vllm-qwen3-235b-a22b"
    nodes = sorted(_records(table[(example, "together")], "vllm"), key=lambda r: r["rank"])
    assert [(r["world"], r["headless"], r["dp_ranks"]) for r in nodes] == [
        (2, False, list(range(0, 8))),
        (2, True, list(range(8, 16))),
    ]
    for node in nodes:
        assert _flag(node["argv"], "--data-parallel-address") == f"{example}-0.{example}.inference"
    assert _flag(nodes[1]["argv"], "--data-parallel-start-rank") == "8"


def test_sglang_workers_serve_their_schedulers_metrics_under_data_parallel_attention(table):
    outcome = table[("sglang-deepseek-r1", "together")]
    [worker] = [r for r in _records(outcome, "sglang") if r["rank"] == 1]
    assert _flag(worker["argv"], "--port") == "30000" and "--enable-metrics" in worker["argv"]


def test_native_leader_recreates_the_group_when_a_headless_node_is_lost(table):
    outcome = table[("vllm-llama31-405b", "worker_dies")]
    assert outcome.passed and "vllm-llama31-405b-0/leader exited 1" in outcome.detail
    log = outcome.logs["vllm-llama31-405b-0/leader exit=1"]
    assert "do not answer on port 29600" in log and "the group lost a member" in log


def test_sglang_nodes_rendezvous_with_their_ranks(table):
    outcome = table[("sglang-deepseek-r1", "together")]
    nodes = sorted(_records(outcome, "sglang"), key=lambda r: r["rank"])
    assert [r["rank"] for r in nodes] == [0, 1] and {r["world"] for r in nodes} == {2}
    for node in nodes:
        assert _flag(node["argv"], "--node-rank") == str(node["rank"]) and _flag(node["argv"], "--nnodes") == "2"
        assert _flag(node["argv"], "--dist-init-addr") == "sglang-deepseek-r1-0.sglang-deepseek-r1.inference:20000"
    assert "lwsgen leader: starting" in outcome.logs["sglang-deepseek-r1-0/leader exit=None"]
    assert "lwsgen worker: starting" in outcome.logs["sglang-deepseek-r1-0-1/worker exit=None"]


def test_llamacpp_leader_lists_its_workers_rpc_servers(table):
    outcome = table[("llamacpp-llama31-70b", "together")]
    [server] = _records(outcome, "llama-server")
    assert server["rpc"] == ["llamacpp-llama31-70b-0-1.llamacpp-llama31-70b.inference:50052"]
    [rpc] = _records(outcome, "rpc-server")  # b10470: one for the pod's GPUs, caching in the pod's emptyDir
    assert rpc["cache"] == "/lwsgen/rpc-cache/rpc" and rpc["devices"] == "0,1,2,3"  # every GPU of the pod


def test_llamacpp_before_the_multi_device_server_runs_one_rpc_server_per_gpu(table):
    outcome = table[("llamacpp-b6123", "together")]
    [server] = _records(outcome, "llama-server")
    worker = "llamacpp-llama31-70b-0-1.llamacpp-llama31-70b.inference"
    assert server["rpc"] == [f"{worker}:{port}" for port in range(50052, 50056)]
    assert sorted(r["devices"] for r in _records(outcome, "rpc-server")) == ["0", "1", "2", "3"]


def test_trtllm_serve_reads_the_options_that_turn_its_metrics_on(table):
    [serve] = _records(table[("trtllm-serve-llama31-405b", "together")], "trtllm-serve")
    assert serve["options"] == {"return_perf_metrics": True}


@pytest.mark.parametrize("example", ["triton-llama3-405b", "trtllm-serve-llama31-405b"])
def test_mpi_ranks_fill_every_gpu_of_the_group_leader_first(table, example):
    outcome = table[(example, "together")]
    ranks = [r for r in outcome.records if "rank" in r and r["program"] != "all_reduce_perf"]
    assert sorted(r["rank"] for r in ranks) == list(range(16)) and {r["world"] for r in ranks} == {16}
    assert {r["rank"] for r in ranks if r["hostname"] == f"{example}-0"} == set(range(8))  # rank 0 serves
    if example.startswith("triton"):  # each rank's Python backend has its own shared-memory prefix
        prefixes = {r["rank"]: _flag_value(r["argv"], "--backend-config=") for r in ranks}
        assert prefixes == {rank: f"python,shm-region-prefix-name=prefix{rank}_" for rank in range(16)}
    log = next(text for name, text in outcome.logs.items() if "/leader " in name)
    host = f"{example}-0.{example}.inference"
    assert f"on {host}:8,{example}-0-1.{example}.inference:8" in log


def test_mpijob_verdict_reads_tagged_output(table):
    passing, failing = table[("triton-llama3-405b", "mpijob_passes")], table[("triton-llama3-405b", "mpijob_fails")]
    assert passing.exit_code == 0 and "PASS: bus bandwidth 150.00 GB/s" in passing.detail
    assert failing.exit_code == 1 and "FAIL: bus bandwidth 50.00 GB/s" in failing.detail
    launcher = next(text for name, text in passing.logs.items() if "launcher" in name)
    assert "[1,0]<stdout>:" in launcher  # what the verdict had to read through: real --tag-output


def test_indexed_job_measures_over_torch_distributed(table):
    passing, failing = (
        table[("vllm-llama31-405b", "indexed_job_passes")],
        table[("vllm-llama31-405b", "indexed_job_fails")],
    )
    assert passing.exit_code == 0 and "PASS" in passing.detail
    assert failing.exit_code == 1 and "FAIL" in failing.detail and "required 40 GB/s" in failing.detail


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


def _role_templates(directory: Path) -> list[list[dict]]:
    """Each role's [leader, worker] pod templates: of a DisaggregatedSet's roles, or of an
    LLMInferenceService's own workload and its spec.prefill (bare pod specs, wrapped as templates)."""

    ds = directory / "disaggregatedset.yaml"
    if ds.exists():
        roles = fastyaml.load(ds.read_text(encoding="utf-8"))["spec"]["roles"]
        return [[r["spec"]["leaderWorkerTemplate"][s] for s in ("leaderTemplate", "workerTemplate")] for r in roles]
    return [[{"spec": w[s]} for s in ("template", "worker")] for w in _llmisvc_workloads(directory)]


def _llmisvc_workloads(directory: Path) -> list[dict]:

    docs = fastyaml.load_all((directory / "llminferenceservice.yaml").read_text(encoding="utf-8"))
    spec = next(d for d in docs if d and d["kind"] == "LLMInferenceService")["spec"]
    return [spec, *([spec["prefill"]] if "prefill" in spec else [])]


@pytest.mark.parametrize("left_out, copied", sorted(ROLES_LAUNCH.items()))
def test_each_role_launches_as_the_one_it_copies(left_out, copied):
    """Every role's launch scripts are the copied example's (by name and text), as are the
    container commands (the scripts they run) and the engine image."""

    [scripts] = fastyaml.load_all((REPO / "out" / copied / "configmap.yaml").read_text(encoding="utf-8"))
    [copied_templates] = _role_templates(REPO / "out" / copied) if "kserve" in copied else [[]]
    if not copied_templates:
        lws = fastyaml.load((REPO / "out" / copied / "leaderworkerset.yaml").read_text(encoding="utf-8"))
        copied_templates = [lws["spec"]["leaderWorkerTemplate"][s] for s in ("leaderTemplate", "workerTemplate")]
    commands = {t["spec"]["containers"][0]["command"][-1] for t in copied_templates}
    images = {t["spec"]["containers"][0]["image"] for t in copied_templates}
    role_scripts = list(fastyaml.load_all((REPO / "out" / left_out / "configmap.yaml").read_text(encoding="utf-8")))
    roles = _role_templates(REPO / "out" / left_out)
    assert len(role_scripts) == len(roles) == 2
    for own in role_scripts:
        assert own["data"] and all(scripts["data"].get(name) == text for name, text in own["data"].items())
    for templates in roles:
        for template in templates:
            engine = template["spec"]["containers"][0]
            assert engine["command"][-1] in commands and engine["image"] in images
