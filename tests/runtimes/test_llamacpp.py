"""llamacpp: rpc-server workers, a leader that finds every worker of its own group by DNS."""

import socket
import threading

import pytest
import yaml

from conftest import SHARED, lws_of, merged
from runtimes.scripts import bin_dir, env_of, fake, run

LLAMA = {
    "name": "llama",
    "runtime": "llamacpp",
    "image": "registry.example.com/llama.cpp-rpc:b6123",
    "model": {"path": "/models/llama.gguf", "servedName": "llama-70b"},
    "parallelism": {"tensor": 8},
    "node": {"gpus": 4},
    "monitoring": {"enabled": False},
}


def _containers(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]


def test_leader_serves_with_every_layer_on_gpus_and_workers_offer_rpc(render):
    rendered = render(LLAMA)
    leader, worker = _containers(rendered)
    assert lws_of(rendered)["spec"]["leaderWorkerTemplate"]["size"] == 2  # 8 GPUs / 4 per node
    assert leader["command"] == ["/bin/bash", "/lwsgen/scripts/llamacpp-leader.sh"]
    assert leader["args"] == [
        "llama-server",
        "--model",
        "/models/llama.gguf",
        "--alias",
        "llama-70b",
        "--host",
        "0.0.0.0",
        "--port",
        "8080",
        "--n-gpu-layers",
        "999",
    ]
    assert worker["command"] == ["/bin/bash", "/lwsgen/scripts/llamacpp-worker.sh"]
    assert worker["ports"] == [{"name": "rpc", "containerPort": 50052, "protocol": "TCP"}]
    assert env_of(worker)["LWSGEN_RPC_PORT"] == env_of(leader)["LWSGEN_RPC_PORT"] == "50052"
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_metrics_flag_only_when_monitoring(render):
    assert "--metrics" in _containers(render(merged(LLAMA, monitoring={"enabled": True})))[0]["args"]
    assert "--metrics" not in _containers(render(LLAMA))[0]["args"]


def test_same_flags_as_the_upstream_lws_llamacpp_example(render):
    upstream = next(yaml.safe_load_all((SHARED / "reference" / "lws_docs_examples_llamacpp_k8s_lws.yaml").read_text()))
    up_lwt = upstream["spec"]["leaderWorkerTemplate"]
    up_leader = up_lwt["leaderTemplate"]["spec"]["containers"][0]["command"]
    up_worker = up_lwt["workerTemplate"]["spec"]["containers"][0]["args"]
    leader, _ = _containers(render(LLAMA))
    assert "--n-gpu-layers" in up_leader and "--n-gpu-layers" in leader["args"]
    assert up_worker[:2] == ["--host", "0.0.0.0"]  # ours: llamacpp-worker.sh, tested below


@pytest.fixture
def rpc_listener():
    """A local TCP listener standing in for a worker's rpc-server."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_leader_resolves_every_worker_of_its_group_then_execs_llama_server_with_rpc(tmp_path, rpc_listener):
    bins = bin_dir(tmp_path)
    # llama-0-2 resolves only from the third lookup on; everything resolves to this machine.
    fake(
        bins,
        "getent",
        '[ "$2" != llama-0-2.llama.default ] || [ "$(grep -c llama-0-2 "$CALLS")" -ge 3 ] || exit 2; echo "127.0.0.1 '
        '$2"',
    )
    fake(bins, "llama-server")
    env = {
        "LWS_LEADER_ADDRESS": "llama-0.llama.default",
        "LWS_GROUP_SIZE": "3",
        "LWSGEN_RPC_PORT": str(rpc_listener),
        "LWSGEN_RENDEZVOUS_TIMEOUT": "30",
    }
    proc, calls = run(
        "llamacpp-leader.sh", tmp_path, env, ("llama-server", "--model", "/m.gguf", "--n-gpu-layers", "999")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "waiting: 1 of 2 rpc-servers not reachable yet (llama-0-2.llama.default)" in proc.stdout
    port = rpc_listener
    [served] = [c for c in calls if c.split()[0].endswith("/llama-server")]
    assert served.endswith(
        "llama-server --model /m.gguf --n-gpu-layers 999 --rpc "
        f"llama-0-1.llama.default:{port},llama-0-2.llama.default:{port}"
    )


def test_leader_gives_up_when_a_worker_never_answers(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", 'echo "127.0.0.1 $2"')
    fake(bins, "llama-server")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        env = {
            "LWS_LEADER_ADDRESS": "llama-3.llama.ns",
            "LWS_GROUP_SIZE": "2",
            "LWSGEN_RPC_PORT": str(port),
            "LWSGEN_RENDEZVOUS_TIMEOUT": "1",
            "LWSGEN_POLL_SECONDS": "0.2",
        }
        proc, calls = run("llamacpp-leader.sh", tmp_path, env, ("llama-server",))
    assert proc.returncode == 1
    assert "gave up after 1s: 1 of 1 rpc-servers not reachable yet (llama-3-1.llama.ns)" in proc.stdout
    assert not any(c.endswith("llama-server") for c in calls)


def test_a_one_pod_group_serves_without_rpc(tmp_path):
    fake(bin_dir(tmp_path), "llama-server")
    env = {
        "LWS_LEADER_ADDRESS": "l-0.l.ns",
        "LWS_GROUP_SIZE": "1",
        "LWSGEN_RPC_PORT": "50052",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "5",
    }
    proc, calls = run("llamacpp-leader.sh", tmp_path, env, ("llama-server", "--model", "/m.gguf"))
    assert proc.returncode == 0 and calls[-1].endswith("llama-server --model /m.gguf")


@pytest.mark.parametrize("binary", ["rpc-server", "ggml-rpc-server"])
def test_worker_runs_whichever_rpc_server_the_image_has(tmp_path, binary):
    fake(bin_dir(tmp_path), binary)
    env = {"LWSGEN_RPC_PORT": "50052", "LWS_LEADER_ADDRESS": "localhost", "LWSGEN_RENDEZVOUS_TIMEOUT": "5"}
    proc, [call] = run("llamacpp-worker.sh", tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    assert call.endswith(f"{binary} --host 0.0.0.0 --port 50052")


def test_worker_without_rpc_support_says_how_to_build_it(tmp_path):
    bin_dir(tmp_path)
    proc, _ = run("llamacpp-worker.sh", tmp_path, {"LWSGEN_RPC_PORT": "50052"})
    assert proc.returncode == 1 and "-DGGML_RPC=ON" in proc.stdout
