"""What every runtime plugin must honour, checked for each one."""

import json
import subprocess

import pytest

from conftest import TRITON_UNTABLED, VLLM_UNTABLED, lws_of, merged, objects_of
from lwsgen import runtimes
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError
from runtimes.scripts import bin_dir, fake

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


def test_a_beacon_answering_for_another_run_is_a_member_that_restarted(tmp_path):
    """lib.sh's beacon_answers keeps the token a member's beacon gave first: the same address and port
    answering for another run (a container restarted in place, which keeps its pod's IP) is a member
    gone, as a silent one is. Two Deployments (KServe's) have no controller that sees it otherwise."""
    import socket
    import threading

    from lwsgen import resources

    server = socket.create_server(("127.0.0.1", 0))
    answers = iter([b"1run-a\n", b"1run-a\n", b"1run-b\n"])

    def serve():
        for answer in answers:
            client = server.accept()[0]
            client.sendall(answer)
            client.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    bins = bin_dir(tmp_path)
    fake(bins, "getent", 'echo "127.0.0.1 $2"')
    (tmp_path / "lib.sh").write_text(resources.script("lib.sh"))
    (tmp_path / "calls").touch()
    check = "source lib.sh; for i in 1 2 3; do "
    check += 'if beacon_answers head.ns.svc; then echo answers; else echo "gone: $status"; fi; done'
    env = {"PATH": f"{bins}:/usr/bin:/bin", "CALLS": str(tmp_path / "calls")}
    env |= {"LWSGEN_BEACON_PORT": str(server.getsockname()[1]), "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}
    proc = subprocess.run(["/bin/bash", "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    thread.join(5)
    server.close()
    lines = proc.stdout.splitlines()
    assert lines == ["answers", "answers", "gone: head.ns.svc restarted (its beacon answers for another run)"], proc
