"""Sizing, plan and explain: published layouts pinned, the formula on hand-computed cases."""

import json
import re

import pytest

import fastyaml
from conftest import MINIMAL, PROFILES, REPO, merged
from lwsgen.check import sizing
from lwsgen.cli import main
from lwsgen.pipeline import load_profile
from runtimes.test_all_runtimes import profile_for


def _plan(capsys, *args):
    code = main(["plan", *args])
    return code, capsys.readouterr()


@pytest.mark.parametrize(
    "model, dtype, gpu, nodes, tensor, pipeline",
    [
        ("llama-3.1-405b", "bf16", "h100-80gb", 2, 8, 2),  # 405B in BF16 needs two 8x H100 nodes
        ("llama-3.1-405b", "fp8", "h100-80gb", 1, 8, 1),  # in FP8 one
        ("deepseek-r1", "fp8", "h200-141gb", 1, 8, 1),  # DeepSeek-R1 FP8 fits one 8x H200 node
        ("deepseek-r1", "fp8", "h100-80gb", 2, 16, 1),  # but needs two 8x H100 nodes (61 layers: no pipeline 2)
        ("llama-3.1-70b", "bf16", "h100-80gb", 1, 8, 1),
    ],
)
def test_published_layouts(capsys, model, dtype, gpu, nodes, tensor, pipeline):
    code, captured = _plan(capsys, "--model", model, "--dtype", dtype, "--gpu", gpu, "--format", "json")
    result = json.loads(captured.out)
    assert code == 0 and result["fits"] is True
    assert (result["nodes"], result["parallelism"]["tensor"], result["parallelism"]["pipeline"]) == (
        nodes,
        tensor,
        pipeline,
    )
    assert result["gpusPerNode"] == 8 and set(result["memoryPerGpuGB"]) == {
        "weights",
        "kvCache",
        "overhead",
        "usable",
        "free",
    }


def test_memory_formula_on_hand_computed_cases():
    llama70 = sizing.MODELS["llama-3.1-70b"]
    mem = sizing.memory_per_gpu(70.6, "bf16", sizing.GPUS["h100-80gb"], 8, 1, llama70, 8192)
    assert mem.weights == pytest.approx(70.6 * 2 / 8)  # 17.65 GB
    assert mem.kv_cache == pytest.approx(2 * 80 * 1 * 128 * 2 * 8192 / 1e9)  # 8 KV heads over 8 ranks: 1 each, 0.336 GB
    assert mem.usable == pytest.approx(72.0) and mem.free == pytest.approx(72.0 - 17.65 - 0.33554432 - 3.0)
    # pipeline 2 halves the layers a GPU caches; tensor 16 cannot split 8 KV heads further
    assert sizing.kv_bytes_per_gpu(llama70, 8, 2, 1000) == 2 * 40 * 1 * 128 * 2 * 1000
    assert sizing.kv_bytes_per_gpu(llama70, 16, 1, 1000) == sizing.kv_bytes_per_gpu(llama70, 8, 1, 1000)
    # latent attention: 576 elements per token and layer, on every rank
    assert sizing.kv_bytes_per_gpu(sizing.MODELS["deepseek-r1"], 16, 1, 1000) == 576 * 61 * 2 * 1000
    assert sizing.memory_per_gpu(671, "fp8", sizing.GPUS["h100-80gb"], 16, 1, None, 10**6).weights == pytest.approx(
        671 / 16
    )


def test_concurrency_and_context_grow_the_kv_cache_into_more_nodes(capsys):
    _, small = _plan(capsys, "--model", "llama-3.1-70b", "--gpu", "a100-80gb", "--format", "json")
    _, large = _plan(
        capsys,
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "a100-80gb",
        "--context",
        "131072",
        "--concurrency",
        "64",
        "--format",
        "json",
    )
    assert json.loads(small.out)["nodes"] == 1 and json.loads(large.out)["nodes"] > 1


def test_splits_respect_heads_and_layers():
    deepseek = sizing.MODELS["deepseek-r1"]
    # 61 layers cannot take pipeline 2; data 16 with expert parallelism (tensor 1) after tensor 16
    assert sizing.layouts(deepseek, 2, 8) == [(1, 16, 1), (16, 1, 1)]
    assert sizing.layouts(sizing.MODELS["llama-3.1-405b"], 2, 8) == [(1, 8, 2), (1, 16, 1)]


