"""The custom-metrics path of an autoscaled example, with the real components: Prometheus (Debian's
2.42) scraping what the caller gives it and evaluating the example's rendered recording rules,
prometheus-adapter v0.12.0 (built from its module by make cluster) serving the example's rendered
adapter rules as custom.metrics.k8s.io through the API server's aggregation layer, where the HPA
controller reads them."""

from __future__ import annotations

import base64
import json
import shutil
import threading
from pathlib import Path

import requests

import fastyaml
from groupsim.prometheus import discovered
from tests.cluster.api import wait_for
from tests.cluster.controlplane import ControlPlane, binary, free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
ADAPTER_NAMESPACE = "custom-metrics"
# every Go and Python process exports these about itself: left out of a failure's list of series
RUNTIME_PREFIXES = ("go_", "process_", "python_", "workqueue_", "controller_runtime_", "certwatcher_", "rest_client_")


class PodDiscovery:
    """The pods of a namespace as Prometheus' Kubernetes pod discoverer gives them, in a file_sd file
    rewritten from the API server every half second: Debian's Prometheus is built without the
    Kubernetes discovery (its config refuses kubernetes_sd_configs), so the meta labels come from
    groupsim/prometheus.py `discovered`, a copy of discovery/kubernetes/pod.go buildPod, over the
    real pods."""

    def __init__(self, api, namespace: str, path: Path):
        self.api, self.namespace, self.path = api, namespace, path
        self.stopped = threading.Event()
        self.refresh()
        threading.Thread(target=self._follow, daemon=True).start()

    def refresh(self) -> None:
        pods = [p for p in self.api.list("v1", "Pod", self.namespace) if (p.get("status") or {}).get("podIP")]
        staged = self.path.with_suffix(".tmp")
        staged.write_text(json.dumps(discovered(pods, {p["metadata"]["name"]: p for p in pods}), sort_keys=True))
        staged.replace(self.path)

    def _follow(self) -> None:
        while not self.stopped.wait(0.5):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - the next poll tries again; a stale file is what Prometheus keeps
                continue

    def stop(self) -> None:
        self.stopped.set()


class MetricsPath:
    """Prometheus, prometheus-adapter and the aggregation APIService, for one session's control plane."""

    def __init__(self, cluster: ControlPlane, root: Path):
        self.cluster, self.root = cluster, root
        root.mkdir(parents=True, exist_ok=True)

    def start(self, rule_groups: list[dict], adapter_rules: list[dict], scrape_configs: list[dict]) -> MetricsPath:
        self.prometheus_url = self._prometheus(rule_groups, scrape_configs)
        self._adapter(adapter_rules)
        return self

    def _prometheus(self, rule_groups: list[dict], scrape_configs: list[dict]) -> str:
        rules, config = self.root / "rules.yml", self.root / "prometheus.yml"
        rules.write_text(fastyaml.dump({"groups": rule_groups}, sort_keys=False))
        config.write_text(
            fastyaml.dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(rules)],
                "scrape_configs": scrape_configs,
            })
        )  # fmt: skip
        port = free_port()
        process = self.cluster.spawn("prometheus", [
            PROMETHEUS, "--config.file", str(config), "--storage.tsdb.path", str(self.root / "tsdb"),
            "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "warn",
        ])  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_for("Prometheus ready", lambda: _ok(f"{url}/-/ready") or _exited(process, self.cluster), attempts=240)
        return url

    def _adapter(self, adapter_rules: list[dict]) -> None:
        config = self.root / "adapter.yaml"
        config.write_text(fastyaml.dump({"rules": adapter_rules}, sort_keys=False))
        kubeconfig = self.cluster.pki.kubeconfig("adapter", self.cluster.server, "prometheus-adapter", "system:masters")
        # the aggregator checks the name of the Service it was given, as in a cluster
        names = f"DNS:localhost,DNS:prometheus-adapter.{ADAPTER_NAMESPACE}.svc"
        cert, key = self.cluster.pki.issue("adapter-serving", "prometheus-adapter", server_names=names)
        port = free_port()
        self.cluster.spawn("prometheus-adapter", [
            binary("prometheus-adapter"),
            "--prometheus-url", self.prometheus_url, "--config", str(config),
            "--metrics-relist-interval", "2s", "--metrics-max-age", "30s",
            "--lister-kubeconfig", str(kubeconfig),
            "--authentication-kubeconfig", str(kubeconfig), "--authorization-kubeconfig", str(kubeconfig),
            "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--tls-cert-file", str(cert), "--tls-private-key-file", str(key), "--v=1",
        ])  # fmt: skip
        self._register(port)

    def _register(self, port: int) -> None:
        """The APIService the adapter's manifests register, pointed at it by an ExternalName Service
        (the aggregator resolves one to its name: k8s.io/apiserver pkg/util/proxy ResolveCluster)."""
        api = self.cluster.admin
        api.ensure_namespace(ADAPTER_NAMESPACE)
        api.apply({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "prometheus-adapter", "namespace": ADAPTER_NAMESPACE},
            "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port}]},
        }, ADAPTER_NAMESPACE)  # fmt: skip
        for version in ("v1beta1", "v1beta2"):
            api.apply({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": f"{version}.custom.metrics.k8s.io"},
                "spec": {
                    "group": "custom.metrics.k8s.io", "version": version,
                    "service": {"name": "prometheus-adapter", "namespace": ADAPTER_NAMESPACE, "port": port},
                    "caBundle": _base64(self.cluster.pki.ca),
                    "groupPriorityMinimum": 100, "versionPriority": 200 if version == "v1beta2" else 100,
                },
            })  # fmt: skip
        name = "v1beta2.custom.metrics.k8s.io"
        wait_for("custom.metrics.k8s.io available", lambda: _available(api, name), attempts=240)

    def query(self, expr: str) -> list[dict]:
        """An instant query's vector: [{"metric": {...}, "value": [time, "v"]}]."""
        answer = requests.get(f"{self.prometheus_url}/api/v1/query", params={"query": expr}, timeout=30).json()
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def explain(self, api) -> str:
        """What each stage holds, for a failure message: the series in Prometheus, the adapter's metrics."""
        query = {"query": "count by (__name__) ({__name__!=''})"}
        found = requests.get(f"{self.prometheus_url}/api/v1/query", params=query, timeout=30).json()
        names = sorted(
            name
            for name in (r["metric"].get("__name__", "") for r in found["data"]["result"])
            if not name.startswith(RUNTIME_PREFIXES)
        )
        served = [r["name"] for r in api.get_json("/apis/custom.metrics.k8s.io/v1beta2").get("resources", [])]
        return f"Prometheus has: {names}\nthe adapter serves: {served}"


def _exited(process, cluster: ControlPlane) -> bool:
    """False while process runs; raises with its log's tail once it has exited."""
    if process.poll() is None:
        return False
    raise RuntimeError("; ".join(cluster.alive()))


def _ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).ok
    except requests.exceptions.ConnectionError:
        return False


def _available(api, name: str) -> bool:
    conditions = (api.get("apiregistration.k8s.io/v1", "APIService", name).get("status") or {}).get("conditions")
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions or [])


def _base64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()
