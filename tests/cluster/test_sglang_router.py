"""Issue #34 req 6: the SGLang P/D example's router run as the real sgl-router (sglang-router 0.3.2,
the image's release, from PyPI) against the real API server, finding the role sets' pods the real LWS
controller made as the rendered Deployment's pod would: with the rendered ServiceAccount's RBAC, by the
rendered selectors, in the rendered namespace. The pods are kwok's (no engine runs) on the session's
loopback plane (conftest.loopback_plane: pod IPs are loopback addresses), where a stand-in SGLang HTTP
server listens for each leader, so the router's requests land where a test can see them."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.cluster.api import wait_for
from tests.cluster.deploy import apply_all, provide, rendered_in

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
ROUTER_PYTHON = REPO / ".venv-engines" / "sglang-router" / "bin" / "python"
EXAMPLE = "sglang-deepseek-r1-pd"
NAMESPACE = "router"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
DS_ROLE = "disaggregatedset.x-k8s.io/role"


class _Engine(http.server.ThreadingHTTPServer):
    """A stand-in SGLang server on one pod's IP: answers what the router asks, records each request."""

    daemon_threads = True

    def __init__(self, address, role: str):
        self.role, self.requests = role, []
        super().__init__(address, _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self.server.requests.append(("GET", self.path, None))
        self._answer({"status": "ok", "model_path": "deepseek-r1", "disaggregation_mode": self.server.role})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(("POST", self.path, body))
        self._answer({"text": f"from {self.server.role}", "meta_info": {"id": "1", "finish_reason": {"type": "stop"}}})

    def log_message(self, *_):
        pass


@pytest.fixture
def plane(loopback_plane):
    if not ROUTER_PYTHON.exists():
        pytest.fail(f"no sglang-router at {ROUTER_PYTHON}: make cluster installs it", pytrace=False)
    return loopback_plane


def _pods(api, namespace: str) -> list[dict]:
    return api.list("v1", "Pod", namespace)


def _stop(engine: _Engine) -> None:
    engine.shutdown()
    engine.server_close()


def _get(url: str, timeout: float = 5):
    import requests

    return requests.get(url, timeout=timeout)


def _router_workers(port: int) -> list[str]:
    """The worker URLs the router routes to (GET /workers)."""
    try:
        answer = _get(f"http://127.0.0.1:{port}/workers").json()
    except Exception:  # noqa: BLE001 - not up yet
        return []
    return sorted(w["url"] for w in answer.get("workers", []))


def _bootstrap_port(objects: list[dict]) -> int:
    """The bootstrap port the prefill role's pods announce (annotation sglang.ai/bootstrap-port)."""
    ds = next(o for o in objects if o["kind"] == "DisaggregatedSet")
    prefill = next(r for r in ds["spec"]["roles"] if r["name"] == "prefill")
    template = prefill["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    return int(template["metadata"]["annotations"]["sglang.ai/bootstrap-port"])


def test_the_real_router_routes_to_the_role_leaders_it_finds(plane, tmp_path):
    import requests

    example = rendered_in(REPO / "profiles" / f"{EXAMPLE}.yaml", NAMESPACE, tmp_path, EXAMPLE)
    objects = example.objects()
    api = plane.admin
    provide(api, example, objects)
    assert apply_all(api, example, objects) == []

    def role_pods_with_ips():
        pods = [p for p in api.list("v1", "Pod", NAMESPACE) if DS_ROLE in p["metadata"].get("labels", {})]
        return pods if len(pods) == 4 and all(p.get("status", {}).get("podIP") for p in pods) else None

    # The engine serves HTTP on the leaders only (SGLang's node rank 0; the other ranks run no server):
    # a stand-in there, nothing on the workers. Each leader's readiness probe (GET /ready on port http)
    # is evaluated against it, and its outcome given to kwok, as a kubelet would.
    engines: dict[str, _Engine] = {}
    for pod in wait_for("the role sets' four pods have IPs", role_pods_with_ips, attempts=600):
        labels, ip = pod["metadata"]["labels"], pod["status"]["podIP"]
        if labels[WORKER_INDEX] != "0":
            continue
        engine = _Engine((ip, 30000), labels[DS_ROLE])
        threading.Thread(target=engine.serve_forever, daemon=True).start()
        engines[ip] = engine
        probe = pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]
        assert probe["port"] == "http" and _get(f"http://{ip}:30000{probe['path']}").status_code == 200
        api.merge_patch("v1", "Pod", pod["metadata"]["name"], NAMESPACE,
                        {"metadata": {"annotations": {"lwsgen.test/probes": "passed"}}})  # fmt: skip
    assert sorted(e.role for e in engines.values()) == ["decode", "prefill"]

    router = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-router"))
    container = router["spec"]["template"]["spec"]["containers"][0]
    account = router["spec"]["template"]["spec"]["serviceAccountName"]
    # the router's pod, as the rendered Deployment runs it: the ServiceAccount's identity (its Role and
    # RoleBinding as rendered), $(NAMESPACE) from the downward API; every pod has its own network, here
    # they share loopback, so the router listens on 127.0.0.1 where the pod listens on 0.0.0.0
    config = plane.pki.kubeconfig("router", plane.server, f"system:serviceaccount:{NAMESPACE}:{account}")
    args = [a.replace("$(NAMESPACE)", NAMESPACE).replace("0.0.0.0", "127.0.0.1") for a in container["args"]]
    port = int(args[args.index("--port") + 1])
    log = open(tmp_path / "router.log", "wb")  # noqa: SIM115 - the router writes it until the end
    process = subprocess.Popen(
        [str(ROUTER_PYTHON), *container["command"][1:], *args],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KUBECONFIG": str(config)},
    )  # fmt: skip
    try:
        leaders = sorted(f"http://{ip}:30000" for ip in engines)
        wait_for("the router routes to both leaders", lambda: _router_workers(port) == leaders, attempts=240)
        # a request: prefill and decode leader both get it, with the prefill leader's bootstrap address
        # (its pod IP and the port its pod annotation names) and one room; decode's answer comes back
        answer = requests.post(f"http://127.0.0.1:{port}/generate", json={"text": "hello"}, timeout=60)
        assert (answer.status_code, answer.json()["text"]) == (200, "from decode"), answer.text[:500]
        prefill_ip = next(ip for ip, e in engines.items() if e.role == "prefill")
        announced = _bootstrap_port(objects)
        sent = {e.role: [r[2] for r in e.requests if r[:2] == ("POST", "/generate")] for e in engines.values()}
        assert [len(sent["prefill"]), len(sent["decode"])] == [1, 1], sent
        for body in (sent["prefill"][0], sent["decode"][0]):
            assert (body["bootstrap_host"], body["bootstrap_port"]) == (prefill_ip, announced), body
        assert sent["prefill"][0]["bootstrap_room"] == sent["decode"][0]["bootstrap_room"]
        # its own metrics where the rendered PodMonitor scrapes them
        metrics_port = int(args[args.index("--prometheus-port") + 1])
        scraped = _get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert scraped.status_code == 200 and "# TYPE" in scraped.text
        # the decode group is recreated (its leader pod deleted): the router drops the old leader and
        # takes the new one once that one is ready
        decode_ip = next(ip for ip, e in engines.items() if e.role == "decode")
        old = next(p for p in api.list("v1", "Pod", NAMESPACE) if p.get("status", {}).get("podIP") == decode_ip)
        _stop(engines.pop(decode_ip))  # the pod's engine goes with it
        api.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{old['metadata']['name']}")
        gone = f"http://{decode_ip}:30000"
        wait_for("the router drops the deleted leader", lambda: gone not in _router_workers(port))

        def new_decode_leader():
            for pod in api.list("v1", "Pod", NAMESPACE, labelSelector=f"{DS_ROLE}=decode,{WORKER_INDEX}=0"):
                fresh = pod["metadata"]["uid"] != old["metadata"]["uid"]
                if fresh and not pod["metadata"].get("deletionTimestamp") and pod.get("status", {}).get("podIP"):
                    return pod
            return None

        pod = wait_for("the decode group's new leader has an IP", new_decode_leader, attempts=600)
        engine = _Engine((pod["status"]["podIP"], 30000), "decode")
        threading.Thread(target=engine.serve_forever, daemon=True).start()
        engines[pod["status"]["podIP"]] = engine
        api.merge_patch("v1", "Pod", pod["metadata"]["name"], NAMESPACE,
                        {"metadata": {"annotations": {"lwsgen.test/probes": "passed"}}})  # fmt: skip
        back = sorted([f"http://{prefill_ip}:30000", f"http://{pod['status']['podIP']}:30000"])
        # the router re-adds a worker on its next discovery event and health check (intervals of tens of
        # seconds; slower while the session's other control plane runs): a budget of polls, not a clock
        wait_for("the router takes the new leader", lambda: _router_workers(port) == back, attempts=1200)
    except Exception:
        print((tmp_path / "router.log").read_text()[-6000:])
        raise
    finally:
        process.terminate()
        process.wait(20)
        log.close()
        for engine in engines.values():
            _stop(engine)
