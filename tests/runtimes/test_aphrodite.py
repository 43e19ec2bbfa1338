"""aphrodite: launched as vllm is, natively from 0.20.0 (`aphrodite serve`), on Ray with the old
server module before it; metric names by version."""

import pytest

from conftest import lws_of, merged, objects_of

APHRODITE = {
    "name": "a",
    "runtime": "aphrodite",
    "image": "alpindale/aphrodite-openai:v0.6.5",
    "model": {"path": "meta-llama/Llama-3.1-70B-Instruct"},
    "parallelism": {"tensor": 4, "pipeline": 2},
    "node": {"gpus": 4},
    "monitoring": {"enabled": False},
}


def _containers(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]


def test_ray_launch_with_aphrodite_server_and_parallelism(render):
    leader, worker = _containers(render(APHRODITE))
    assert leader["command"] == ["/bin/bash", "/lwsgen/scripts/ray-leader.sh"]
    args = leader["args"]
    assert args[:5] == ["python3", "-m", "aphrodite.endpoints.openai.api_server", "--model", APHRODITE["model"]["path"]]
    assert args[args.index("--port") + 1] == "2242"
    assert (
        args[args.index("--tensor-parallel-size") + 1] == "4"
        and args[args.index("--pipeline-parallel-size") + 1] == "2"
    )
    assert args[args.index("--distributed-executor-backend") + 1] == "ray"
    assert {p["name"]: p["containerPort"] for p in leader["ports"]} == {"http": 2242, "ray-gcs": 6379}
    assert worker["command"] == ["/bin/bash", "/lwsgen/scripts/ray-worker.sh"]


# Aphrodite images are tagged by commit: runtimeVersion says the release. (version, launch, serve command)
MATRIX = [
    ("0.10.0", "ray", ["python3", "-m", "aphrodite.endpoints.openai.api_server", "--model"]),
    ("0.20.0", "native", ["aphrodite", "serve"]),
]


@pytest.mark.parametrize("version, launch, serve", MATRIX)
def test_the_server_command_and_launch_follow_the_release(render, version, launch, serve):
    profile = merged(APHRODITE, image="alpindale/aphrodite-openai:c0178f1d5", runtimeVersion=version)
    leader, worker = _containers(render(profile))
    assert leader["args"][: len(serve)] == serve
    assert ("--headless" in worker.get("args", [])) is (launch == "native")
    if launch == "native":
        [own_ip] = [e for e in worker["env"] if e["name"] == "APHRODITE_HOST_IP"]
        assert own_ip["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}


def test_the_new_server_on_ray_when_asked(render):
    profile = merged(APHRODITE, runtimeVersion="0.20.0", **{"launch.mode": "ray"})
    leader, _ = _containers(render(profile))
    assert leader["args"][:2] == ["aphrodite", "serve"] and "ray" in leader["args"]


@pytest.mark.parametrize("version, gauge", [("0.6.5", "gpu_cache_usage_perc"), ("0.9.0", "kv_cache_usage_perc")])
def test_the_kv_cache_rule_reads_the_gauge_the_release_exports(render, version, gauge):
    rendered = render(merged(APHRODITE, runtimeVersion=version, **{"monitoring.enabled": True}))
    groups = objects_of(rendered)["prometheusrule.yaml"]["spec"]["groups"]
    assert any(f"aphrodite:{gauge}{{" in r["expr"] for g in groups for r in g["rules"])


def test_a_commit_tag_without_runtime_version_is_assumed_out_loud(said):
    _, warnings = said(merged(APHRODITE, image="alpindale/aphrodite-openai:c0178f1d5"))
    assert any("does not say which Aphrodite version" in w and "assumed 0.20.0" in w for w in warnings)
