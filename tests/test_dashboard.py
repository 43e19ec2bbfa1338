"""Every example's Grafana dashboard: loadable by the Grafana sidecar, valid under Grafana's own
dashboard schema, and every query answering against the example's own rules and series.

- The schema: the Grafana Foundation SDK's strict unmarshalling and Validate() of the dashboard
  model (tools/grafana, built by make tools), which refuse unknown fields, wrong types and missing
  required ones down to each panel's options and each Prometheus query.
- The queries: the real promtool evaluates the rendered PrometheusRule's records over input series
  shaped like the engine's own and like kube-state-metrics', DCGM's and the endpoint picker's, made
  from the rendered objects (the pods of group 0 of every workload as the controllers name and label
  them, the labels the PodMonitor's podTargetLabels put on a scrape, every selector of the rules and
  queries with its own label matchers); each dashboard query is an alert `absent(query)` that must
  stay silent, so a query naming a series or label nothing produces fails.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import engine_series
import fastyaml
from conftest import REPO, tool
from lwsgen import runtimes
from test_alerts import EXAMPLES as ALERTING
from test_alerts import World, _pods, _series, _workloads

pytestmark = pytest.mark.tools
CHECKER = REPO / ".tools" / "bin" / "grafana-dashboard-check"
EXAMPLES = sorted(p.parent.name for p in (REPO / "out").glob("*/grafana-dashboard.yaml"))
SIDECAR_LABEL = ("grafana_dashboard", "1")  # the Grafana Helm chart's sidecar default
RATE_INTERVAL = "5m"  # what Grafana puts for $__rate_interval at a 15 s scrape
BUCKETS = ("0.05", "0.1", "0.5", "1", "5", "+Inf")
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}")
# kube-state-metrics v2.20.0 internal/store/horizontalpodautoscaler.go (replicas; each metric's target
# and current value labelled metric_name and metric_target_type) and llm-d-router v0.10.0
# pkg/epp/metrics/llm_d_router_metrics.go (the pool's gauges, labelled name): the per-object series
HPA_REPLICAS = ("status_current_replicas", "status_desired_replicas", "spec_max_replicas")
HPA_METRICS = ("status_target_metric", "spec_target_metric")
POOL_GAUGES = (
    "llm_d_epp_average_queue_size",
    "llm_d_epp_average_kv_cache_utilization",
    "llm_d_epp_average_running_requests",
    "llm_d_epp_flow_control_queue_size",
)


def _dashboard(example: str) -> tuple[dict, dict]:
    [cm] = fastyaml.load_all((REPO / "out" / example / "grafana-dashboard.yaml").read_text(encoding="utf-8"))
    [text] = cm["data"].values()
    return cm, json.loads(text)


def _queries(board: dict) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in board["panels"] if p["type"] != "row" for t in p["targets"]]


def _check(paths: list[Path]) -> subprocess.CompletedProcess:
    if not CHECKER.exists():
        pytest.fail(
            f"{CHECKER.relative_to(REPO)} is not built; run the tests through `make test` (make tools builds it)"
        )
    return subprocess.run([str(CHECKER), *map(str, paths)], capture_output=True, text=True)


def test_every_example_with_alerts_has_a_dashboard():
    assert EXAMPLES == ALERTING


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_sidecar_finds_the_dashboard(example):
    cm, board = _dashboard(example)
    assert cm["metadata"]["labels"][SIDECAR_LABEL[0]] == SIDECAR_LABEL[1]
    [key] = cm["data"]
    assert key.endswith(".json") and board["title"] and len(board["uid"]) <= 40


def test_every_dashboard_passes_grafanas_schema(tmp_path):
    paths = []
    for example in EXAMPLES:
        paths.append(tmp_path / f"{example}.json")
        paths[-1].write_text(json.dumps(_dashboard(example)[1]), encoding="utf-8")
    run = _check(paths)
    assert run.returncode == 0, run.stdout + run.stderr


def test_grafanas_schema_refuses_what_grafana_would_not_read(tmp_path):
    """The check can fail: an unknown panel field, a query field Prometheus' query model lacks."""
    board = _dashboard(EXAMPLES[0])[1]
    panel = next(p for p in board["panels"] if p["type"] == "timeseries")
    panel["legend"] = "bottom"
    panel["targets"][0]["query"] = panel["targets"][0]["expr"]
    (tmp_path / "bad.json").write_text(json.dumps(board), encoding="utf-8")
    run = _check([tmp_path / "bad.json"])
    assert run.returncode == 1
    assert "unexpected field 'legend'" in run.stdout and "unexpected field 'query'" in run.stdout


