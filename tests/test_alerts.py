"""Every alert of every example, firing and not firing, under the real promtool (`promtool test rules`).

The input series are built from the rendered objects of out/, not from lwsgen's code: the pods of
group 0 as the LeaderWorkerSet controller names and labels them (the group simulator's
sim.group_pods; the role sets a DisaggregatedSet makes, and the LeaderWorkerSet or Deployments KServe
makes, as tests/groupsim/sim.py builds them), kube-state-metrics' series of those pods, the series
the PodMonitor's podTargetLabels put on a scrape, and the HPA and download Job by their rendered
names. Each scenario holds its condition past the alert's `for` (it fires, with what the on-call
engineer reads) and a world where it does not hold (it stays silent)."""

from __future__ import annotations

import subprocess

import pytest

import engine_series
import fastyaml
from conftest import REPO, tool
from groupsim import sim
from lwsgen.check import budget
from lwsgen.naming import series_label
from lwsgen.pipeline import load_profile

pytestmark = pytest.mark.tools
EXAMPLES = sorted(p.parent.name for p in (REPO / "out").glob("*/prometheusrule.yaml"))
SET_ROLE = "disaggregatedset.x-k8s.io/role"


def _seconds(duration: str) -> int:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    import re

    return int(sum(float(n) * units[u] for n, u in re.findall(r"([0-9]+)(ms|s|m|h)", duration)))


def _workloads(objects: list[dict]) -> list[dict]:
    """The LeaderWorkerSets whose pods run: the example's, a DisaggregatedSet's role sets, KServe's."""
    sets = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    for ds in (o for o in objects if o["kind"] == "DisaggregatedSet"):
        sets += [sim.role_set(ds, role) for role in ds["spec"]["roles"]]
    return sets


def _llmd_role(lws: dict) -> str | None:
    """The role KServe labels a P/D service's leader pods with (lwsgen/output/kserve.py)."""
    leader = lws["spec"]["leaderWorkerTemplate"].get("leaderTemplate") or {}
    return ((leader.get("metadata") or {}).get("labels") or {}).get("llm-d.ai/role")


def _pods(lws: dict) -> list[tuple[str, dict]]:
    return [(name, labels) for name, labels, _, _ in sim.group_pods(lws)]


def _series(metric: str, labels: dict) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{inner}}}"


class World:
    """One example's rendered objects, and the series its group 0 makes."""

    def __init__(self, example: str):
        directory = REPO / "out" / example
        self.objects = sim.load(directory)
        self.profile = load_profile(REPO / "profiles" / f"{example}.yaml")[0]
        self.namespace = self.profile.namespace
        self.rules = next(o for o in self.objects if o["kind"] == "PrometheusRule")
        self.isvc = any(o["kind"] == "InferenceService" for o in self.objects)
        self.monitors = [o for o in self.objects if o["kind"] == "PodMonitor"]

    def isvc_head(self):
        """(a pod name, the head Deployment's pod template) of KServe's InferenceService head."""
        from lwsgen.output import kserve

        isvcs = [o for o in self.objects if o["kind"] == "InferenceService"]
        head = kserve.isvc_deployments(isvcs, [o for o in self.objects if o["kind"] == "ServingRuntime"])[0]
        return [(f"{head['metadata']['name']}-5d4f8b7c9-x2x7q", head["spec"]["template"])]

    def workload(self, role: str | None) -> dict:
        sets = _workloads(self.objects)
        if role is None:
            return sets[0]
        return next(s for s in sets if s["metadata"]["labels"].get(SET_ROLE) == role or _llmd_role(s) == role)

    def scraped(self, pod_labels: dict) -> dict:
        """The labels a scrape of this pod carries: the PodMonitor's podTargetLabels that select it."""
        for monitor in self.monitors:
            selector = monitor["spec"]["selector"]["matchLabels"]
            if all(pod_labels.get(k) == v for k, v in selector.items()):
                return {series_label(k): pod_labels[k] for k in monitor["spec"].get("podTargetLabels", [])}
        raise AssertionError(f"no PodMonitor selects {pod_labels}")

    def kube_pod_labels(self, name: str, labels: dict) -> str:
        ksm = {f"label_{series_label(k)}": v for k, v in labels.items()}
        return _series("kube_pod_labels", {"namespace": self.namespace, "pod": name, **ksm})


def _case(series: list[tuple[str, str]], alert: dict, at: int, fires: list[dict]) -> dict:
    return {
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series],
        "alert_rule_test": [{"eval_time": f"{at}s", "alertname": alert["alert"], "exp_alerts": fires}],
    }


