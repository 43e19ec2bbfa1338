"""The examples' engine command lines, parsed by the engines' own argument parsers (vLLM 0.33.0,
SGLang 0.5.23) on a CPU-only machine: every flag lwsgen writes exists, means what the profile
says, and passes the engine's own checks of a parsed command line. Opt-in (two venvs of about
2 GB each): `make engine-args` installs them and runs this file."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest

import fastyaml
from conftest import PROFILES, REPO, engine_missing, json_through, lws_of, merged
from engine_variants import VLLM_CPU, vllm_cpu_profile
from groupsim.kubeenv import expand_command
from lwsgen import runtimes
from lwsgen.pipeline import render_profile

pytestmark = pytest.mark.engines  # the engines' own parsers (make engines): make test-engines runs these

VENVS = Path(os.environ.get("LWSGEN_ENGINE_VENVS", REPO / ".venv-engines"))
if not all((VENVS / engine / "bin" / "python").exists() for engine in ("vllm", "sglang", "aphrodite")):
    engine_missing("the engines' parsers: make engines builds their venvs")
PARSE = REPO / "tools" / "engine_args" / "parse.py"


def _parse(engine: str, argvs: list[list[str]]) -> dict:
    return json_through([str(VENVS / engine / "bin" / "python"), str(PARSE), engine], argvs, timeout=120)


def _command_lines(rendered, leader_address: str) -> list[list[str]]:
    """Leader and worker command lines (args after the launch script) as the kubelet expands them."""
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    env = {"LWS_LEADER_ADDRESS": leader_address, "LWS_GROUP_SIZE": str(lwt["size"])}
    out = []
    for index, template in ((0, lwt["leaderTemplate"]), (1, lwt["workerTemplate"])):
        args = template["spec"]["containers"][0].get("args", [])  # a Ray worker only joins
        out.append(expand_command(args, [*env.items(), ("LWS_WORKER_INDEX", str(index))]))
    return out


def _profile(name: str) -> dict:

    return fastyaml.load((PROFILES / f"{name}.yaml").read_text())


def test_vllm_native_leader_and_headless_worker_parse_as_the_profile_says(write_profile):
    rendered = render_profile(PROFILES / "vllm-llama31-405b.yaml")
    leader, worker = _parse("vllm", _command_lines(rendered, "v-0.v.inference"))["parsed"]
    for node, rank in ((leader, 0), (worker, 1)):
        assert node["model_tag"] == "/models/meta-llama/Llama-3.1-405B-Instruct"
        assert (node["tensor_parallel_size"], node["pipeline_parallel_size"]) == (8, 2)
        assert (node["nnodes"], node["node_rank"]) == (2, rank)
        assert (node["master_addr"], node["master_port"]) == ("v-0.v.inference", 29501)
        assert node["distributed_executor_backend"] is None  # vLLM picks mp across nodes
        # served as `vllm serve <path>` serves by default: under the path (the profile sets no servedName)
        assert node["served_model_name"] == ["/models/meta-llama/Llama-3.1-405B-Instruct"]
    assert leader["headless"] is False and (leader["host"], leader["port"]) == ("0.0.0.0", 8080)
    assert worker["headless"] is True


def test_vllm_data_and_expert_parallel_nodes_parse_as_the_profile_says():
    rendered = render_profile(PROFILES / "vllm-qwen3-235b-a22b.yaml")
    leader, worker = _command_lines(rendered, "q-0.q.inference")
    worker += ["--data-parallel-start-rank", "8"]  # what await-leader.sh appends on worker 1
    parsed_leader, parsed_worker = _parse("vllm", [leader, worker])["parsed"]
    for node in (parsed_leader, parsed_worker):
        assert (node["data_parallel_size"], node["data_parallel_size_local"], node["tensor_parallel_size"]) == (
            16,
            8,
            1,
        )
        assert (node["data_parallel_address"], node["data_parallel_rpc_port"]) == ("q-0.q.inference", 29550)
        assert node["enable_expert_parallel"] is True
    assert parsed_leader["headless"] is False and parsed_worker["headless"] is True
    assert parsed_worker["data_parallel_start_rank"] == 8


def test_vllm_on_ray_parses_with_the_ray_executor(write_profile):
    path = write_profile(merged(_profile("vllm-llama31-405b"), **{"launch.mode": "ray"}))
    leader = _command_lines(render_profile(path), "v-0.v.inference")[0]
    [parsed] = _parse("vllm", [leader])["parsed"]
    assert parsed["distributed_executor_backend"] == "ray" and parsed["nnodes"] == 1
    assert (parsed["tensor_parallel_size"], parsed["pipeline_parallel_size"]) == (8, 2)


def test_sglang_nodes_parse_as_the_profile_says_with_and_without_pipeline(write_profile):
    rendered = render_profile(PROFILES / "sglang-deepseek-r1.yaml")
    piped = render_profile(
        write_profile(merged(_profile("sglang-deepseek-r1"), parallelism={"tensor": 8, "pipeline": 2}))
    )
    both = render_profile(
        write_profile(
            merged(_profile("sglang-deepseek-r1"), parallelism={"data": 2, "tensor": 4, "pipeline": 2}), "both.yaml"
        )
    )
    lines = [*_command_lines(rendered, "s-0.s.inference"), *_command_lines(piped, "s-0.s.inference")[:1]]
    lines += _command_lines(both, "s-0.s.inference")[:1]
    leader, worker, pipelined, attention_and_pipeline = _parse("sglang", lines)["parsed"]
    assert (attention_and_pipeline["tp_size"], attention_and_pipeline["pp_size"]) == (8, 2)
    assert attention_and_pipeline["attn_dp_size"] == 2
    for node, rank in ((leader, 0), (worker, 1)):
        assert (
            node["model_path"] == "/lwsgen/model-cache/deepseek-ai/DeepSeek-R1/8a58a132790c9935686eb97f042afa8013451c9f"
            and node["served_model_name"] == "deepseek-r1"
        )
        assert (node["tp_size"], node["pp_size"]) == (16, 1)
        assert (node["nnodes"], node["node_rank"], node["dist_init_addr"]) == (2, rank, "s-0.s.inference:20000")
        # data-parallel attention: 2 groups of 8 inside tp 16, experts over all 16
        assert (node["attn_dp_size"], node["ep_size"]) == (2, 16)
        assert (node["host"], node["port"], node["enable_metrics"]) == ("0.0.0.0", 30000, True)  # every node's metrics
    assert (pipelined["tp_size"], pipelined["pp_size"]) == (8, 2)


@pytest.mark.parametrize("engine, runtime", [("vllm", "vllm"), ("sglang", "sglang"), ("aphrodite", "aphrodite")])
def test_every_flag_lwsgen_derives_is_one_the_engine_has(engine, runtime):
    options = set(_parse(engine, [])["options"])
    derived = set(runtimes.newest_capabilities(runtime).derived_flags)
    # --tp and --dp are argparse's prefixes of --tp-size and --dp-size in SGLang, --enable-deepep-moe the
    # spelling before 0.4.10.post2 (gone in 0.5.5): lwsgen refuses them in extraArgs all the same
    assert derived - options - {"--tp", "--dp", "--enable-deepep-moe"} == set()


def _templates(objects: list[dict]) -> list[tuple[str, dict]]:
    """(where, leaderWorkerTemplate) of every LeaderWorkerSet and DisaggregatedSet role, and of what
    KServe makes: the LeaderWorkerSet of an LLMInferenceService, the head and worker of a ServingRuntime."""
    from lwsgen.output import kserve

    made, _ = kserve.workloads([o for o in objects if o.get("kind") == "LLMInferenceService"])
    out = [(f"{name} (KServe's)", lws["spec"]["leaderWorkerTemplate"]) for name, lws in made.items()]
    for obj in objects:
        if obj.get("kind") == "ServingRuntime":
            spec = obj["spec"]
            head, worker = {"spec": {"containers": spec["containers"]}}, {"spec": spec["workerSpec"]}
            out.append(
                (
                    f"{obj['metadata']['name']} (KServe's Deployments)",
                    {"leaderTemplate": head, "workerTemplate": worker},
                )
            )
        if obj.get("kind") == "LeaderWorkerSet":
            out.append((obj["metadata"]["name"], obj["spec"]["leaderWorkerTemplate"]))
        if obj.get("kind") == "DisaggregatedSet":
            for role in obj["spec"]["roles"]:
                out.append((f"{obj['metadata']['name']} role {role['name']}", role["spec"]["leaderWorkerTemplate"]))
    return out


def _engine_argvs(objects: list[dict]) -> dict[str, list[tuple[str, list[str]]]]:
    """Every leader's and worker's engine command line (after the launch script, as the kubelet
    expands it, with what the launch script appends), by the engine whose parser reads it."""
    found: dict[str, list[tuple[str, list[str]]]] = {"vllm": [], "sglang": [], "aphrodite": []}
    for where, lwt in _templates(objects):
        size = str(lwt.get("size", 1))
        for index, template in ((0, lwt.get("leaderTemplate") or lwt["workerTemplate"]), (1, lwt["workerTemplate"])):
            container = template["spec"]["containers"][0]
            env = [("LWS_LEADER_ADDRESS", "g-0.g.ns"), ("LWS_GROUP_SIZE", size), ("LWS_WORKER_INDEX", str(index))]
            env += [(e["name"], e["value"]) for e in container.get("env", []) if "value" in e]
            argv = expand_command(container.get("args", []), env)
            if dict(env).get("LWSGEN_DP_RANKS_PER_POD") and index:  # await-leader.sh appends it
                argv += ["--data-parallel-start-rank", str(index * int(dict(env)["LWSGEN_DP_RANKS_PER_POD"]))]
            if argv[:1] in (["vllm"], ["aphrodite"]):
                found[argv[0]].append((f"{where} {'worker' if index else 'leader'}", argv))
            elif argv[:3] == ["python3", "-m", "sglang.launch_server"]:
                found["sglang"].append((f"{where} {'worker' if index else 'leader'}", argv))
    return found


# The variants the group simulator runs on these engines (tests/test_groupsim.py VARIANTS, single_pod),
# and those the real-engine tests run (tests/engine_variants.py). Aphrodite 0.6 (its old server module)
# has no parser here: aphrodite-engine 0.6.5 needs its own CUDA-era dependencies to import.
VARIANTS = {
    "vllm-ray": ("vllm-llama31-405b", {"launch": {"mode": "ray"}}),
    "vllm-single-pod": ("vllm-llama31-405b", {"parallelism": {"tensor": 8}}),
    "sglang-single-pod": ("sglang-deepseek-r1", {"parallelism": {"tensor": 8}}),
    "aphrodite-single-pod": ("aphrodite-llama31-70b", {"parallelism": {"tensor": 4}}),
}
REAL_ENGINE_VARIANTS = {f"vllm-cpu-{name}": spec for name, spec in VLLM_CPU.items()}


@functools.cache
def _every_rendered() -> list[tuple[str, list[dict]]]:
    """Every example in out/ and every profile variant the tests render through the engines (rendered
    when a test first needs them, not while the suite is collected)."""
    import tempfile

    rendered = []
    for directory in sorted((REPO / "out").iterdir()):
        objects = [o for p in sorted(directory.glob("*.yaml")) for o in fastyaml.load_all(p.read_text()) if o]
        rendered.append((directory.name, objects))
    with tempfile.TemporaryDirectory() as scratch:
        for variant, (example, changes) in VARIANTS.items():
            path = Path(scratch) / f"{example}.yaml"
            path.write_text(fastyaml.dump({**_profile(example), **changes}))
            files = render_profile(path).files.values()
            rendered.append((variant, [o for text in files for o in fastyaml.load_all(text) if o]))
        for variant, (example, changes) in REAL_ENGINE_VARIANTS.items():
            path = Path(scratch) / f"{example}.yaml"
            path.write_text(fastyaml.dump(vllm_cpu_profile(_profile(example), changes)))
            files = render_profile(path).files.values()
            rendered.append((variant, [o for text in files for o in fastyaml.load_all(text) if o]))
    return rendered


NAMES = [
    *sorted(d.name for d in (REPO / "out").iterdir() if d.is_dir()),
    *VARIANTS,
    *REAL_ENGINE_VARIANTS,
]


@functools.cache
def _parsed_everywhere() -> dict[str, int]:
    """Every rendering's command lines through their engine's parser, one run of each parser for all
    (importing an engine takes seconds): how many lines each parser accepted, by rendering."""
    accepted: dict[str, int] = {}
    for engine in ("vllm", "sglang", "aphrodite"):
        rendered = _every_rendered()
        lines = [(example, argv) for example, objects in rendered for _, argv in _engine_argvs(objects)[engine]]
        if lines:
            parsed = _parse(engine, [argv for _, argv in lines])["parsed"]  # a refused line fails the run
            assert len(parsed) == len(lines)
            for example, _ in lines:
                accepted[example] = accepted.get(example, 0) + 1
    return accepted


@pytest.mark.parametrize("example", NAMES)
def test_every_example_and_role_parses_with_its_engines_own_parser(example):
    """Each example's every role, extraArgs included, as vLLM 0.33.0 / SGLang 0.5.23 / Aphrodite
    0.20.0 read it: the parser and the engine's own checks of the parsed line accept it (exit 2
    would crash-loop)."""
    objects = dict(_every_rendered())[example]
    lines = sum(len(found) for found in _engine_argvs(objects).values())
    assert _parsed_everywhere().get(example, 0) == lines


# ---- the oldest releases lwsgen checks -------------------------------------------------------------

# The oldest release lwsgen checks of each engine (ENGINE.oldest in lwsgen/runtimes/<engine>.py), whose
# own parser `make engines` installs beside the examples' (venvs vllm-0.8.5, sglang-0.4.6)
OLDEST = {engine: runtimes.get(engine).engine.oldest for engine in ("vllm", "sglang")}
OLDEST_VARIANTS = {name: spec for name, spec in VARIANTS.items() if name.startswith(tuple(OLDEST))}
OLDEST_NAMES = [
    *sorted(p.stem for p in PROFILES.glob("*.yaml") if _profile(p.stem)["runtime"] in OLDEST),
    *OLDEST_VARIANTS,
]
# What lwsgen says of a feature the release lacks: "needs <engine> X or newer", or an extraArgs
# flag its parser's table does not have (the examples' extraArgs are written for the newest release)
VERSION_REFUSAL = r"needs (vLLM|SGLang) [0-9.]+ or newer|is not a flag of (vllm|sglang) "


def _venv_of(engine: str, version: str) -> Path:
    python = VENVS / f"{engine}-{version}" / "bin" / "python"
    if not python.exists():
        engine_missing(f"no {engine} {version} parser at {python.parent.parent}: make engines builds it")
    return python


def _render_refused(profile: dict) -> tuple[list[dict], list]:
    """(objects, []) of a rendered profile dict, or ([], the errors render refused it with)."""
    import tempfile

    from lwsgen.problems import ProblemsError

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{profile['name']}.yaml"
        path.write_text(fastyaml.dump(profile))
        try:
            files = render_profile(path).files.values()
        except ProblemsError as refused:
            return [], [p for p in refused.problems if p.severity == "error"]
    return [o for text in files for o in fastyaml.load_all(text) if o], []


@functools.cache
def _rendered_at_oldest(name: str) -> tuple[list[dict], list[str]]:
    """The example or variant rendered for its engine's oldest checked release (runtimeVersion): its
    objects, or what render refused it with. The examples' extraArgs are written for the newest
    release: those the oldest one's parser lacks are refused, then left out, and the rest rendered."""
    import re

    example, changes = OLDEST_VARIANTS.get(name, (name, {}))
    profile = copy.deepcopy({**_profile(example), **changes})
    profile["runtimeVersion"] = OLDEST[profile["runtime"]]
    while True:
        objects, refused = _render_refused(profile)
        flags = [re.fullmatch(r"(.*)\[(\d+)\]", p.path) for p in refused if p.code == "unknown-engine-flag"]
        if not refused or len(flags) < len(refused):
            return objects, [f"{p.path}: {p.message}" for p in refused]
        for found in sorted(flags, key=lambda found: -int(found[2])):  # from the end: indexes stay right
            functools.reduce(lambda node, key: node[key], found[1].split("."), profile).pop(int(found[2]))


