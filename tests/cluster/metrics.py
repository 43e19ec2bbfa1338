"""The custom-metrics path of an autoscaled example, with the real components: Prometheus (Debian's
2.42) evaluating the example's rendered recording rules, prometheus-adapter v0.12.0 (built from its
module by make cluster) serving the example's rendered adapter rules as custom.metrics.k8s.io through
the API server's aggregation layer, and the HPA controller reading them. What cannot run here — the
engines' and the endpoint picker's /metrics and kube-state-metrics' kube_pod_labels — is one small
exporter (`Exporter`) serving the series they would, for the real pods of the set."""

from __future__ import annotations

import base64
import http.server
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import requests
import yaml

from tests.cluster.api import wait_for
from tests.cluster.controlplane import ControlPlane, binary, free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
ADAPTER_NAMESPACE = "custom-metrics"


class Exporter:
    """A /metrics page of whatever text `series()` returns when Prometheus scrapes it."""

    def __init__(self, series: Callable[[], str]):
        self.series = series
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                body = outer.series().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # Prometheus scrapes every second: no log line each time
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def kube_pod_labels(pods: list[dict]) -> str:
    """kube-state-metrics' kube_pod_labels for the pods, labels as label_<key with _ for . / ->."""
    lines = []
    for pod in pods:
        meta = pod["metadata"]
        labels = {f"label_{_sanitised(k)}": v for k, v in sorted((meta.get("labels") or {}).items())}
        labels |= {"namespace": meta["namespace"], "pod": meta["name"]}
        lines.append(f"kube_pod_labels{{{_labels(labels)}}} 1")
    return "\n".join(lines) + "\n"


def _sanitised(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key)


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def series(name: str, labels: dict[str, str], value: float) -> str:
    return f"{name}{{{_labels(labels)}}} {value}\n"


class MetricsPath:
    """Prometheus, prometheus-adapter and the aggregation APIService, for one session's control plane."""

    def __init__(self, cluster: ControlPlane, root: Path):
        self.cluster, self.root = cluster, root
        root.mkdir(parents=True, exist_ok=True)

    def start(self, rule_groups: list[dict], adapter_rules: list[dict], exporter: Exporter) -> MetricsPath:
        self.prometheus_url = self._prometheus(rule_groups, exporter.port)
        self._adapter(adapter_rules)
        return self

    def _prometheus(self, rule_groups: list[dict], exporter_port: int) -> str:
        rules, config = self.root / "rules.yml", self.root / "prometheus.yml"
        rules.write_text(yaml.safe_dump({"groups": rule_groups}, sort_keys=False))
        config.write_text(
            yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(rules)],
                "scrape_configs": [{
                    "job_name": "exporters",
                    "honor_labels": True,  # the namespace and pod labels are the exporter's, as with a PodMonitor's
                    "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}],
                }],
            })
        )  # fmt: skip
        port = free_port()
        self.cluster.spawn("prometheus", [
            PROMETHEUS, "--config.file", str(config), "--storage.tsdb.path", str(self.root / "tsdb"),
            "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "warn",
        ])  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_for("Prometheus ready", lambda: _ok(f"{url}/-/ready"), attempts=240)
        return url

    def _adapter(self, adapter_rules: list[dict]) -> None:
        config = self.root / "adapter.yaml"
        config.write_text(yaml.safe_dump({"rules": adapter_rules}, sort_keys=False))
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

    def explain(self, api) -> str:
        """What each stage holds, for a failure message: the series in Prometheus, the adapter's metrics."""
        query = {"query": "count by (__name__) ({__name__!=''})"}
        found = requests.get(f"{self.prometheus_url}/api/v1/query", params=query, timeout=30).json()
        names = sorted(r["metric"].get("__name__", "") for r in found["data"]["result"])
        served = [r["name"] for r in api.get_json("/apis/custom.metrics.k8s.io/v1beta2").get("resources", [])]
        return f"Prometheus has: {names}\nthe adapter serves: {served}"


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
