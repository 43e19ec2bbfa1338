"""Every fix a message suggests, applied and rendered: a suggestion that is then refused (the llama.cpp
autoscaling message offered router-kv-cache-usage) or cannot hold the model (a layout hint of tensor
8 x pipeline 1 for a 405B bf16 model on H100) sends the user round in circles. Each row: a profile,
the message it gets, how to read the suggestions out of it, and each suggestion rendered."""

from __future__ import annotations

import re

import pytest

from conftest import MINIMAL, merged

H100 = "NVIDIA-H100-80GB-HBM3"
GATEWAY = {"enabled": True, "parentRefs": [{"name": "gw"}]}
LLAMACPP = merged(
    MINIMAL,
    runtime="llamacpp",
    image="registry.example.com/llama.cpp-rpc:b10470",
    model={"path": "/m.gguf"},
    parallelism={"pipeline": 8},
    node={"gpus": 4},
    monitoring={"enabled": True},
)


def _layouts(message: str) -> list[dict]:
    """'valid layouts near it: tensor 8 x pipeline 2 (...); node.gpus 6 with the same parallelism (...)'"""
    out = []
    for part in message.split("valid layouts near it: ", 1)[1].split("; "):
        if found := re.match(r"tensor (\d+) x pipeline (\d+)", part):
            out.append({"parallelism": {"tensor": int(found[1]), "pipeline": int(found[2])}})
        elif found := re.match(r"pipeline (\d+)", part):
            out.append({"parallelism": {"pipeline": int(found[1])}})
        elif found := re.match(r"data (\d+)", part):
            out.append({"parallelism.data": int(found[1])})
        elif found := re.match(r"node\.gpus (\d+)", part):
            out.append({"node.gpus": int(found[1])})
    return out


def _metrics(message: str) -> list[dict]:
    """'<runtime> cannot produce X; it supports: a, b (and, with gateway.enabled, c, d)'"""
    supported = message.split("it supports: ", 1)[1]
    plain, _, routed = supported.partition(" (and, with gateway.enabled, ")
    out = [{"autoscaling.metric": m} for m in plain.split(", ")]
    out += [{"autoscaling.metric": m, "gateway": GATEWAY} for m in routed.rstrip(")").split(", ") if m]
    return out


def _flags(message: str) -> list[dict]:
    """'--x is not a flag of sglang 0.5.23 (argparse finds it ambiguous: --a, --b); use one of those'"""
    candidates = message.split("ambiguous: ", 1)[1].split(")", 1)[0].split(", ")
    return [{"model.extraArgs": ["--mem-fraction-static", "0.8", flag, "64"]} for flag in candidates]


def _gpu(message: str) -> list[dict]:
    return [{"node.gpuProduct": message.split("did you mean ", 1)[1].split("?", 1)[0]}]


SGLANG = merged(MINIMAL, runtime="sglang", image="lmsysorg/sglang:v0.5.23")
ROWS = {
    "layout-not-divisible": (merged(MINIMAL, parallelism={"tensor": 4, "pipeline": 3}), "parallelism.tensor", _layouts),
    "layout-that-must-fit-405b": (
        merged(
            MINIMAL,
            parallelism={"tensor": 4, "pipeline": 3},
            **{"model.family": "llama-3.1-405b", "node.gpuProduct": H100},
        ),
        "parallelism.tensor",
        _layouts,
    ),
    "layout-llamacpp": (merged(LLAMACPP, parallelism={"pipeline": 6}), "node.gpus", _layouts),
    "layout-that-must-divide-the-heads": (
        merged(MINIMAL, parallelism={"tensor": 8}, node={"gpus": 6}, **{"model.family": "llama-3.1-70b"}),
        "parallelism.tensor",
        _layouts,
    ),
    "llamacpp-metric": (
        merged(LLAMACPP, autoscaling={"enabled": True, "metric": "kv-cache-usage"}),
        "autoscaling.metric",
        _metrics,
    ),
    "vllm-metric": (
        merged(MINIMAL, autoscaling={"enabled": True, "metric": "queue-compute-ratio"}, monitoring={"enabled": True}),
        "autoscaling.metric",
        _metrics,
    ),
    "sglang-flag": (
        merged(SGLANG, **{"model.extraArgs": ["--mem-fraction-static", "0.8", "--cuda-graph-max-bs", "64"]}),
        "model.extraArgs[2]",
        _flags,
    ),
    "gpu-product": (merged(MINIMAL, **{"node.gpuProduct": "H100"}), "node.gpuProduct", _gpu),
}


@pytest.mark.parametrize("row", ROWS)
def test_every_suggested_fix_renders(said, row):
    profile, field, suggestions = ROWS[row]
    errors, _ = said(profile)
    [message] = [e.split(": ", 1)[1] for e in errors if e.startswith(f"{field}: ")]
    fixes = suggestions(message)
    assert fixes, message
    for fix in fixes:
        errors, warnings = said(merged(profile, **fix))
        assert errors == [], (fix, errors)
        assert not any("need" in w and "per GPU" in w for w in warnings), (fix, warnings)  # it fits


def test_the_405b_layout_hint_leaves_out_the_layout_that_cannot_hold_it(said):
    profile, field, _ = ROWS["layout-that-must-fit-405b"]
    [message] = [e for e in said(profile)[0] if e.startswith(f"{field}: ")]
    assert "tensor 8 x pipeline 1" not in message and "tensor 8 x pipeline 2" in message


def test_an_unrelated_error_does_not_empty_the_layout_hint(said):
    """Each suggested layout was held back when the profile had any other error (autoscaling's
    minReplicas above maxReplicas): the hint read 'valid layouts near it: ' and nothing."""
    profile, field, _ = ROWS["layout-not-divisible"]
    broken = merged(profile, autoscaling={"enabled": True, "minReplicas": 4, "maxReplicas": 2})
    errors = said(broken)[0]
    [message] = [e.split(": ", 1)[1] for e in errors if e.startswith(f"{field}: ")]
    [alone] = [e.split(": ", 1)[1] for e in said(profile)[0] if e.startswith(f"{field}: ")]
    assert message == alone and _layouts(message)
    assert any(e.startswith("autoscaling.minReplicas: ") for e in errors)
