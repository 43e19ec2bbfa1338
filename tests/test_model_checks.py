"""Profiles that rendered with exit 0 and then failed or surprised on a cluster (#32 items 6, 8, 11,
12, 14): each now an error or a warning at its line, and explain takes a directory."""

from __future__ import annotations

import pytest

import fastyaml
from conftest import MINIMAL, PROFILES, merged


def test_a_model_path_outside_the_mounted_claim_is_an_error_naming_the_mount(said):
    profile = merged(MINIMAL, **{"model.path": "/models/x"}, storage={"claimName": "models"})
    errors, _ = said(profile)
    assert errors == [
        "model.path: /models/x is not under storage.mountPath /var/run/models, where the claim models is mounted: "
        "the engine would find no weights; put the model under /var/run/models or set storage.mountPath to the "
        "directory that holds it"
    ]
    assert said(merged(profile, **{"storage.mountPath": "/models"}))[0] == []
    assert said(merged(profile, **{"model.path": "/var/run/models/x"}))[0] == []
    assert said(merged(profile, **{"model.path": "/var/run/models/../x"}))[0]  # normalised, not a prefix test


@pytest.mark.parametrize("repo", ["meta-llama/Llama-3.1-8B-Instruct", "google/gemma-2-9b-it"])
def test_a_gated_hub_model_without_a_token_is_warned_about(said, repo):
    _, warnings = said(merged(MINIMAL, **{"model.path": repo}))
    assert any(w.startswith("model.path: ") and "gated on the Hub" in w and "model.tokenSecret" in w for w in warnings)
    token = {"model.tokenSecret": {"name": "hf", "key": "token"}}
    assert not any("gated" in w for w in said(merged(MINIMAL, **{"model.path": repo}, **token))[1])
    assert not any("gated" in w for w in said(merged(MINIMAL, **{"model.path": "Qwen/Qwen3-8B"}))[1])


def test_leaving_out_parallelism_says_what_was_assumed(said):
    _, warnings = said(merged(MINIMAL, parallelism=...))
    assert [w for w in warnings if w.startswith("node.gpus")] == [
        "node.gpus: no parallelism: assumed tensor 1 x pipeline 1, so each pod takes 1 of node.gpus 8 GPUs beside the "
        "node's whole CPU and memory; set parallelism.tensor: 8 to use the node, or node.gpus: 1"
    ]
    assert not any(w.startswith("node.gpus") for w in said(MINIMAL)[1])


@pytest.mark.parametrize(
    "image", ["ghcr.io/ggml-org/llama.cpp:server-cuda-b10470", "ghcr.io/ggml-org/llama.cpp:full-cuda"]
)
def test_a_published_llamacpp_image_cannot_run_an_rpc_group(said, image):
    profile = merged(
        MINIMAL,
        runtime="llamacpp",
        image=image,
        **{"model.path": "/m.gguf"},
        parallelism={"pipeline": 2},
        node={"gpus": 1},
    )
    errors, _ = said(profile)
    assert len(errors) == 1 and errors[0].startswith("image: ghcr.io/ggml-org/llama.cpp images are built without RPC")
    assert "-DGGML_RPC=ON" in errors[0]
    assert said(merged(profile, parallelism={"pipeline": 1}))[0] == []  # one pod: no rpc-server needed
    assert said(merged(profile, image="registry.example.com/ml/llama.cpp-rpc:b10470"))[0] == []


def test_explain_of_a_directory_explains_every_profile(capsys):
    from lwsgen.cli import main

    assert main(["explain", str(PROFILES)]) == 0
    out = capsys.readouterr().out
    for profile in sorted(PROFILES.glob("*.yaml")):
        assert f"\n{profile.stem} (" in f"\n{out}"


@pytest.mark.parametrize(
    "written, meant",
    [
        ("H100", "NVIDIA-H100-80GB-HBM3"),
        ("h100-80gb", "NVIDIA-H100-80GB-HBM3"),  # as plan spells the GPU
        ("a100", "NVIDIA-A100-SXM4-80GB"),
    ],
)
def test_a_gpu_product_no_node_carries_is_an_error_naming_the_label(said, written, meant):
    errors, _ = said(merged(MINIMAL, **{"node.gpuProduct": written}))
    assert len(errors) == 1 and errors[0].startswith(f"node.gpuProduct: {written!r} is not an nvidia.com/gpu.product")
    assert f"did you mean {meant}?" in errors[0] and "node.gpuProductUnlisted: true" in errors[0]
    assert said(merged(MINIMAL, **{"node.gpuProduct": meant}))[0] == []
    assert said(merged(MINIMAL, **{"node.gpuProduct": written, "node.gpuProductUnlisted": True}))[0] == []


