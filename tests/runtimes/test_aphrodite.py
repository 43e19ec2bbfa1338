"""aphrodite: the vLLM Ray launch with Aphrodite's own server and port."""

from conftest import lws_of

APHRODITE = {
    "name": "a",
    "runtime": "aphrodite",
    "image": "alpindale/aphrodite-openai:v0.6.5",
    "model": {"path": "meta-llama/Llama-3.1-70B-Instruct"},
    "parallelism": {"tensor": 4, "pipeline": 2},
    "node": {"gpus": 4},
    "monitoring": {"enabled": False},
}


def test_ray_launch_with_aphrodite_server_and_parallelism(render):
    lwt = lws_of(render(APHRODITE))["spec"]["leaderWorkerTemplate"]
    leader, worker = lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]
    assert leader["command"] == ["/bin/bash", "/lwsgen/scripts/ray-leader.sh"]
    args = leader["args"]
    assert args[:3] == ["python3", "-m", "aphrodite.endpoints.openai.api_server"]
    assert args[args.index("--port") + 1] == "2242"
    assert (
        args[args.index("--tensor-parallel-size") + 1] == "4"
        and args[args.index("--pipeline-parallel-size") + 1] == "2"
    )
    assert args[args.index("--distributed-executor-backend") + 1] == "ray"
    assert {p["name"]: p["containerPort"] for p in leader["ports"]} == {"http": 2242, "ray-gcs": 6379}
    assert worker["command"] == ["/bin/bash", "/lwsgen/scripts/ray-worker.sh"]