def _expected(alert: dict, labels: dict, annotations: dict) -> dict:
    own = {
        "severity": alert["labels"]["severity"],
        **({"role": alert["labels"]["role"]} if "role" in alert["labels"] else {}),
    }
    return {"exp_labels": {**labels, **own}, "exp_annotations": annotations}


def _annotations(alert: dict, values: dict) -> dict:
    """The alert's annotations as Prometheus expands them for this scenario ({{ $value }}, {{ $labels.x }})."""
    out = {}
    for key, text in alert["annotations"].items():
        for name, value in values.items():
            text = text.replace("{{ $value }}" if name == "$value" else f"{{{{ $labels.{name} }}}}", str(value))
        out[key] = text
    return out


def _group_not_whole(world: World, alert: dict) -> list[dict]:
    lws = world.workload(alert["labels"].get("role"))
    pods = _pods(lws)
    hold = _seconds(alert["for"])
    steps = hold // 60 + 3
    keys = [k for k in alert["expr"].split("sum by (namespace, ", 1)[1].split(")", 1)[0].split(", ")]
    group = {k: {f"label_{series_label(p)}": v for p, v in pods[0][1].items()}[k] for k in keys}
    tests = []
    for ready_last, fires in ((0, True), (1, False)):
        series = []
        for index, (name, labels) in enumerate(pods):
            series.append((world.kube_pod_labels(name, labels), f"1x{steps}"))
            ready = ready_last if index == len(pods) - 1 else 1
            condition = {"namespace": world.namespace, "pod": name, "condition": "true"}
            series.append((_series("kube_pod_status_ready", condition), f"{ready}x{steps}"))
        labels = {"namespace": world.namespace, **group}
        found = [_expected(alert, labels, _annotations(alert, {"$value": len(pods) - 1, **group}))] if fires else []
        tests.append(_case(series, alert, hold + 120, found))
    # the same group with no pod ready, for less than its budget: silent
    series = []
    for name, labels in pods:
        series.append((world.kube_pod_labels(name, labels), f"1x{steps}"))
        condition = {"namespace": world.namespace, "pod": name, "condition": "true"}
        series.append((_series("kube_pod_status_ready", condition), f"0x{steps}"))
    tests.append(_case(series, alert, max(hold - 120, 60), []))
    return tests


def _leader_series(world: World, alert: dict) -> tuple[str, dict]:
    lws = world.workload(alert["labels"].get("role"))
    name, labels = _pods(lws)[0]
    return name, {"namespace": world.namespace, "pod": name, **world.scraped(labels)}


def _metrics_down(world: World, alert: dict) -> list[dict]:
    name, labels = _leader_series(world, alert)
    hold = _seconds(alert["for"])
    tests = []
    for up, fires in ((0, True), (1, False)):
        found = [_expected(alert, labels, _annotations(alert, {"pod": name}))] if fires else []
        tests.append(_case([(_series("up", labels), f"{up}x{hold // 60 + 3}")], alert, hold + 120, found))
    return tests


def _not_scraped(world: World, alert: dict) -> list[dict]:
    """The leader pod Running (kube-state-metrics) and no `up` of the workload: fires; the leader's
    scrape up (or down, but there), or the leader Pending (no address, so no target): silent."""
    lws = world.workload(alert["labels"].get("role"))
    if world.isvc:
        pods = [(name, template["metadata"]["labels"]) for name, template in world.isvc_head()]
    else:
        pods = _pods(lws)
    leader, leader_labels = pods[0]
    hold = _seconds(alert["for"])
    steps = hold // 60 + 3
    phase = {"namespace": world.namespace, "pod": leader, "phase": "Running"}
    state = [
        (world.kube_pod_labels(leader, leader_labels), f"1x{steps}"),
        (_series("kube_pod_status_phase", phase), f"1x{steps}"),
    ]
    found = [_expected(alert, {"namespace": world.namespace}, _annotations(alert, {}))]
    tests = [_case(state, alert, hold + 120, found)]
    up = {"namespace": world.namespace, "pod": leader, **world.scraped(leader_labels)}
    tests.append(_case([*state, (_series("up", up), f"0x{steps}")], alert, hold + 120, []))
    pending = [state[0], (_series("kube_pod_status_phase", phase), f"0x{steps}")]
    tests.append(_case(pending, alert, hold + 120, []))
    return tests


def _record_of(alert: dict, position: int = 0) -> str:
    return [part.split("{", 1)[0].strip("( \n") for part in alert["expr"].split("and on (namespace, pod)")][position]


def _kv_full(world: World, alert: dict) -> list[dict]:
    name, labels = _leader_series(world, alert)
    hold, threshold = _seconds(alert["for"]), float(alert["expr"].rsplit(">", 1)[1])
    tests = []
    for value, fires in ((min(threshold + 0.02, 1.0), True), (threshold / 2, False)):
        found = [_expected(alert, labels, _annotations(alert, {"pod": name}))] if fires else []
        tests.append(
            _case([(_series(_record_of(alert), labels), f"{value}x{hold // 60 + 3}")], alert, hold + 120, found)
        )
    return tests