def test_tensor_beyond_kv_heads_warns(capsys):
    code, captured = _plan(capsys, "--model", "llama-3.1-405b", "--gpu", "a100-40gb", "--format", "json")
    result = json.loads(captured.out)
    assert result["parallelism"]["tensor"] == 32
    assert result["warnings"] == ["tensor 32 exceeds the model's 8 KV heads: each is replicated on 4 ranks"]


def test_params_for_models_outside_the_catalog(capsys):
    code, captured = _plan(capsys, "--params", "120", "--dtype", "bf16", "--gpu", "h100-80gb", "--format", "json")
    result = json.loads(captured.out)
    assert code == 0 and result["nodes"] == 1 and result["memoryPerGpuGB"]["weights"] == 30.0
    assert result["memoryPerGpuGB"]["kvCache"] == 0 and "KV cache not counted" in result["warnings"][0]


@pytest.mark.parametrize(
    "args, known",
    [
        (["--model", "llama-4", "--gpu", "h100-80gb"], "llama-3.1-405b"),
        (["--model", "llama-3.1-8b", "--gpu", "mi300x"], "h100-80gb"),
    ],
)
def test_unknown_names_exit_1_with_the_known_ones(capsys, args, known):
    code, captured = _plan(capsys, *args)
    assert code == 1 and "known:" in captured.err and known in captured.err


def test_a_model_that_fits_nowhere_exits_1(capsys):
    code, captured = _plan(capsys, "--params", "100000", "--gpu", "a10g-24gb")
    assert code == 1 and "does not fit on 64 nodes" in captured.out


def test_emitted_profile_renders(capsys, tmp_path):
    code, captured = _plan(
        capsys,
        "--model",
        "llama-3.1-405b",
        "--gpu",
        "h100-80gb",
        "--emit-profile",
        "llama",
        "--runtime",
        "vllm",
        "--image",
        "vllm/vllm-openai:v0.8.5",
    )
    assert code == 0
    profile = fastyaml.load(captured.out)
    assert (
        profile["parallelism"] == {"tensor": 8, "pipeline": 2}
        and profile["node"]["gpuProduct"] == "NVIDIA-H100-80GB-HBM3"
    )
    path = tmp_path / "llama.yaml"
    path.write_text(captured.out)
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict"]) == 0


def test_emitted_llamacpp_profile_gives_the_layer_split_render_accepts(capsys, tmp_path):
    args = ("--model", "llama-3.1-70b", "--gpu", "a10g-24gb", "--gpus-per-node", "4", "--emit-profile", "l")
    code, captured = _plan(capsys, *args, "--runtime", "llamacpp", "--image", "r/llama.cpp-rpc:b10470")
    assert code == 0
    profile = fastyaml.load(captured.out)
    assert set(profile["parallelism"]) == {"pipeline"} and profile["parallelism"]["pipeline"] > 1
    path = tmp_path / "l.yaml"
    path.write_text(captured.out)
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict"]) == 0


def test_render_warns_when_the_group_cannot_hold_the_model_and_strict_fails(write_profile, capsys, tmp_path):
    small = profile_for(
        "vllm",
        model={"path": "/m", "family": "llama-3.1-405b"},
        parallelism={"tensor": 8},
        node={"gpus": 8, "gpuProduct": "NVIDIA-H100-80GB-HBM3"},
    )
    _, _, warnings = load_profile(write_profile(small))
    [warning] = warnings
    assert (
        warning.code == "does-not-fit"
        and warning.path == "model.family"
        and "405.9B parameters in bf16" in warning.message
    )
    path = write_profile(small)
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0
    assert main(["render", str(path), "-o", str(tmp_path / "strict"), "--strict"]) == 1
    assert not (tmp_path / "strict").exists()
    fits = merged(small, **{"model.dtype": "fp8"})
    assert load_profile(write_profile(fits))[2] == []


