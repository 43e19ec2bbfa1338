"""llamacpp: rpc-server workers, a leader that finds every worker of its own group by DNS."""

import socket
import threading

import pytest

import fastyaml
from conftest import SHARED, lws_of, merged
from runtimes.scripts import bin_dir, env_of, fake, run

LLAMA = {
    "name": "llama",
    "runtime": "llamacpp",
    "image": "registry.example.com/llama.cpp-rpc:b10470",
    "model": {"path": "/models/llama.gguf", "servedName": "llama-70b"},
    "parallelism": {"pipeline": 8},
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
    assert worker["ports"] == [
        {"name": "rpc", "containerPort": 50052, "protocol": "TCP"},
        {"name": "beacon", "containerPort": 29600, "protocol": "TCP"},
    ]
    assert env_of(worker)["LWSGEN_RPC_PORT"] == env_of(leader)["LWSGEN_RPC_PORT"] == "50052"
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "4"


# (build, rpc-servers per 4-GPU worker, whether they cache): the multi-device rpc-server from
# b6688 (PR #16276), -c from b4981 (PR #12496); before, at and after each cutover.
BUILDS = [("b4980", 4, False), ("b4981", 4, True), ("b6123", 4, True), ("b6687", 4, True), ("b6688", 1, True)]


@pytest.mark.parametrize("build, servers, caches", [*BUILDS, ("b10470", 1, True)])
def test_rpc_servers_per_worker_and_the_cache_follow_the_build(render, build, servers, caches):
    rendered = render(merged(LLAMA, image=f"registry.example.com/llama.cpp-rpc:server-cuda-{build}"))
    leader, worker = _containers(rendered)
    assert env_of(worker)["LWSGEN_RPC_SERVERS"] == env_of(leader)["LWSGEN_RPC_SERVERS"] == str(servers)
    assert [p["containerPort"] for p in worker["ports"] if p["name"].startswith("rpc")] == list(
        range(50052, 50052 + servers)
    )
    mounts = {m["mountPath"] for m in worker["volumeMounts"]}
    assert (env_of(worker).get("LLAMA_CACHE") == "/lwsgen/rpc-cache") is caches
    assert ("/lwsgen/rpc-cache" in mounts) is caches


def test_runtime_version_overrides_a_tag_that_does_not_tell(render):
    rendered = render(merged(LLAMA, image="registry.example.com/llama.cpp-rpc:prod", runtimeVersion="b6123"))
    assert env_of(_containers(rendered)[1])["LWSGEN_RPC_SERVERS"] == "4"


def test_tensor_still_renders_as_the_layer_split_with_a_note(said, write_profile, tmp_path, capsys):
    from lwsgen.cli import main

    errors, warnings = said(merged(LLAMA, parallelism={"tensor": 8}))
    assert errors == []
    assert any(w.startswith("parallelism.tensor: llama.cpp splits layers, not heads") for w in warnings)
    assert any("say it as parallelism.pipeline 8" in w for w in warnings)
    # a notice, not a warning: existing profiles still render under --strict
    path = write_profile(merged(LLAMA, parallelism={"tensor": 8}, service={"type": "ClusterIP"}), "old.yaml")
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict"]) == 0
    assert "parallelism.tensor: notice: llama.cpp splits layers" in capsys.readouterr().err


def test_tensor_and_pipeline_together_is_an_error_naming_the_layout(said):
    errors, _ = said(merged(LLAMA, parallelism={"tensor": 2, "pipeline": 4}))
    assert any("set parallelism.pipeline to the number of GPUs (8)" in e for e in errors)


@pytest.mark.parametrize("visible, devices", [(None, ["0", "1", "2", "3"]), ("4,5,6,7", ["4", "5", "6", "7"])])
def test_worker_runs_one_rpc_server_per_gpu_before_the_multi_device_server(tmp_path, visible, devices):
    fake(bin_dir(tmp_path), "rpc-server", 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES" >> "$CALLS"; sleep 1')
    env = {
        "LWSGEN_RPC_PORT": "50052",
        "LWSGEN_RPC_SERVERS": "4",
        "LLAMA_CACHE": str(tmp_path / "cache"),
        "LWS_LEADER_ADDRESS": "localhost",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "5",
        "LWSGEN_POLL_SECONDS": "1",  # the watch sees the servers end within a second, not five
        **BEACON,
        **({"CUDA_VISIBLE_DEVICES": visible} if visible else {}),
    }
    proc, calls = run("llamacpp-worker.sh", tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    servers = sorted(c.split(" ", 1)[1] for c in calls if c.split()[0].endswith("/rpc-server"))
    assert servers == [f"--host 0.0.0.0 --port {50052 + i} -c" for i in range(4)]
    assert sorted(c for c in calls if c.startswith("CUDA_VISIBLE")) == [f"CUDA_VISIBLE_DEVICES={d}" for d in devices]
    assert "starting 4 " in proc.stdout


def test_leader_lists_every_rpc_server_of_every_worker(tmp_path, rpc_listener):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", 'echo "127.0.0.1 $2"')
    fake(bins, "llama-server")
    # Two rpc-servers per worker: the listener on the first port; the second port (listener + 1)
    # may be anything, so the check of it is made to pass by listening there too.
    with socket.socket() as second:
        second.bind(("127.0.0.1", rpc_listener + 1))
        second.listen(8)
        env = {
            "LWS_LEADER_ADDRESS": "llama-0.llama.default",
            "LWS_GROUP_SIZE": "2",
            "LWSGEN_RPC_PORT": str(rpc_listener),
            "LWSGEN_RPC_SERVERS": "2",
            "LWSGEN_RENDEZVOUS_TIMEOUT": "10",
            "LWSGEN_BEACON_PORT": str(rpc_listener),  # the same listener answers the beacon
        }
        proc, calls = run("llamacpp-leader.sh", tmp_path, env, ("llama-server",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [served] = [c for c in calls if c.split()[0].endswith("/llama-server")]
    port = rpc_listener
    assert served.endswith(f"--rpc llama-0-1.llama.default:{port},llama-0-1.llama.default:{port + 1}")


def test_metrics_flag_only_when_monitoring(render):
    assert "--metrics" in _containers(render(merged(LLAMA, monitoring={"enabled": True})))[0]["args"]
    assert "--metrics" not in _containers(render(LLAMA))[0]["args"]


def test_same_flags_as_the_upstream_lws_llamacpp_example(render):
    upstream = next(fastyaml.load_all((SHARED / "reference" / "lws_docs_examples_llamacpp_k8s_lws.yaml").read_text()))
    up_lwt = upstream["spec"]["leaderWorkerTemplate"]
    up_leader = up_lwt["leaderTemplate"]["spec"]["containers"][0]["command"]
    up_worker = up_lwt["workerTemplate"]["spec"]["containers"][0]["args"]
    leader, _ = _containers(render(LLAMA))
    assert "--n-gpu-layers" in up_leader and "--n-gpu-layers" in leader["args"]
    assert up_worker[:2] == ["--host", "0.0.0.0"]  # ours: llamacpp-worker.sh, tested below


BEACON = {"LWSGEN_BEACON_PORT": "0"}  # a worker's beacon on any free port (the tests here do not dial it)


@pytest.fixture
def rpc_listener():
    """A local TCP listener standing in for a worker's rpc-server and its beacon."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.sendall(b"1")  # what a beacon answers (the rpc-server checks read nothing)
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
        "LWSGEN_BEACON_PORT": str(rpc_listener),
    }
    proc, calls = run(
        "llamacpp-leader.sh", tmp_path, env, ("llama-server", "--model", "/m.gguf", "--n-gpu-layers", "999")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    port = rpc_listener
    assert f"waiting: 1 of 2 workers do not answer on port {port} (llama-0-2.llama.default)" in proc.stdout
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
            "LWSGEN_BEACON_PORT": str(port),
        }
        proc, calls = run("llamacpp-leader.sh", tmp_path, env, ("llama-server",))
    assert proc.returncode == 1
    assert f"gave up after 1s: 1 of 1 workers do not answer on port {port} (llama-3-1.llama.ns)" in proc.stdout
    assert not any(c.endswith("llama-server") for c in calls)


def test_a_one_pod_group_serves_without_rpc(tmp_path):
    fake(bin_dir(tmp_path), "llama-server")
    env = {
        "LWS_LEADER_ADDRESS": "l-0.l.ns",
        "LWS_GROUP_SIZE": "1",
        "LWSGEN_RPC_PORT": "50052",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "5",
        **BEACON,
    }
    proc, calls = run("llamacpp-leader.sh", tmp_path, env, ("llama-server", "--model", "/m.gguf"))
    assert proc.returncode == 0 and calls[-1].endswith("llama-server --model /m.gguf")


@pytest.mark.parametrize("binary", ["rpc-server", "ggml-rpc-server"])
def test_worker_runs_whichever_rpc_server_the_image_has(tmp_path, binary):
    fake(bin_dir(tmp_path), binary)
    env = {"LWSGEN_RPC_PORT": "50052", "LWS_LEADER_ADDRESS": "localhost", "LWSGEN_RENDEZVOUS_TIMEOUT": "5", **BEACON}
    proc, [call] = run("llamacpp-worker.sh", tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    assert call.endswith(f"{binary} --host 0.0.0.0 --port 50052")


def test_worker_caches_when_llama_cache_is_set(tmp_path):
    fake(bin_dir(tmp_path), "ggml-rpc-server")
    env = {"LWSGEN_RPC_PORT": "50052", "LWS_LEADER_ADDRESS": "localhost", "LWSGEN_RENDEZVOUS_TIMEOUT": "5", **BEACON}
    proc, [call] = run("llamacpp-worker.sh", tmp_path, {**env, "LLAMA_CACHE": str(tmp_path)})
    assert proc.returncode == 0 and call.endswith("ggml-rpc-server --host 0.0.0.0 --port 50052 -c")


def test_worker_without_rpc_support_says_how_to_build_it(tmp_path):
    bin_dir(tmp_path)
    proc, _ = run("llamacpp-worker.sh", tmp_path, {"LWSGEN_RPC_PORT": "50052"})
    assert proc.returncode == 1 and "-DGGML_RPC=ON" in proc.stdout