@functools.cache
def _parsed_at_oldest() -> dict[str, int]:
    """Every command line rendered for the oldest releases through that release's parser, one run of
    each parser for all: how many lines it accepted, by example or variant."""
    accepted: dict[str, int] = {}
    for engine, version in OLDEST.items():
        lines = [
            (name, argv) for name in OLDEST_NAMES for _, argv in _engine_argvs(_rendered_at_oldest(name)[0])[engine]
        ]
        if lines:
            argvs = [argv for _, argv in lines]
            parsed = json_through([str(_venv_of(engine, version)), str(PARSE), engine], argvs, timeout=300)["parsed"]
            assert len(parsed) == len(lines)  # a refused line fails the parser's run (exit 2)
            for name, _ in lines:
                accepted[name] = accepted.get(name, 0) + 1
    return accepted


@pytest.mark.parametrize("name", OLDEST_NAMES)
def test_every_example_at_the_oldest_release_parses_with_that_releases_parser(name):
    """vLLM 0.8.5 / SGLang 0.4.6 (the oldest releases lwsgen checks): what render writes for them, every
    leader's and worker's command line, the real parser of that release and its post-parse checks
    accept; what render refuses, it refuses because the release lacks the feature."""
    import re

    objects, refused = _rendered_at_oldest(name)
    if refused:
        assert all(re.search(VERSION_REFUSAL, message) for message in refused), refused
        return
    lines = sum(len(found) for found in _engine_argvs(objects).values())
    assert lines, f"{name}: no engine command line"
    assert _parsed_at_oldest().get(name, 0) == lines


def test_the_oldest_release_renders_more_than_it_refuses():
    """The oldest-release test must parse something: most examples and variants render at it."""
    rendered = [name for name in OLDEST_NAMES if not _rendered_at_oldest(name)[1]]
    assert len(rendered) >= len(OLDEST_NAMES) // 2, rendered
