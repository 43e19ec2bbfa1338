"""Profile variants the real-engine tests render (tests/engines): one place, so that the engines'
own parsers (tests/test_engine_args.py) read every command line those tests run."""

from __future__ import annotations

import copy

# The vLLM examples with one GPU per node, so that a group of two pods holds two vLLM ranks on a
# 2-core machine (tests/engines/test_vllm_group.py); --max-num-seqs 2 lets a queue form under load.
VLLM_CPU = {
    "native": ("vllm-llama31-405b", {"parallelism": {"tensor": 1, "pipeline": 2}}),
    "dp": ("vllm-qwen3-235b-a22b", {"parallelism": {"data": 2, "tensor": 1, "expert": False}}),
    # the example as it is (expert parallel on), over a tiny Qwen3 MoE
    "dp-expert": ("vllm-qwen3-235b-a22b", {"parallelism": {"data": 2, "tensor": 1, "expert": True}}),
    # KServe's InferenceService on its mp backend: the head and one worker Deployment, vLLM's own launch
    "isvc-native": (
        "vllm-llama31-405b-kserve-isvc",
        {"parallelism": {"tensor": 1, "pipeline": 2}, "launch": {"mode": "native"}},
    ),
}
VLLM_CPU_EXTRA_ARGS = ["--max-num-seqs", "2"]


def vllm_cpu_profile(profile: dict, changes: dict) -> dict:
    """The example's profile with `changes`, one GPU per node and the extra arguments above."""
    out = copy.deepcopy(profile) | copy.deepcopy(changes)
    out["node"] = {**out["node"], "gpus": 1}
    out["model"] = {**out["model"], "extraArgs": [*out["model"].get("extraArgs", []), *VLLM_CPU_EXTRA_ARGS]}
    return out