def test_explain_shows_ranks_stages_objects_selectors_and_the_autoscaling_path(capsys):
    assert main(["explain", str(PROFILES / "triton-llama3-405b.yaml")]) == 0
    out = capsys.readouterr().out
    assert "world size 16 = 2 pods x 8 GPUs per group" in out
    assert "engine: Triton (NGC tritonserver) 26.07 (from the image tag)\n" in out
    assert "triton-llama3-405b-0 (leader): ranks 0-7, pipeline stage 0" in out
    assert "triton-llama3-405b-0-1 (worker): ranks 8-15, pipeline stage 1" in out
    test = r"triton-llama3-405b-nccl-test-[0-9a-f]{8}"  # named by a digest of its pods (derive/nccl.py)
    assert re.search(
        f"nccl-test.yaml: ConfigMap {test}, MPIJob {test}, NetworkPolicy {test} \\(outside the kustomization\\)", out
    )
    assert (
        "Service: leaderworkerset.sigs.k8s.io/name=triton-llama3-405b, leaderworkerset.sigs.k8s.io/worker-index=0"
        in out
    )
    assert "recording rule namespace_pod:triton_queue_compute:ratio_rate1m" in out
    assert "custom metric triton_queue_compute_ratio_rate1m" in out


def test_explain_mermaid_and_tensor_across_nodes(capsys):
    assert main(["explain", str(PROFILES / "sglang-deepseek-r1.yaml"), "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart LR") and "KEDA ScaledObject" in out and "p0 <-->|group traffic| p1" in out
    assert main(["explain", str(PROFILES / "sglang-deepseek-r1.yaml")]) == 0
    assert (
        "sglang-deepseek-r1-0-1 (worker): ranks 8-15, pipeline stage 0" in capsys.readouterr().out
    )  # TP 16 spans both pods


@pytest.mark.parametrize(
    "example, engine",
    [
        ("vllm-llama31-405b", "vLLM 0.33.0 (from the image tag), launch native"),
        ("aphrodite-llama31-70b", "Aphrodite 0.20.0 (from runtimeVersion), launch native"),
        ("llamacpp-llama31-70b", "llama.cpp b10470 (from the image tag)"),
    ],
)
def test_explain_says_which_engine_version_it_built_for_and_how_it_knows(capsys, example, engine):
    assert main(["explain", str(PROFILES / f"{example}.yaml")]) == 0
    assert f"├─ engine: {engine}\n" in capsys.readouterr().out


def test_a_moe_model_gets_a_data_and_expert_parallel_layout_dense_models_do_not(capsys):
    code, captured = _plan(capsys, "--model", "deepseek-r1", "--gpu", "h100-80gb", "--format", "json")
    result = json.loads(captured.out)
    assert code == 0 and result["parallelism"] == {"tensor": 16, "pipeline": 1}
    assert result["alternative"]["parallelism"] == {"data": 16, "tensor": 1, "pipeline": 1, "expert": True}
    # the dense 16.5B (671 - 256 experts of 2.56B, 37B active with 8 of them) on every GPU, experts / 16
    assert result["alternative"]["memoryPerGpuGB"]["weights"] == pytest.approx(16.55 + 654.45 / 16, abs=0.1)
    _, dense = _plan(capsys, "--model", "llama-3.1-405b", "--gpu", "h100-80gb", "--format", "json")
    assert "data" not in json.dumps(json.loads(dense.out))


def test_no_data_parallel_layout_for_a_runtime_without_it(capsys):
    args = ("--model", "deepseek-r1", "--gpu", "h100-80gb", "--format", "json", "--runtime", "triton-trtllm")
    _, captured = _plan(capsys, *args)
    assert json.loads(captured.out)["alternative"] is None


@pytest.mark.parametrize("given", ["405", "405B", "405b", "405e9", "4.05e11"])
def test_params_in_billions_or_units(capsys, given):
    code, captured = _plan(capsys, "--params", given, "--gpu", "h100-80gb", "--format", "json")
    assert code == 0 and json.loads(captured.out)["params"] == pytest.approx(405)


@pytest.mark.parametrize(
    "short, full", [("h200", "h200-141gb"), ("H200", "h200-141gb"), ("L4", "l4-24gb"), ("gh200", "gh200-96gb")]
)
def test_short_gpu_names(short, full):
    assert sizing.gpu(short) == sizing.GPUS[full]


def test_an_ambiguous_short_gpu_name_lists_the_candidates():
    with pytest.raises(sizing.UnknownName, match="'h100' is ambiguous; it may be: h100-80gb, h100-nvl-94gb"):
        sizing.gpu("h100")


@pytest.mark.parametrize(
    "model", ["deepseek-r1", "qwen3-235b-a22b", "kimi-k2", "llama-4-maverick", "gpt-oss-120b", "mixtral-8x22b"]
)
@pytest.mark.parametrize(
    "runtime, image", [("vllm", "vllm/vllm-openai:v0.33.0"), ("sglang", "lmsysorg/sglang:v0.5.23")]
)
def test_every_moe_plan_emits_a_profile_that_renders(capsys, tmp_path, model, runtime, image):
    code, captured = _plan(
        capsys, "--model", model, "--gpu", "h200", "--emit-profile", "m", "--runtime", runtime, "--image", image
    )
    assert code == 0
    path = tmp_path / "m.yaml"
    path.write_text(captured.out)
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "args, said_text",
    [
        (("--emit-profile", "Bad_Name", "--runtime", "vllm"), "is not a profile name: a DNS-1035 label"),
        (("--emit-profile", "ok", "--runtime", "foo"), "--runtime 'foo' is not a runtime lwsgen has"),
    ],
)
def test_emit_profile_refuses_what_would_not_render(capsys, args, said_text):
    code = main(["plan", "--model", "llama-3.1-8b", "--gpu", "l4", *args, "--image", "vllm/vllm-openai:v0.33.0"])
    assert code == 1 and said_text in capsys.readouterr().err


