"""Real Prometheus (Debian's package) inside the simulator's network, scraping what a rendered
PodMonitor means and evaluating the rendered PrometheusRule groups.

Two parts are played, each copied from its source and no looser:
- the scrape job is the one prometheus-operator generates for the PodMonitor (v0.93.0, the version
  of ../shared/crds, pkg/prometheus/promcfg.go generatePodMonitorConfig): drop pods in phase
  Failed|Succeeded, keep on every selector label ("(value);true" over __meta_kubernetes_pod_label_X
  and ..._labelpresent_X, names through sanitizeLabelName), keep the endpoint's named port, then
  namespace, container, pod, job "<namespace>/<name>", podTargetLabels and endpoint as labels;
- Kubernetes service discovery (role: pod) is a file_sd file carrying the meta labels Prometheus'
  own pod discoverer gives each declared container port (prometheus discovery/kubernetes/pod.go:
  __address__ podIP:port, __meta_kubernetes_namespace, _pod_name, _pod_ip, _pod_ready, _pod_phase,
  _pod_label_X, _pod_labelpresent_X, _pod_container_name, _pod_container_port_name/number/protocol),
  rewritten from the simulator's pods whenever they change. Prometheus does the selecting itself.

Time is compressed as the probes' is: the scrape and rule intervals are SCRAPE seconds instead of
the PodMonitor's (15 s), which only makes every series appear sooner."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import fastyaml
from groupsim import probes

SCRAPE = 1  # seconds between scrapes and between rule evaluations
PORT = 9090


def sanitize(name: str) -> str:
    """prometheus-operator's sanitizeLabelName: every character outside [a-zA-Z0-9_] becomes _."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def file_discovery(targets_file: Path) -> dict[str, Any]:
    """Pods as the simulator lists them (`discovered` writes the file), for a scrape job."""
    return {"file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "1s"}]}


def scrape_job(monitor: dict[str, Any], endpoint_index: int, discovery: dict[str, Any]) -> dict[str, Any]:
    """The scrape config prometheus-operator generates for one podMetricsEndpoint of a PodMonitor;
    discovery is its service discovery (`file_discovery`)."""
    meta, spec = monitor["metadata"], monitor["spec"]
    endpoint = spec["podMetricsEndpoints"][endpoint_index]
    namespace = meta.get("namespace", "default")
    relabel: list[dict[str, Any]] = [
        {"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"},
        {"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"},
    ]
    for key, value in sorted((spec.get("selector", {}).get("matchLabels") or {}).items()):
        name = sanitize(key)
        relabel.append(
            {
                "action": "keep",
                "source_labels": [f"__meta_kubernetes_pod_label_{name}", f"__meta_kubernetes_pod_labelpresent_{name}"],
                "regex": f"({value});true",
            }
        )
    if spec.get("selector", {}).get("matchExpressions"):
        raise NotImplementedError("matchExpressions: lwsgen's PodMonitors select by matchLabels only")
    relabel.append(
        {"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": endpoint["port"]}
    )
    relabel += [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    ]
    for label in spec.get("podTargetLabels", []):
        relabel.append(
            {
                "source_labels": [f"__meta_kubernetes_pod_label_{sanitize(label)}"],
                "target_label": sanitize(label),
                "regex": "(.+)",
                "replacement": "${1}",
            }
        )
    relabel += [
        {"target_label": "job", "replacement": f"{namespace}/{meta['name']}"},
        {"target_label": "endpoint", "replacement": endpoint["port"]},
    ]
    return {
        "job_name": f"podMonitor/{namespace}/{meta['name']}/{endpoint_index}",
        "honor_labels": False,
        "scrape_interval": f"{SCRAPE}s",
        "scrape_timeout": f"{SCRAPE}s",
        "metrics_path": endpoint.get("path", "/metrics"),
        "scheme": endpoint.get("scheme", "http"),
        **discovery,
        "relabel_configs": relabel,
    }


def discovered(pods: list[dict[str, Any]], templates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """What Prometheus' pod discoverer gives for each declared container port of each pod (pod.go
    buildPod): one target group per port with the pod's and the container's meta labels."""
    groups = []
    for pod in pods:
        meta, status = pod["metadata"], pod["status"]
        # a pod the API server lists before its kubelet reports has no containerStatuses yet
        ready = all(c["ready"] for c in status.get("containerStatuses", [])) and status["phase"] == "Running"
        labels = {
            "__meta_kubernetes_namespace": meta["namespace"],
            "__meta_kubernetes_pod_name": meta["name"],
            "__meta_kubernetes_pod_ip": status["podIP"],
            "__meta_kubernetes_pod_ready": str(ready).lower(),
            "__meta_kubernetes_pod_phase": status["phase"],
        }
        for key, value in meta.get("labels", {}).items():
            labels[f"__meta_kubernetes_pod_label_{sanitize(key)}"] = value
            labels[f"__meta_kubernetes_pod_labelpresent_{sanitize(key)}"] = "true"
        for container in templates[meta["name"]]["spec"]["containers"]:
            for port in container.get("ports", []):
                groups.append(
                    {
                        "targets": [f"{status['podIP']}:{port['containerPort']}"],
                        "labels": labels
                        | {
                            "__meta_kubernetes_pod_container_name": container["name"],
                            "__meta_kubernetes_pod_container_port_name": port.get("name", ""),
                            "__meta_kubernetes_pod_container_port_number": str(port["containerPort"]),
                            "__meta_kubernetes_pod_container_port_protocol": port.get("protocol", "TCP"),
                        },
                    }
                )
    return groups


class Prometheus:
    """Prometheus in the bridge's network namespace, where it reaches every pod."""

    def __init__(self, simulation, root: Path):
        self.sim, self.root = simulation, root
        self.address = f"{simulation.network.dns_ip}:{PORT}"
        self.targets = root / "pods.json"
        self.process: subprocess.Popen | None = None
        self._stop = threading.Event()

    def start(self) -> Prometheus:
        self.root.mkdir(parents=True, exist_ok=True)
        monitors = [o for o in self.sim.objects if o.get("kind") == "PodMonitor"]
        groups = [g for o in self.sim.objects if o.get("kind") == "PrometheusRule" for g in o["spec"]["groups"]]
        for group in groups:
            group["interval"] = f"{SCRAPE}s"
        (self.root / "rules.yaml").write_text(fastyaml.dump({"groups": groups}))
        config = {
            "global": {"scrape_interval": f"{SCRAPE}s", "evaluation_interval": f"{SCRAPE}s"},
            "rule_files": [str(self.root / "rules.yaml")],
            "scrape_configs": [
                scrape_job(m, i, file_discovery(self.targets))
                for m in monitors
                for i in range(len(m["spec"]["podMetricsEndpoints"]))
            ],
        }
        (self.root / "prometheus.yml").write_text(fastyaml.dump(config))
        self.refresh()
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        with (self.root / "prometheus.log").open("w") as log:
            self.process = subprocess.Popen(
                [
                    "ip", "netns", "exec", self.sim.network.bridge_ns, binary,
                    f"--config.file={self.root / 'prometheus.yml'}",
                    f"--storage.tsdb.path={self.root / 'data'}",
                    f"--web.listen-address={self.address}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        threading.Thread(target=self._follow_pods, daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.get("/-/ready").startswith(b"Prometheus"):
                    return self
            except OSError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"Prometheus did not start: {(self.root / 'prometheus.log').read_text()[-2000:]}")

    def refresh(self) -> None:
        """Rewrite the discovered targets from the simulator's pods (atomically: file_sd reads it)."""
        templates = {name: pod.template for name, pod in self.sim.pods.items()}
        staged = self.targets.with_suffix(".tmp")
        staged.write_text(json.dumps(discovered(self.sim.pods_listing(), templates), sort_keys=True))
        staged.replace(self.targets)

    def _follow_pods(self) -> None:
        while not self._stop.wait(0.5):
            self.refresh()

    def stop(self) -> None:
        self._stop.set()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *_) -> None:
        self.stop()

    # -- the HTTP API, from the bridge's namespace

    def get(self, path: str) -> bytes:
        return in_netns(self.sim.network.bridge_ns, lambda: _fetch(f"http://{self.address}{path}"))

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's vector: [{"metric": {...}, "value": [time, "v"]}]."""
        answer = json.loads(self.get("/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def targets_up(self) -> list[dict[str, Any]]:
        return json.loads(self.get("/api/v1/targets?state=active"))["data"]["activeTargets"]

    def rules(self) -> list[dict[str, Any]]:
        return json.loads(self.get("/api/v1/rules"))["data"]["groups"]


def _fetch(url: str, body: bytes | None = None, timeout: float = 10) -> bytes:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read()


def in_netns(netns: str, call):
    """call() on a thread that has joined netns (a thread's namespace is its own), its result."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            probes._enter_netns(netns)
            result["value"] = call()
        except BaseException as error:  # noqa: BLE001 - raised again on the caller's thread
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def post(netns: str, url: str, payload: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    """POST JSON from inside netns (a client beside the pods), its JSON answer."""
    return json.loads(in_netns(netns, lambda: _fetch(url, json.dumps(payload).encode(), timeout)))


def engine_series(objects: list[dict[str, Any]]) -> list[str]:
    """The series recorded from the engine's own metrics: the records of the rendered rule groups
    named *runtime (the others read DCGM's exporter, kube-state-metrics or the endpoint picker)."""
    return [
        rule["record"]
        for o in objects
        if o.get("kind") == "PrometheusRule"
        for group in o["spec"]["groups"]
        if group["name"].endswith("runtime")
        for rule in group["rules"]
        if "record" in rule
    ]


def dashboard_engine_queries(objects: list[dict[str, Any]], window: str) -> list[tuple[str, str]]:
    """(panel, query) of the rendered dashboard that read the engine alone (its own series and the
    runtime's records, not kube-state-metrics, DCGM or the endpoint picker, which this Prometheus
    does not scrape), with Grafana's $__rate_interval as `window`."""
    others = ("kube_", "DCGM_", "dcgm_fi_", "llm_d_epp_")
    out = []
    for o in objects:
        if o.get("kind") == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard"):
            [text] = o["data"].values()
            for panel in json.loads(text)["panels"]:
                for target in panel.get("targets", []):
                    if not any(other in target["expr"] for other in others):
                        out.append((panel["title"], target["expr"].replace("$__rate_interval", window)))
    return out


def unlike_the_engine(prom: Prometheus, table: tuple) -> list[str]:
    """Entries of tests/engine_series.py (name, type, labels) the real engine's scrape does not bear
    out: no series of that name (a histogram's _bucket), or one without those label names."""
    out = []
    for name, kind, labels in table:
        found = prom.query(f"{name}_bucket" if kind == "histogram" else name)
        if not found:
            out.append(f"{name}: no series")
        elif not set(labels) <= set(found[0]["metric"]):
            out.append(f"{name}: labels {sorted(found[0]['metric'])}, not {sorted(labels)}")
    return out


def empty_queries(prom: Prometheus, queries: list[tuple[str, str]]) -> list[str]:
    """The panels whose query Prometheus answers with nothing."""
    return [f"{title}: {expr}" for title, expr in queries if not prom.query(expr)]


GROUP = "leaderworkerset_sigs_k8s_io_group_index"


def peaks(prom: Prometheus, series: list[str], seconds: float) -> dict[tuple[str, str], float]:
    """The highest value each series reached per group while sampled for `seconds` (by the clock of
    the load it watches: the samples are what Prometheus evaluated meanwhile)."""
    highest: dict[tuple[str, str], float] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name in series:
            for sample in prom.query(name):
                key = (name, sample["metric"].get(GROUP, ""))
                highest[key] = max(highest.get(key, float("-inf")), float(sample["value"][1]))
        time.sleep(0.5)
    return highest
