"""What every runtime plugin must honour, checked for each one."""

import json
import subprocess

import pytest

from conftest import TRITON_UNTABLED, VLLM_UNTABLED, lws_of, merged, objects_of
from lwsgen import runtimes
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError

IMAGES = {
    "triton-trtllm": "nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3",
    "trtllm-serve": "nvcr.io/nvidia/tensorrt-llm/release:0.21.0",
    "vllm": "vllm/vllm-openai:v0.8.5",
    "aphrodite": "alpindale/aphrodite-openai:v0.6.5",
    "sglang": "lmsysorg/sglang:v0.4.6.post1-cu124",
    "llamacpp": "registry.example.com/llama.cpp-rpc:b6123",
}


def profile_for(name: str, **changes) -> dict:
    base = {
        "name": "demo",
        "runtime": name,
        "image": IMAGES[name],
        "model": {"path": "/models/model"},
        "parallelism": {"tensor": 16},
        "node": {"gpus": 8},
        "monitoring": {"enabled": False},
        "service": {"type": "ClusterIP"},
    }
    return merged(base, **changes)


def test_every_runtime_in_the_contract_is_registered():
    from lwsgen.check.schema import profile_schema

    assert runtimes.known() == sorted(profile_schema()["properties"]["runtime"]["enum"]) == sorted(IMAGES)


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_renders_a_two_node_group_with_probes_on_the_leader_only(render, name):
    rendered = render(profile_for(name))
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == 2
    leader, worker = lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]
    caps = runtimes.newest_capabilities(name)
    ports = {p["name"]: p["containerPort"] for p in leader["ports"]}
    assert ports["http"] == caps.serving_port
    assert leader["readinessProbe"]["httpGet"]["port"] == "http" and leader["startupProbe"]["httpGet"]["port"] == "http"
    assert "readinessProbe" not in worker and "startupProbe" not in worker
    assert objects_of(rendered)["service.yaml"]["spec"]["ports"][0]["targetPort"] == "http"
    assert leader["image"] == worker["image"] == IMAGES[name]


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_every_launch_script_passes_bash_n(render, name, tmp_path):
    for script, text in objects_of(render(profile_for(name)))["configmap.yaml"]["data"].items():
        path = tmp_path / script
        path.write_text(text)
        subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_profile_env_reaches_leader_and_workers(render, name):
    lwt = lws_of(render(profile_for(name, env={"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"})))["spec"][
        "leaderWorkerTemplate"
    ]
    for side in ("leaderTemplate", "workerTemplate"):
        names = [e["name"] for e in lwt[side]["spec"]["containers"][0]["env"]]
        assert "NCCL_SOCKET_IFNAME" in names and "GLOO_SOCKET_IFNAME" in names


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_extra_args_are_separate_arguments_after_the_engine_flags(render, name):
    extra = ["--flag with space", "{{ not jinja }}", "$(NOT_A_VAR)"]
    profile = profile_for(name, **{"model.extraArgs": extra})
    # the releases' own tables refuse these words as the engines would: releases without one
    profile["image"] = {"vllm": VLLM_UNTABLED, "triton-trtllm": TRITON_UNTABLED}.get(name, profile["image"])
    lwt = lws_of(render(profile))["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    # trtllm-serve's command travels as JSON in LWSGEN_SERVE_ARGV (trtllm-llmapi-launch re-splits args)
    env = {e["name"]: e.get("value") for e in leader["env"]}
    args = json.loads(env["LWSGEN_SERVE_ARGV"]) if "LWSGEN_SERVE_ARGV" in env else leader["args"]
    # literal: the kubelet turns $$( back into $( and expands nothing the profile wrote
    assert args[-3:] == [*extra[:2], "$$(NOT_A_VAR)"]


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_leader_ready_is_refused_because_every_leader_needs_its_workers(write_profile, name):
    with pytest.raises(ProblemsError) as err:
        load_profile(write_profile(profile_for(name, lws={"startupPolicy": "LeaderReady"})))
    assert any(p.code == "startup-deadlock" and "LeaderReady" in p.message for p in err.value.problems)


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_unsupported_autoscaling_metric_names_the_supported_ones(write_profile, name):
    caps = runtimes.newest_capabilities(name)
    unsupported = [
        m
        for m in ("gpu-utilization", "queue-compute-ratio", "queue-length", "kv-cache-usage")
        if m not in caps.autoscaling_metrics
    ]
    for metric in unsupported:
        with pytest.raises(ProblemsError) as err:
            load_profile(
                write_profile(
                    profile_for(name, autoscaling={"enabled": True, "metric": metric}, monitoring={"enabled": True})
                )
            )
        # the router's KV-cache average only where the engine reports a KV fraction (llama.cpp does not)
        router = "router-queue-size" + (", router-kv-cache-usage" if caps.router_metrics.kv_usage else "")
        assert (
            err.value.problems[0].message
            == f"{name} cannot produce {metric}; it supports: {', '.join(caps.autoscaling_metrics)}"
            f" (and, with gateway.enabled, {router})"
        )


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_rules_read_only_metrics_the_runtime_declares(name):
    import re

    caps = runtimes.newest_capabilities(name)
    read = {
        m for rule in caps.rules for m in re.findall(r"([a-z_][a-z0-9_]*:?[a-z0-9_]+)\{sel(?:_model)?\}", rule.expr)
    }
    assert read == set(caps.metrics)
    assert [r.autoscaling for r in caps.rules if r.autoscaling] == list(caps.autoscaling_metrics[1:])