class Series:
    """Input series for promtool: each pod of group 0 of every workload, as its exporters label it."""

    def __init__(self, world: World):
        self.world = world
        self.pods = [pod for lws in _workloads(world.objects) for pod in _pods(lws)]
        if world.isvc:  # KServe's head Deployment's pod and its worker Deployment's (group size - 1)
            from lwsgen.output import kserve

            isvcs = [o for o in world.objects if o["kind"] == "InferenceService"]
            runtimes = [o for o in world.objects if o["kind"] == "ServingRuntime"]
            head, worker = kserve.isvc_deployments(isvcs, runtimes)
            self.pods = [
                (f"{head['metadata']['name']}-5d4f8b7c9-x2x7q", head["spec"]["template"]["metadata"]["labels"])
            ]
            labels = worker["spec"]["template"]["metadata"]["labels"]
            self.pods += [
                (f"{worker['metadata']['name']}-6c9f7d8b5-w{i}", labels) for i in range(world.profile.group_size - 1)
            ]
        self.out: dict[str, str] = {}

    def add(self, series: str, values: str) -> None:
        self.out.setdefault(series, values)

    def pod_state(self) -> None:
        for name, labels in self.pods:
            self.add(self.world.kube_pod_labels(name, labels), "1x40")
            ready = {"namespace": self.world.namespace, "pod": name, "condition": "true"}
            self.add(_series("kube_pod_status_ready", ready), "1x40")
            dcgm = {"exported_namespace": self.world.namespace, "exported_pod": name, "gpu": "0"}
            self.add(_series("DCGM_FI_DEV_GPU_UTIL", dcgm), "50x40")

    def engine(self, runtime: str) -> None:
        """The engine's own series (tests/engine_series.py) on every pod a PodMonitor scrapes."""
        model = runtimes.served_name(self.world.profile)  # what clients request: Triton's entry model
        for name, pod_labels in self.pods:
            scraped = _scraped(self.world, pod_labels)
            if scraped is None:
                continue  # no PodMonitor scrapes this pod (a worker of a leader-only engine)
            # a scrape's own labels: instance (the pod's address) tells a group's pods apart once a
            # record renames each pod to its leader
            own = {"namespace": self.world.namespace, "pod": name, "instance": f"{name}:8000", **scraped}
            for metric, kind, labels in engine_series.ENGINES[runtime]:
                base = {**{k: v.replace("{model}", model) for k, v in labels.items()}, **own}
                if kind != engine_series.HISTOGRAM:
                    self.add(_series(metric, base), "0+1x40" if kind == engine_series.COUNTER else "1x40")
                    continue
                for index, le in enumerate(BUCKETS):
                    self.add(_series(f"{metric}_bucket", {**base, "le": le}), f"0+{index + 1}x40")
                self.add(_series(f"{metric}_sum", base), "0+1x40")
                self.add(_series(f"{metric}_count", base), f"0+{len(BUCKETS)}x40")

    def autoscalers(self) -> None:
        """kube-state-metrics' series of each HPA the rendered objects make: lwsgen's, or the one KEDA
        makes of a ScaledObject (keda-hpa-<name>, its triggers' External metrics s<i>-<type>)."""
        namespace = self.world.namespace
        hpas = []
        for o in self.world.objects:
            if o["kind"] == "HorizontalPodAutoscaler":
                hpas.append((o["metadata"]["name"], [m["pods"]["metric"]["name"] for m in o["spec"]["metrics"]]))
            elif o["kind"] == "ScaledObject":
                metrics = [f"s{i}-{t['type']}" for i, t in enumerate(o["spec"]["triggers"])]
                hpas.append((f"keda-hpa-{o['metadata']['name']}", metrics))
        for name, metrics in hpas:
            labels = {"namespace": namespace, "horizontalpodautoscaler": name}
            for series in HPA_REPLICAS:
                self.add(_series(f"kube_horizontalpodautoscaler_{series}", labels), "2x40")
            for metric in metrics:
                target = {**labels, "metric_name": metric, "metric_target_type": "average"}
                for series in HPA_METRICS:
                    self.add(_series(f"kube_horizontalpodautoscaler_{series}", target), "1x40")

    def pools(self) -> None:
        """The endpoint picker's gauges of each rendered InferencePool."""
        for pool in (o for o in self.world.objects if o["kind"] == "InferencePool"):
            labels = {"namespace": self.world.namespace, "name": pool["metadata"]["name"]}
            for gauge in POOL_GAUGES:
                self.add(_series(gauge, labels), "1x40")

    def of(self, runtime: str) -> list[dict]:
        self.pod_state()
        self.engine(runtime)
        self.autoscalers()
        self.pools()
        return [{"series": s, "values": v} for s, v in self.out.items()]


def _records(world: World) -> list[dict]:
    return [g for g in world.rules["spec"]["groups"] if not g["name"].endswith(".alerts")]