def _queue_busy(world: World, alert: dict) -> list[dict]:
    name, labels = _leader_series(world, alert)
    hold = _seconds(alert["for"])
    busy = float(alert["expr"].rsplit(">", 1)[1].strip(" )"))
    tests = []
    for gpu, fires in ((min(busy + 5, 100), True), (busy / 2, False)):
        series = [
            (_series(_record_of(alert, 0), labels), f"3x{hold // 60 + 3}"),
            (_series(_record_of(alert, 1), labels), f"{gpu}x{hold // 60 + 3}"),
        ]
        found = [_expected(alert, labels, _annotations(alert, {"pod": name}))] if fires else []
        tests.append(_case(series, alert, hold + 120, found))
    return tests


def _autoscaler_at_max(world: World, alert: dict) -> list[dict]:
    """kube-state-metrics' series of the HPA (internal/store/horizontalpodautoscaler.go@v2.20.0): its
    replicas, and its metric's target and current value labelled by the metric's name as the HPA
    names it (a Pods metric's, or KEDA's s0-<trigger> External metric) and target type average."""
    # the rendered autoscaler whose HPA the alert names (a role's own, in a DisaggregatedSet)
    named = 'horizontalpodautoscaler="{}"'
    hpas = [o for o in world.objects if o["kind"] == "HorizontalPodAutoscaler"]
    hpa = next((o for o in hpas if named.format(o["metadata"]["name"]) in alert["expr"]), None)
    if hpa is not None:
        name, most = hpa["metadata"]["name"], hpa["spec"]["maxReplicas"]
        metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    else:  # KEDA's HPA for the ScaledObject (keda-hpa-<name>), its first trigger s0-prometheus
        scaled_objects = [o for o in world.objects if o["kind"] == "ScaledObject"]
        scaled = next(o for o in scaled_objects if named.format(f"keda-hpa-{o['metadata']['name']}") in alert["expr"])
        name, most = f"keda-hpa-{scaled['metadata']['name']}", scaled["spec"]["maxReplicaCount"]
        metric = f"s0-{scaled['spec']['triggers'][0]['type']}"
    hold = _seconds(alert["for"])
    labels = {"namespace": world.namespace, "horizontalpodautoscaler": name}
    target = {**labels, "metric_name": metric, "metric_target_type": "average"}
    tests = []
    # at its maximum with the metric above target: fires; below target, or under its maximum: silent
    for current, value, fires in ((most, 5, True), (most, 1, False), (most - 1, 5, False)):
        steps = hold // 60 + 3
        series = [
            (_series("kube_horizontalpodautoscaler_status_current_replicas", labels), f"{current}x{steps}"),
            (_series("kube_horizontalpodautoscaler_spec_max_replicas", labels), f"{most}x{steps}"),
            (_series("kube_horizontalpodautoscaler_status_target_metric", target), f"{value}x{steps}"),
            (_series("kube_horizontalpodautoscaler_spec_target_metric", target), f"2x{steps}"),
        ]
        found = [_expected(alert, labels, _annotations(alert, {}))] if fires else []
        tests.append(_case(series, alert, hold + 120, found))
    return tests


def _download_failed(world: World, alert: dict) -> list[dict]:
    job = next(o for o in world.objects if o["kind"] == "Job" and "model" in o["metadata"]["name"])
    labels = {"namespace": world.namespace, "job_name": job["metadata"]["name"]}
    tests = []
    for failed, fires in ((1, True), (0, False)):
        found = [_expected(alert, labels, _annotations(alert, {}))] if fires else []
        tests.append(_case([(_series("kube_job_status_failed", labels), f"{failed}x5")], alert, 180, found))
    return tests