@pytest.mark.parametrize("label", ["NVIDIA-A40", "NVIDIA-H100"])
def test_a_label_shaped_gpu_product_lwsgen_does_not_list_is_a_warning(said, label):
    """A GPU newer than the list (A40, GB300) must still render; a near miss is said."""
    errors, warnings = said(merged(MINIMAL, **{"node.gpuProduct": label}))
    assert errors == [] and any(w.startswith(f"node.gpuProduct: {label!r} is not an nvidia.com") for w in warnings)
    quiet = said(merged(MINIMAL, **{"node.gpuProduct": label, "node.gpuProductUnlisted": True}))[1]
    assert not any("gpu.product label" in w for w in quiet)


@pytest.mark.parametrize(
    "label",
    [
        "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "Tesla-T4-SHARED",
        "NVIDIA-H200-MIG-7g.141gb-SHARED",
        "NVIDIA-H100-80GB-HBM3-MIG-1g.10gbme",
    ],
)
def test_gpu_feature_discovery_suffixes_are_labels_too(said, label):
    assert said(merged(MINIMAL, **{"node.gpuProduct": label}))[0] == []


def test_plan_emits_a_gpu_product_render_accepts(tmp_path, capsys):
    from lwsgen.cli import main

    plan = ["plan", "--model", "llama-3.1-70b", "--gpu", "h100-80gb", "--emit-profile", "planned"]
    assert main([*plan, "--runtime", "vllm", "--image", "vllm/vllm-openai:v0.33.0"]) == 0
    profile = tmp_path / "planned.yaml"
    profile.write_text(capsys.readouterr().out)
    assert "gpuProduct: NVIDIA-H100-80GB-HBM3" in profile.read_text()
    assert main(["render", str(profile), "-o", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize(
    "model, served",
    [
        ({"path": "meta-llama/Llama-3.1-8B-Instruct"}, "meta-llama/Llama-3.1-8B-Instruct"),
        ({"path": "/models/Llama-3.1-8B-Instruct"}, "/models/Llama-3.1-8B-Instruct"),
        ({"path": "/models/m", "servedName": "chat"}, "chat"),
    ],
)
def test_the_default_served_name_is_what_the_engine_itself_would_serve(render, model, served):
    """vLLM and SGLang serve under the model as given (served_model_name defaults to it); the LWS
    examples' clients ask for the Hub id. The profile name was the default, and model-not-found."""

    lws = fastyaml.load(render(merged(MINIMAL, model=model)).files["leaderworkerset.yaml"])
    args = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"]
    assert args[args.index("--served-model-name") + 1] == served


LLAMACPP = {"runtime": "llamacpp", "image": "registry.example.com/llama.cpp-rpc:b10470", "parallelism": {"pipeline": 2}}


@pytest.mark.parametrize(
    "change, said",
    [
        ({"model.path": "./Llama-3.1-8B-Instruct"}, "model-path-relative"),
        ({"model.path": "Llama-3.1-8B-Instruct"}, "model-path-relative"),  # a bare name: Hub ids have an org
        ({"model.path": "models/meta-llama/Llama-3.1-8B-Instruct"}, "model-path-relative"),
        ({"model.path": "meta--llama/x"}, "model-path-relative"),  # huggingface_hub refuses '--'
        ({"model.path": "hf://meta-llama/Llama-3.1-8B-Instruct"}, "model-path-relative"),
        ({"model.path": "pvc://models/llama"}, "model-path-relative"),
        ({"model.path": "meta-llama/Llama-3.1-8B-Instruct"}, None),
        ({"model.path": "/models/Llama-3.1-8B-Instruct"}, None),
        ({"model.path": "s3://bucket/llama"}, None),  # vLLM's Run:ai streamer reads it
        ({**LLAMACPP, "model.path": "weights/llama.gguf"}, "bad-model-path"),  # llama.cpp downloads no Hub id
        ({**LLAMACPP, "model.path": "/models/llama.gguf"}, None),
    ],
)
def test_a_model_path_is_absolute_or_a_hub_id_the_engine_downloads(write_profile, change, said):
    """'./m', 'm' or 'models/org/name' rendered exit 0 and the engine looked for the weights in its
    image's working directory; llama.cpp took a relative GGUF path, Hub-id shaped or not."""
    from lwsgen.pipeline import load_profile
    from lwsgen.problems import ProblemsError

    try:
        load_profile(write_profile(merged(MINIMAL, **change)))
        codes = []
    except ProblemsError as err:
        codes = [p.code for p in err.problems if p.path == "model.path"]
    assert codes == ([said] if said else [])