def _promtool_case(world: World, queries: list[tuple[str, str]], tmp_path: Path) -> subprocess.CompletedProcess:
    groups = _records(world)
    exprs = [q.replace("$__rate_interval", RATE_INTERVAL) for _, q in queries]
    probes = [{"alert": f"DashboardQueryEmpty{i}", "expr": f"absent({e})"} for i, e in enumerate(exprs)]
    groups = [*groups, {"name": "dashboard", "rules": probes}]
    (tmp_path / "rules.yaml").write_text(fastyaml.dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    series = Series(world).of(world.profile.runtime)
    checks = [{"eval_time": "30m", "alertname": p["alert"], "exp_alerts": []} for p in probes]
    case = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "test.yaml").write_text(fastyaml.dump(case, sort_keys=False), encoding="utf-8")
    return subprocess.run(
        [tool("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True, cwd=tmp_path
    )


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_query_answers_from_the_rules_and_the_engines_series(example, tmp_path):
    world = World(example)
    queries = _queries(_dashboard(example)[1])
    assert queries
    run = _promtool_case(world, queries, tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


@pytest.mark.parametrize("example", ["vllm-llama31-405b"])
def test_a_query_no_series_answers_is_caught(example, tmp_path):
    """The check can fail: a record's name misspelt, a label the records do not carry."""
    world = World(example)
    queries = _queries(_dashboard(example)[1])
    title, expr = next((t, q) for t, q in queries if "namespace_pod:" in q)
    wrong = [
        (title, expr.replace("namespace_pod:", "namespace_pods:", 1)),
        (title, expr.replace("{", '{role="x", ', 1)),
    ]
    ttft = next(q for t, q in queries if t == "Time to first token")
    wrong.append(("Time to first token", ttft.replace("_seconds_bucket", "_bucket")))  # an engine name misspelt
    for query in wrong:
        run = _promtool_case(world, [query], tmp_path)
        said = run.stdout + run.stderr
        assert run.returncode == 1 and "DashboardQueryEmpty0" in said, said[-2000:]


def _single_with_request_rate(example: str) -> bool:
    titles = {t for t, _ in _queries(_dashboard(example)[1])}
    return "Request rate" in titles and not World(example).profile.roles


def _silent(tmp_path: Path, alerts: dict[str, str], entries: list[dict]) -> subprocess.CompletedProcess:
    """promtool over `entries`: each alert (name: expr) must stay silent at 30 minutes."""
    groups = [{"name": "dashboard", "rules": [{"alert": name, "expr": expr} for name, expr in alerts.items()]}]
    (tmp_path / "rules.yaml").write_text(fastyaml.dump({"groups": groups}), encoding="utf-8")
    checks = [{"eval_time": "30m", "alertname": name, "exp_alerts": []} for name in alerts]
    test = {"interval": "1m", "input_series": entries, "alert_rule_test": checks}
    case = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [test]}
    (tmp_path / "test.yaml").write_text(fastyaml.dump(case), encoding="utf-8")
    return subprocess.run(
        [tool("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True, cwd=tmp_path
    )


@pytest.mark.parametrize("example", [e for e in EXAMPLES if _single_with_request_rate(e)])
def test_the_request_rate_counts_the_served_model_once(example, tmp_path):
    """Each scraped pod's finished-request counter rises by one a minute (Series): the panel shows the
    scraped pods' count over 60 per second, not more (Triton's composing models counted too) or less."""
    world = World(example)
    queries = _queries(_dashboard(example)[1])
    [query] = [q.replace("$__rate_interval", RATE_INTERVAL) for t, q in queries if t == "Request rate"]
    series = Series(world)
    entries = series.of(world.profile.runtime)
    expected = sum(1 for _, labels in series.pods if _scraped(world, labels) is not None) / 60
    alerts = {"RateOff": f"abs(({query}) - {expected}) > {expected / 20}", "RateMissing": f"absent({query})"}
    run = _silent(tmp_path, alerts, entries)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def _scraped(world: World, labels: dict) -> dict | None:
    """The labels a scrape of the pod carries, or None when no PodMonitor scrapes it."""
    try:
        return world.scraped(labels)
    except AssertionError:
        return None


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_record_a_panel_reads_is_in_the_rule_set(example):
    """Names exist: every recorded series a query reads is a record of the example's PrometheusRule."""
    world = World(example)
    records = {r["record"] for g in _records(world) for r in g["rules"]}
    for title, query in _queries(_dashboard(example)[1]):
        for metric, _ in SELECTOR.findall(query):
            if ":" in metric and metric.startswith("namespace_pod:"):
                assert metric in records, f"{title}: {metric}"


def test_the_groups_panel_counts_whole_groups_only(tmp_path):
    """groups ready counts a group only when all its pods are: one pod not ready, no group ready."""
    example = next(e for e in EXAMPLES if e == "vllm-llama31-405b")
    world = World(example)
    [ready] = [q for t, q in _queries(_dashboard(example)[1]) if t == "Groups ready" and "kube_pod_status_ready" in q]
    series = Series(world)
    entries = series.of(world.profile.runtime)
    last = series.pods[-1][0]
    entries = [
        {**e, "values": "0x40"}
        if e["series"].startswith("kube_pod_status_ready") and f'pod="{last}"' in e["series"]
        else e
        for e in entries
    ]
    run = _silent(tmp_path, {"Ready": ready}, entries)
    assert run.returncode == 0, run.stdout[-3000:]


def test_two_namespaces_profiles_of_one_name_are_two_dashboard_files(render, minimal):
    """The Grafana sidecar writes every dashboard ConfigMap's keys as files into one folder."""
    keys = []
    for namespace in ("team-a", "team-b"):
        profile = {**minimal, "namespace": namespace, "monitoring": {"enabled": True}}
        [cm] = fastyaml.load_all(render(profile).files["grafana-dashboard.yaml"])
        keys += list(cm["data"])
    assert len(set(keys)) == 2, keys
