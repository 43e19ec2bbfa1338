"""The engine's arguments against the model and the profile, at render time."""

import pytest

from conftest import merged, problem_codes
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError
from runtimes.test_all_runtimes import profile_for


def _problems(write_profile, profile):
    try:
        load_profile(write_profile(profile))
    except ProblemsError as err:
        return err.problems
    return []


def test_tensor_must_divide_the_attention_heads(write_profile):
    # Llama 3.1 70B: 64 attention heads, 8 KV heads (config.json)
    profile = profile_for(
        "vllm", model={"path": "/models/m", "family": "llama-3.1-70b"}, **{"parallelism.tensor": 6, "node.gpus": 6}
    )
    [problem] = _problems(write_profile, profile)
    assert problem.path == "parallelism.tensor" and problem.code == "not-divisible"
    assert "tensor 6 does not divide the model's 64 attention heads" in problem.message and "4, 8" in problem.message


def test_kv_heads_are_divided_or_replicated_by_a_whole_factor(write_profile):
    explicit = {"path": "/models/m", "attentionHeads": 48, "kvHeads": 8, "layers": 56}
    bad = profile_for("vllm", model=explicit, **{"parallelism.tensor": 12, "node.gpus": 12})
    [problem] = _problems(write_profile, bad)
    assert "tensor 12 neither divides the model's 8 KV heads nor is a multiple of them" in problem.message
    good = profile_for("vllm", model=explicit, **{"parallelism.tensor": 16})  # each KV head on 2 ranks
    assert _problems(write_profile, good) == []


def test_uneven_pipeline_stages_are_a_warning(write_profile):
    # Llama 3.1 405B: 126 layers; pipeline 4 gives stages of 31 and 32
    profile = profile_for(
        "vllm",
        model={"path": "/models/m", "family": "llama-3.1-405b"},
        **{"parallelism.tensor": 8, "parallelism.pipeline": 4},
    )
    _, _, warnings = load_profile(write_profile(profile))
    assert [w.code for w in warnings] == ["uneven-stages"]
    assert "pipeline 4 does not divide the model's 126 layers" in warnings[0].message


def test_llamacpp_splits_layers_not_heads(write_profile):
    profile = profile_for(
        "llamacpp", model={"path": "/m.gguf", "family": "llama-3.1-70b"}, **{"parallelism.tensor": 6, "node.gpus": 6}
    )
    assert "not-divisible" not in problem_codes(write_profile(profile))


@pytest.mark.parametrize(
    "runtime, arg",
    [
        ("vllm", "--tensor-parallel-size=4"),
        ("vllm", "--port"),
        ("sglang", "--tp"),
        ("llamacpp", "-ngl"),
        ("trtllm-serve", "--tp_size"),
        ("triton-trtllm", "--http-port=9000"),
    ],
)
def test_extra_args_may_not_repeat_a_derived_flag(write_profile, runtime, arg):
    # a flag of each engine's own (vLLM 0.8.5, the base profile's, has no --log-level; tritonserver none)
    harmless = {"vllm": ["--max-log-len", "100"], "triton-trtllm": ["--log-verbose", "1"]}.get(
        runtime, ["--log-level", "debug"]
    )
    value = [] if "=" in arg else ["4"]
    profile = profile_for(runtime, **{"model.extraArgs": [*harmless, arg, *value]})
    if runtime == "triton-trtllm":
        profile = merged(profile, **{"model.path": "/models/repo"})
    problems = _problems(write_profile, profile)
    assert [(p.path, p.code) for p in problems] == [("model.extraArgs[2]", "derived-flag")]
    assert problems[0].message.startswith(f"{arg.split('=')[0]} is a flag lwsgen derives for {runtime}")


def test_an_unknown_gpu_or_an_instance_type_alone_says_the_fit_was_not_checked(write_profile):
    unknown = profile_for(
        "vllm",
        model={"path": "/models/m", "family": "llama-3.1-70b"},
        **{"node.gpuProduct": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"},
    )
    _, _, [warning] = load_profile(write_profile(unknown))
    assert warning.path == "node.gpuProduct" and warning.code == "fit-not-checked"
    assert (
        "'NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition' is not a GPU lwsgen knows" in warning.message
        and "NVIDIA-H200" in warning.message
    )
    alone = profile_for("vllm", model={"path": "/models/m", "params": 70}, **{"node.instanceType": "p4d.24xlarge"})
    _, _, [warning] = load_profile(write_profile(alone))
    assert warning.path == "node.instanceType" and "set node.gpuProduct" in warning.message