def _restarting(world: World, alert: dict) -> list[dict]:
    """The leader recreated under its name (a new uid each time, as LeaderWorkerSet does), or, for
    KServe's InferenceService head, its engine container restarted."""
    lws = world.workload(alert["labels"].get("role"))
    name, labels = _pods(lws)[0]
    if world.isvc:
        name, labels = next((n, dict(t["metadata"]["labels"])) for n, t in world.isvc_head())
    base = [(world.kube_pod_labels(name, labels), "1x45")]
    tests = []
    for times, fires in ((3, True), (1, False)):
        series = list(base)
        if world.isvc:
            restarts = " ".join(str(min(i // 10, times) if fires else 0) for i in range(46))
            container = {"namespace": world.namespace, "pod": name, "container": "kserve-container"}
            series.append((_series("kube_pod_container_status_restarts_total", container), restarts))
        else:
            for uid in range(times):  # each incarnation lives 10 minutes, the last to the end
                life = "_x" * 0
                values = (
                    " ".join(
                        "1" if uid * 10 <= i < (uid + 1) * 10 or (uid == times - 1 and i >= uid * 10) else "_"
                        for i in range(46)
                    )
                    + life
                )
                pod = {"namespace": world.namespace, "pod": name, "uid": f"uid-{uid}"}
                series.append((_series("kube_pod_created", pod), values))
        expected = {"namespace": world.namespace, "pod": name}
        found = [_expected(alert, expected, _annotations(alert, {"pod": name}))] if fires else []
        tests.append(_case(series, alert, 40 * 60, found))
    return tests


def _nccl_failed(world: World, alert: dict) -> list[dict]:
    role = alert["labels"].get("role")
    jobs = [o for o in world.objects if o["kind"] in ("Job", "MPIJob") and "nccl-test" in o["metadata"]["name"]]
    if role is not None:
        jobs = [o for o in jobs if o["metadata"]["name"].startswith(f"{world.profile.name}-{role}")] or jobs
    test = jobs[0]
    name = test["metadata"]["name"] + ("-launcher" if test["kind"] == "MPIJob" else "")
    labels = {"namespace": world.namespace, "job_name": name}
    tests = []
    for failed, fires in ((1, True), (0, False)):
        found = [_expected(alert, labels, _annotations(alert, {}))] if fires else []
        tests.append(_case([(_series("kube_job_status_failed", labels), f"{failed}x5")], alert, 180, found))
    return tests


def _preempted(world: World, alert: dict) -> list[dict]:
    """The engine's eviction counter rising on the leader for the alert's `for` fires it; flat, silent."""
    name, labels = _leader_series(world, alert)
    counter = alert["expr"].split("rate(", 1)[1].split("{", 1)[0]
    assert counter in {n for n, _, _ in engine_series.ENGINES[world.profile.runtime]}, f"{counter}: not the engine's"
    hold = _seconds(alert["for"])
    steps = hold // 60 + 8
    tests = []
    for values, fires in ((f"0+5x{steps}", True), (f"7x{steps}", False)):
        found = [_expected(alert, labels, _annotations(alert, {"pod": name}))] if fires else []
        tests.append(_case([(_series(counter, labels), values)], alert, hold + 420, found))
    return tests


SCENARIOS = {
    "LwsgenGroupRestarting": _restarting,
    "LwsgenNcclPreflightFailed": _nccl_failed,
    "LwsgenGroupNotWhole": _group_not_whole,
    "LwsgenMetricsDown": _metrics_down,
    "LwsgenLeadersNotScraped": _not_scraped,
    "LwsgenKVCacheNearFull": _kv_full,
    "LwsgenRequestsPreempted": _preempted,
    "LwsgenQueueWhileGPUsBusy": _queue_busy,
    "LwsgenAutoscalerAtMax": _autoscaler_at_max,
    "LwsgenModelDownloadFailed": _download_failed,
}


def _alerts(world: World) -> list[dict]:
    return [r for g in world.rules["spec"]["groups"] if g["name"].endswith(".alerts") for r in g["rules"]]


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_alert_fires_when_its_condition_holds_and_not_otherwise(example, tmp_path):
    world = World(example)
    alerts = _alerts(world)
    assert alerts, "no alert"
    groups = [g for g in world.rules["spec"]["groups"] if g["name"].endswith(".alerts")]
    (tmp_path / "rules.yaml").write_text(fastyaml.dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    tests = [test for alert in alerts for test in SCENARIOS[alert["alert"]](world, alert)]
    case = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yaml").write_text(fastyaml.dump(case, sort_keys=False), encoding="utf-8")
    run = subprocess.run([tool("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_group_is_not_whole_only_after_its_start_budget(example):
    world = World(example)
    profiles = dict(world.profile.roles) or {None: world.profile}
    for alert in (a for a in _alerts(world) if a["alert"] == "LwsgenGroupNotWhole"):
        profile = profiles[alert["labels"].get("role")]
        assert _seconds(alert["for"]) == budget.budget(profile).total


def test_every_alert_has_its_runbook():
    runbooks = (REPO / "docs" / "runbooks.md").read_text(encoding="utf-8")
    for name in SCENARIOS:
        assert f"\n## {name}\n" in runbooks, name
    for example in EXAMPLES:
        for alert in _alerts(World(example)):
            assert alert["annotations"]["runbook_url"] == f"docs/runbooks.md#{alert['alert'].lower()}"
            assert {"summary", "description", "runbook_url"} <= set(alert["annotations"])