def test_an_emitted_profile_names_a_schema_lwsgen_schema_writes_beside_it(capsys, tmp_path):
    """The modeline named ../schemas/profile.schema.json, which exists only in lwsgen's own checkout:
    an editor opening the emitted profile anywhere else found no schema."""
    import jsonschema_rs

    args = ("--model", "llama-3.1-70b", "--gpu", "h100-80gb", "--emit-profile", "m", "--runtime", "vllm")
    code, captured = _plan(capsys, *args, "--image", "vllm/vllm-openai:v0.33.0")
    assert code == 0
    (tmp_path / "m.yaml").write_text(captured.out)
    assert main(["schema"]) == 0
    named = re.match(r"# yaml-language-server: \$schema=(\S+)\n", captured.out)[1]
    (tmp_path / named).write_text(capsys.readouterr().out)
    schema = json.loads((tmp_path / "m.yaml").parent.joinpath(named).read_text())
    jsonschema_rs.validator_for(schema).validate(fastyaml.load(captured.out))


@pytest.mark.parametrize(
    "scheduling, said",
    [
        ({}, ["default scheduler, no gang scheduling: a group's pods are placed one by one as nodes have room"]),
        (
            {"scheduler": "volcano", "queue": "inference"},
            [
                "Volcano gang scheduling, queue inference: a PodGroup per group, "
                "none of its pods placed until all can be"
            ],
        ),
        (
            {"scheduler": "kueue", "queue": "gpus", "requiredTopology": "cloud.google.com/gke-nodepool"},
            [
                "Kueue: LocalQueue gpus admits the workload",
                "every pod of a group in one cloud.google.com/gke-nodepool domain (Kueue topology-aware scheduling)",
            ],
        ),
        (
            {"exclusiveTopology": "topology.k8s.aws/network-node-layer-3", "priorityClassName": "serving"},
            [
                "default scheduler, no gang scheduling: a group's pods are placed one by one as nodes have room",
                "one group per topology.k8s.aws/network-node-layer-3 domain, all its pods in it "
                "(LWS exclusive-topology)",
                "priority class serving",
            ],
        ),
    ],
)
def test_explain_says_how_a_groups_pods_are_placed(write_profile, capsys, scheduling, said):
    """explain said nothing of gang scheduling, the queue or the topology a group is held to."""
    assert main(["explain", str(write_profile(merged(MINIMAL, scheduling=scheduling)))]) == 0
    out = capsys.readouterr().out
    placement = out.split("├─ placement\n", 1)[1].split("\n├─ ", 1)[0]
    assert [line[6:] for line in placement.splitlines()] == said


def test_explain_says_how_a_disaggregated_sets_slices_are_placed(capsys):
    profile = REPO / "tests" / "cases" / "valid" / "sglang-prefill-decode-placed" / "profile.yaml"
    assert main(["explain", str(profile)]) == 0
    assert (
        "DisaggregatedSet placementPolicy ExclusiveSlice on network.example.com/rack: each slice's roles together, "
        "the 2 slices spread across those domains" in capsys.readouterr().out
    )
