"""Issue #35 req 4 and #34 req 3: the HPA scales a LeaderWorkerSet on the metric lwsgen's rules make,
from real metrics, with no stand-in in the chain.

The vllm-llama31-405b example (scaled on the endpoint picker's pool queue) is applied to the session's
loopback plane. Each group's leader serves for real: vLLM's CPU build on the leader pod's IP and
serving port (sources.VllmServer; the group's multi-node launch is tests/engines' subject). The rendered
endpoint picker (llm-d-router v0.10.0) finds the pool's pods through the API server with its rendered
RBAC and scrapes their engines; kube-state-metrics exports the pods' labels with the allowlist
docs/monitoring.md gives; Prometheus scrapes the real pods (listed as its Kubernetes pod discoverer
lists them: metrics.PodDiscovery, as Debian's build has no Kubernetes discovery) as the rendered
PodMonitors mean (the job prometheus-operator generates: groupsim/prometheus.py),
evaluating the rendered recording rules; prometheus-adapter serves the rendered adapter rules; the HPA
controller reads them through the aggregation layer and raises the set through the LWS /scale
subresource. Under load on the engines the pool's queue rises past the HPA's target, per group; idle,
it is 0 again."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest
import requests

import fastyaml
from groupsim import prometheus
from lwsgen import quantity
from tests.cluster import checks, nodes, sources
from tests.cluster.api import wait_for
from tests.cluster.deploy import REPO, apply_all, provide, rendered_in
from tests.cluster.metrics import MetricsPath, PodDiscovery

pytestmark = pytest.mark.cluster

EXAMPLE = "vllm-llama31-405b"  # scales on the endpoint picker's queue, recorded per leader pod
NAMESPACE = "autoscale"
# clients per leader, each sending one long completion after another: MAX_NUM_SEQS of them run, the
# rest wait (6 per engine), above the HPA's target of 4 per group
CLIENTS = 8
NAME = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP = "leaderworkerset_sigs_k8s_io_group_index"
RECORDED_QUEUE = "namespace_pod:llm_d_epp_average_queue_size:pool"
RECORDED_KV = "namespace_pod:llm_d_epp_average_kv_cache_utilization:pool"
CPU_NODE = {"cpu": "16", "memory": "64Gi", "pods": "110"}


def _one(objects: list[dict], kind: str) -> dict:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def _leaders(api, lws: str, count: int) -> list[dict] | None:
    pods = api.list("v1", "Pod", NAMESPACE, labelSelector=f"{NAME}={lws},{WORKER_INDEX}=0")
    ready = [p for p in pods if p.get("status", {}).get("podIP") and not p["metadata"].get("deletionTimestamp")]
    return ready if len(ready) == count else None


def _picker_pod(api, objects: list[dict]) -> dict | None:
    selector = sources.picker_deployment(objects)["spec"]["selector"]["matchLabels"]
    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    pods = api.list("v1", "Pod", NAMESPACE, labelSelector=labels)
    return pods[0] if len(pods) == 1 and pods[0].get("status", {}).get("podIP") else None


def _values(path: MetricsPath, expr: str) -> dict[str, float]:
    return {s["metric"].get(GROUP, ""): float(s["value"][1]) for s in path.query(expr)}


class _Load:
    """CLIENTS threads per engine, each sending long completions until stopped."""

    def __init__(self, servers: list[sources.VllmServer], model: str):
        self.stopped = threading.Event()
        payload = {"model": model, "prompt": "the leader and the worker", "max_tokens": 256, "ignore_eos": True}

        def client(url: str) -> None:
            while not self.stopped.is_set():
                try:
                    requests.post(f"{url}/v1/completions", json=payload, timeout=300)
                except requests.exceptions.RequestException:
                    return

        self.threads = [
            threading.Thread(target=client, args=(s.url,), daemon=True) for s in servers for _ in range(CLIENTS)
        ]
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(300)


def test_the_hpa_scales_the_set_on_real_metrics(loopback_plane, tmp_path):
    why = sources.missing()
    if why:
        pytest.fail(why, pytrace=False)
    plane, api = loopback_plane, loopback_plane.admin
    # its own node label: the group the HPA adds waits for nodes, and must not take a later test's
    own_nodes = {"lwsgen.test/pool": NAMESPACE}
    example = rendered_in(REPO / "profiles" / f"{EXAMPLE}.yaml", NAMESPACE, tmp_path, f"{EXAMPLE}-hpa", own_nodes)
    objects = example.objects()
    provide(api, example, objects)
    # a CPU node for the endpoint picker (the fake GPU nodes hold the engine pods' requests and no more)
    [picker_node] = nodes.nodes(f"{NAMESPACE}-cpu", {"labels": {}, "taints": [], "allocatable": CPU_NODE}, 1)
    api.create(picker_node)
    assert apply_all(api, example, objects) == []
    hpa = _one(objects, "HorizontalPodAutoscaler")
    lws_name, start = hpa["spec"]["scaleTargetRef"]["name"], hpa["spec"]["minReplicas"]
    pool = _one(objects, "InferencePool")["metadata"]["name"]
    leader = _one(objects, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    [port] = [p["containerPort"] for p in leader["ports"] if p["name"] == leader["readinessProbe"]["httpGet"]["port"]]
    served = sources.served_name(leader["args"])

    # the HPA raises the set to minReplicas; each group's leader serves the tiny model for real
    pods = wait_for(f"the {start} groups' leaders have IPs", lambda: _leaders(api, lws_name, start), attempts=600)
    model = sources.tiny_model(tmp_path / "model")
    engines: dict[str, sources.VllmServer] = {}
    started, discovery = [], None
    try:
        for i, pod in enumerate(pods):
            engines[f"vllm-{i}"] = sources.VllmServer(plane, f"vllm-{i}", model, served, pod["status"]["podIP"], port)
            started.append(f"vllm-{i}")  # spawned: retired at the end, whatever happens
        probe = leader["readinessProbe"]["httpGet"]["path"]
        # vLLM's start on 2 busy cores, two at once: a budget of polls, each bounded by its own timeout
        wait_for("vLLM answers the readiness probe on every leader", lambda: all(
            e.answers(probe) for e in engines.values()), attempts=1200)  # fmt: skip
        for pod in pods:  # their probes pass now: kwok makes them ready, as a kubelet would
            api.merge_patch("v1", "Pod", pod["metadata"]["name"], NAMESPACE,
                            {"metadata": {"annotations": {"lwsgen.test/probes": "passed"}}})  # fmt: skip

        sources.EndpointPicker(
            plane, objects, wait_for("the picker's pod", lambda: _picker_pod(api, objects)), tmp_path
        )
        started.append(sources.EndpointPicker.name)
        states = sources.KubeStateMetrics(plane, NAMESPACE)
        started.append(states.name)
        (tmp_path / "metrics").mkdir()
        pods_file = tmp_path / "metrics" / "pods.json"
        discovery = PodDiscovery(api, NAMESPACE, pods_file)
        jobs = [
            prometheus.scrape_job(m, i, prometheus.file_discovery(pods_file))
            for m in objects
            if m["kind"] == "PodMonitor"
            for i in range(len(m["spec"]["podMetricsEndpoints"]))
        ]
        rules = [g for o in objects if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]
        adapter = next(fastyaml.load_all((example.out_dir / "prometheus-adapter-rules.yaml").read_text()))["rules"]
        path = MetricsPath(plane, tmp_path / "metrics").start(rules, adapter, [*jobs, states.scrape_job()])
        _assert_the_chain(api, path, hpa, lws_name, start, pool, engines, served, objects)
    finally:
        if discovery:
            discovery.stop()
        for name in started:
            plane.retire(name)
    assert not plane.alive()


def _assert_the_chain(api, path, hpa, lws_name, start, pool, engines, served, objects) -> None:
    try:
        # the picker counts the pool's pods (the leaders only: InferencePool's selector) with fresh metrics
        ready = f'llm_d_epp_ready_endpoints{{namespace="{NAMESPACE}", name="{pool}"}}'
        wait_for(f"the picker finds {start} ready endpoints", lambda: _values(path, ready) == {"": start}, attempts=600)
        # idle: the recorded pool queue is there once per group, and 0
        groups = {str(g): 0.0 for g in range(start)}
        wait_for("the recorded queue, per group, idle", lambda: _values(path, RECORDED_QUEUE) == groups, attempts=600)
        load = _Load(list(engines.values()), served)
        try:
            _the_hpa_raises_the_set(api, path, hpa, lws_name, start, objects)
        finally:
            load.stop()
        # the queue falls back to 0 when the load stops
        idle = lambda: set(_values(path, RECORDED_QUEUE).values()) == {0.0}  # noqa: E731
        wait_for("the recorded queue, per group, idle again", idle, attempts=600)
    except Exception as error:
        raise AssertionError(f"{error}\n{path.explain(api)}\n{_logs(path)}") from None


def _the_hpa_raises_the_set(api, path, hpa, lws_name, start, objects) -> None:
    name, target = hpa["metadata"]["name"], quantity.parse(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"])

    def above_target():
        status = api.get("autoscaling/v2", "HorizontalPodAutoscaler", name, NAMESPACE).get("status") or {}
        values = [m["pods"]["current"]["averageValue"] for m in status.get("currentMetrics") or [] if "pods" in m]
        return status if values and quantity.parse(values[0]) > target else None

    status = wait_for(f"the HPA reads a pool queue above {target} from the engines", above_target, attempts=600)
    # the half of LwsgenAutoscalerAtMax that says "the metric above its target" holds on the real
    # kube-state-metrics' series of this HPA (metric_name, metric_target_type as the alert joins them)
    above = _above_target_half(objects, hpa)
    wait_for("LwsgenAutoscalerAtMax's metric-above-target half answers", lambda: path.query(above), attempts=240)
    # what the rule recorded while the load ran, as Prometheus evaluated it every second (the queue
    # moves with each request's start and end: polling it from here can miss what the HPA read)
    peaks = _values(path, f"max_over_time({RECORDED_QUEUE}[15m])")
    assert sorted(peaks) == [str(g) for g in range(start)] and min(peaks.values()) > target, ("queue", peaks)
    # an instant query can find a series stale for a moment (a 1 s scrape missed on the loaded cores)
    kv = _values(path, f"max_over_time({RECORDED_KV}[15m])")
    assert sorted(kv) == sorted(peaks) and all(0 <= v <= 1 for v in kv.values()), (kv, peaks)
    reading = status["currentMetrics"][0]["pods"]["current"]["averageValue"]
    print(f"  recorded pool queue per group, highest seen: {peaks}; KV-cache use {kv}; the HPA read {reading}")
    # lwsgen's scale-up policy lets one group in per 300 s, and raising the set to minReplicas was a
    # scale-up: within the period the controller holds the next one back, and says so
    limited = {c["type"]: c for c in status["conditions"]}["ScalingLimited"]
    [period] = hpa["spec"]["behavior"]["scaleUp"]["policies"]
    since = _seconds_since(status["lastScaleTime"])
    if since < period["periodSeconds"] - 30:  # clear of the boundary: the limit must hold
        assert (limited["status"], limited["reason"]) == ("True", "ScaleUpLimit"), (limited, since)
    # as if the period had passed: the next group comes in through the LWS /scale subresource
    short = {"behavior": {"scaleUp": {"policies": [{**period, "periodSeconds": 15}]}}}
    api.merge_patch("autoscaling/v2", "HorizontalPodAutoscaler", name, NAMESPACE, {"spec": short})

    def raised():
        lws = api.get(checks.LWS, "LeaderWorkerSet", lws_name, NAMESPACE)
        return lws if lws["spec"]["replicas"] > start else None

    lws = wait_for(f"the HPA raises {lws_name} above {start}", raised, attempts=240)
    assert lws["spec"]["replicas"] == start + 1  # one group per period, not the maximum at once


def _above_target_half(objects: list[dict], hpa: dict) -> str:
    """The second operand of the rendered LwsgenAutoscalerAtMax (the example's PrometheusRule)."""
    rules = _one(objects, "PrometheusRule")
    [alert] = [r for g in rules["spec"]["groups"] for r in g["rules"] if r.get("alert") == "LwsgenAutoscalerAtMax"]
    assert hpa["metadata"]["name"] in alert["expr"]
    return alert["expr"].split("\nand on (namespace, horizontalpodautoscaler)\n", 1)[1]


def _seconds_since(timestamp: str) -> float:
    """Seconds from an API server timestamp (RFC 3339, UTC) to now, by this machine's clock (the
    server's: it runs here)."""
    return (datetime.now(timezone.utc) - datetime.fromisoformat(timestamp.replace("Z", "+00:00"))).total_seconds()


def _logs(path: MetricsPath) -> str:
    logs = path.cluster.logs
    return "\n".join(
        f"--- {name}\n" + _without_access_lines((logs / f"{name}.log").read_text(errors="replace"))[-3000:]
        for name in ("endpoint-picker", "kube-state-metrics", "vllm-0", "prometheus")
        if (logs / f"{name}.log").exists()
    )


def _without_access_lines(log: str) -> str:
    """A log without its HTTP server's line per request (vLLM's for every scrape of /metrics)."""
    return "\n".join(line for line in log.splitlines() if '" 200 OK' not in line)
