"""The real control plane, on loopback, for one test session: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler (k8s.io/kubernetes v1.36.3, built by make cluster), kwok as
the node agent of the fake GPU nodes, and the LeaderWorkerSet controller manager (sigs.k8s.io/lws
v0.10.0) with its webhooks served on 127.0.0.1 and registered by URL."""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

import fastyaml
from tests.cluster import kwokstages, lwsmanifests
from tests.cluster.api import Api, ApiError, load_all, wait_for
from tests.cluster.pki import SERVER_NAMES, Pki

BIN = Path(os.environ.get("LWSGEN_CLUSTER_BIN", Path(__file__).resolve().parents[2] / ".tools/cluster/bin"))
SERVICE_RANGE = "10.0.0.0/24"  # nothing is routed there: Services only need ClusterIPs allocated
KWOK_NODE = "kwok.x-k8s.io/node"
STOP_GRACE = 1.0
KSERVE_MANAGER = BIN / "llmisvc-manager"
KSERVE_CONFIG = BIN.parent / "kserve-config"  # tools/cluster/build_kserve.sh
KSERVE_NAMESPACE = "kserve"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: run make cluster first (it builds the control plane from source)")
    return str(path)


class ControlPlane:
    def __init__(self, root: Path, pod_cidr: str = "10.244.0.1/16", kserve: bool = True, gang: str | None = None):
        self.root = root
        self.gang = gang  # the LWS controller's gang-scheduling provider, if any
        self.pod_cidr = pod_cidr  # where kwok gives pods their IPs
        self.kserve_kinds = kserve  # KServe's CRDs (~6.5 MB of the ~9 installed)
        self.with_kserve = kserve and KSERVE_MANAGER.exists()  # its controllers: make kserve builds them
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, subprocess.Popen] = {}
        self.log_files: list = []
        self.pki = Pki(root / "pki")
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"

    # -- life cycle ----------------------------------------------------------------------------------
    def start(self) -> ControlPlane:
        self._etcd()
        self._apiserver()
        self.admin = Api(self.server, self.pki.ca, self.pki.issue("admin", "lwsgen-admin", group="system:masters"))
        wait_for("kube-apiserver /readyz", self._ready, attempts=600)
        self._controller_manager()
        self._scheduler()
        self._kwok()
        self.install_crds()
        self._lws()
        if self.with_kserve:
            self._kserve()
        return self

    def stop(self) -> None:
        """Every component asked to end, and killed (with what it started) if it has not after
        STOP_GRACE seconds: nothing of a test's control plane outlives it, so a graceful shutdown (the
        API server's drain of its watches took ~20 s) buys nothing."""
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for process in self.processes.values():
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for log in self.log_files:
            log.close()

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - the process writes it until stop()
        self.log_files.append(log)
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd or self.root, start_new_session=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        self.processes[name] = process
        return process

    def retire(self, name: str) -> None:
        """Stop a process a test spawned, and its children (its own session), and forget it: alive()
        then does not report it."""
        process = self.processes.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def alive(self) -> list[str]:
        """The components that have exited (each one's last log lines)."""
        dead = []
        for name, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-5:]
                dead.append(f"{name} exited {process.returncode}: " + " | ".join(tail))
        return dead

    def _ready(self) -> bool:
        dead = self.alive()
        if dead:
            raise RuntimeError("; ".join(dead))
        try:
            return self.admin.request("GET", "/readyz").text.strip() == "ok"
        except requests.exceptions.SSLError:
            raise
        except (requests.exceptions.ConnectionError, ApiError):  # not up yet, or not ready yet
            return False

    # -- components ----------------------------------------------------------------------------------
    def _etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd = f"http://127.0.0.1:{client}"
        self.spawn("etcd", [
            binary("etcd"), "--data-dir", str(self.root / "etcd"), "--name", "test",
            "--listen-client-urls", self.etcd, "--advertise-client-urls", self.etcd,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"test=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",  # a throw-away store: durability costs seconds per test on a busy disk
            "--log-level", "warn",
        ])  # fmt: skip

    def _apiserver(self) -> None:
        cert, key = self.pki.issue("apiserver", "kube-apiserver", server_names=SERVER_NAMES)
        kubelet_cert, kubelet_key = self.pki.issue("apiserver-kubelet", "kube-apiserver", group="system:masters")
        # the aggregation layer (custom.metrics.k8s.io from prometheus-adapter): as kubeadm sets it up,
        # with the test CA in the front proxy CA's place
        proxy_cert, proxy_key = self.pki.issue("front-proxy-client", "front-proxy-client")
        self.spawn("kube-apiserver", [
            binary("kube-apiserver"),
            "--etcd-servers", self.etcd,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
            "--client-ca-file", str(self.pki.ca),
            "--service-account-key-file", str(self.pki.path("sa.pub")),
            "--service-account-signing-key-file", str(self.pki.path("sa.key")),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", SERVICE_RANGE,
            "--authorization-mode", "Node,RBAC",
            "--allow-privileged=true",  # as on GPU clusters: the NVIDIA device plugin runs privileged
            "--kubelet-client-certificate", str(kubelet_cert), "--kubelet-client-key", str(kubelet_key),
            "--requestheader-client-ca-file", str(self.pki.ca), "--requestheader-allowed-names", "front-proxy-client",
            "--requestheader-username-headers", "X-Remote-User", "--requestheader-group-headers", "X-Remote-Group",
            "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
            "--proxy-client-cert-file", str(proxy_cert), "--proxy-client-key-file", str(proxy_key),
            "--profiling=false", "--v=1",
        ])  # fmt: skip

    def _controller_manager(self) -> None:
        config = self.pki.kubeconfig("controller-manager", self.server, "system:kube-controller-manager")
        self.spawn("kube-controller-manager", [
            binary("kube-controller-manager"),
            "--kubeconfig", str(config),
            "--authentication-kubeconfig", str(config), "--authorization-kubeconfig", str(config),
            "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
            "--use-service-account-credentials=true",  # each controller acts with its own RBAC, as in a cluster
            "--service-account-private-key-file", str(self.pki.path("sa.key")),
            "--root-ca-file", str(self.pki.ca),
            "--service-cluster-ip-range", SERVICE_RANGE,
            "--leader-elect=false",
            "--horizontal-pod-autoscaler-sync-period=5s",
            "--v=1",
        ])  # fmt: skip

    def _scheduler(self) -> None:
        config = self.pki.kubeconfig("scheduler", self.server, "system:kube-scheduler")
        self.spawn("kube-scheduler", [
            binary("kube-scheduler"),
            "--kubeconfig", str(config),
            "--authentication-kubeconfig", str(config), "--authorization-kubeconfig", str(config),
            "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
            "--leader-elect=false", "--v=1",
        ])  # fmt: skip

    def _kwok(self) -> None:
        config = self.pki.kubeconfig("kwok", self.server, "kwok", group="system:masters")
        cert, key = self.pki.issue("kwok-kubelet", "kwok-kubelet", server_names=SERVER_NAMES)
        stages = self.root / "kwok-stages.yaml"
        (self.root / "exec").mkdir(exist_ok=True)
        stages.write_text(kwokstages.config(str(self.root / "exec")))
        self.kubelet_port = free_port()
        self.spawn("kwok", [
            binary("kwok"),
            "--kubeconfig", str(config), "--config", str(stages),
            "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", f"{KWOK_NODE}=fake",
            "--node-ip", "127.0.0.1", "--node-port", str(self.kubelet_port),
            "--server-address", f"127.0.0.1:{self.kubelet_port}",
            "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
            "--cidr", self.pod_cidr,
        ])  # fmt: skip

    def install_crds(self) -> None:
        from tests.conftest import SHARED

        paths = sorted((SHARED / "crds").glob("*.y*ml"))
        self.apply_crds([p for p in paths if self.kserve_kinds or not p.name.startswith("serving.kserve.io_")])

    def apply_crds(self, paths: list[Path]) -> None:
        """Every CRD of the files, applied one after another (applied four at a time they took twice as
        long: the server rebuilds its OpenAPI document per CRD), then each waited for until established."""
        crds = [crd for path in paths for crd in _crds(path)]
        for crd in crds:
            self.admin.apply(copy.deepcopy(crd))
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(f"CRD {name} established", lambda n=name: _established(self.admin, n))

    def _lws(self) -> None:
        serving, key = self.pki.issue("lws-webhook", "lws-webhook", server_names="IP:127.0.0.1")
        certs = self.root / "lws-certs"
        certs.mkdir(exist_ok=True)
        shutil.copy(serving, certs / "tls.crt")
        shutil.copy(key, certs / "tls.key")
        webhook_port = free_port()
        config = self.root / "lws-config.yaml"
        config.write_text(fastyaml.dump(lwsmanifests.manager_config(webhook_port, certs, free_port(), self.gang)))
        kubeconfig = self.pki.kubeconfig("lws", self.server, "lws-controller", group="system:masters")
        for obj in lwsmanifests.webhooks(f"https://127.0.0.1:{webhook_port}", self.pki.ca):
            self.admin.apply(obj)
        # controller-runtime reads the kubeconfig from KUBECONFIG (the manager has no flag of its own)
        argv = [binary("lws-controller"), "--config", str(config)]
        self.spawn("lws-controller", argv, {"KUBECONFIG": str(kubeconfig)})
        wait_for("the LWS webhook serves", lambda: _serving(webhook_port, self.alive), attempts=600)

    @property
    def kserve(self) -> bool:
        return "kserve-llmisvc" in self.processes and "kserve-manager" in self.processes

    def _kserve(self) -> None:
        """KServe's LLMInferenceService controller (kserve/kserve v0.20.0 cmd/llmisvc, built by make
        kserve) with what its release installs beside it: the inferenceservice-config ConfigMap and the
        well-known presets in namespace kserve. Its webhooks are served (no flag turns them off; the
        API server never calls them: no webhook configuration names them) from the certificate
        controller-runtime reads under $TMPDIR/k8s-webhook-server/serving-certs."""
        self.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KSERVE_NAMESPACE}})
        for path in (
            KSERVE_CONFIG / "inferenceservice-config.yaml",
            *sorted((KSERVE_CONFIG / "presets").glob("*.yaml")),
        ):
            for obj in load_all(path.read_text()):
                if obj:
                    obj["metadata"]["namespace"] = KSERVE_NAMESPACE
                    self.admin.apply(obj)
        serving, key = self.pki.issue("kserve-webhook", "kserve-webhook", server_names="IP:127.0.0.1")
        certs = self.root / "kserve-tmp" / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        shutil.copy(serving, certs / "tls.crt")
        shutil.copy(key, certs / "tls.key")
        kubeconfig = self.pki.kubeconfig("kserve", self.server, "kserve-llmisvc", group="system:masters")
        health = free_port()
        argv = [
            binary("llmisvc-manager"), "--kubeconfig", str(kubeconfig), "--metrics-addr", "0",
            "--health-probe-addr", f"127.0.0.1:{health}", "--webhook-port", str(free_port()), "--leader-elect=false",
        ]  # fmt: skip
        self.spawn("kserve-llmisvc", argv, {"POD_NAMESPACE": KSERVE_NAMESPACE, "TMPDIR": str(certs.parents[1])})
        wait_for("KServe's controller is healthy", lambda: _healthy(health, self.alive), attempts=600)
        self._kserve_manager(kubeconfig, certs.parents[1])

    def _kserve_manager(self, kubeconfig: Path, tmp: Path) -> None:
        """KServe's InferenceService controller (cmd/manager), with the CRDs it watches beside those of
        ../shared/crds; it reads inferenceservice-config at start (installed by _kserve)."""
        self.apply_crds(sorted((KSERVE_CONFIG / "isvc-crds").glob("*.yaml")))
        health = free_port()
        argv = [
            binary("kserve-manager"), "--metrics-addr", "0", "--health-probe-addr", f"127.0.0.1:{health}",
            "--webhook-port", str(free_port()),
        ]  # fmt: skip
        env = {"POD_NAMESPACE": KSERVE_NAMESPACE, "TMPDIR": str(tmp), "KUBECONFIG": str(kubeconfig)}
        self.spawn("kserve-manager", argv, env)  # config.GetConfig reads KUBECONFIG (no flag)
        wait_for("KServe's InferenceService controller is healthy", lambda: _healthy(health, self.alive), attempts=600)


@functools.cache
def _crds(path: Path) -> tuple[dict, ...]:
    """The CustomResourceDefinitions of a file as the server takes them, read once per session (a
    second control plane installs the same ~9 MB)."""
    crds = []
    for crd in load_all(path.read_text()):
        if crd.get("kind") == "CustomResourceDefinition":
            crd["metadata"].pop("creationTimestamp", None)
            crd.pop("status", None)
            crds.append(crd)
    return tuple(crds)


def _healthy(port: int, alive) -> bool:
    dead = alive()
    if dead:
        raise RuntimeError("; ".join(dead))
    try:
        return requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).ok
    except requests.RequestException:
        time.sleep(0.2)
        return False


def _established(api: Api, name: str) -> bool:
    crd = api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    conditions = (crd.get("status") or {}).get("conditions") or []  # null until the server first sets them
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _serving(port: int, alive) -> bool:
    dead = alive()
    if dead:
        raise RuntimeError("; ".join(dead))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        time.sleep(0.1)
        return False


__all__ = ["ControlPlane", "ApiError", "KWOK_NODE"]
