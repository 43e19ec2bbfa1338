"""PodMonitor, recording rules, HPA + prometheus-adapter rules, or KEDA: from one profile."""

import pytest

import fastyaml
from conftest import objects_of
from lwsgen.derive.monitoring import adapter_metric_name, quantity
from lwsgen.output import relations, validate
from runtimes.test_all_runtimes import profile_for

ON = {"monitoring": {"enabled": True, "interval": "30s", "prometheusLabels": {"release": "kps", "team": "ml"}}}


def _scaled(name, engine="hpa", metric="gpu-utilization", **extra):
    return profile_for(
        name,
        autoscaling={
            "enabled": True,
            "engine": engine,
            "metric": metric,
            "minReplicas": 1,
            "maxReplicas": 3,
            "target": 0.8,
            **extra,
        },
        **ON,
    )


@pytest.mark.parametrize(
    "name, port",
    [("triton-trtllm", "metrics"), ("vllm", "http"), ("sglang", "http"), ("llamacpp", "http"), ("aphrodite", "http")],
)
def test_podmonitor_scrapes_the_leaders_metrics_port_of_this_lws_only(render, name, port):
    objs = objects_of(render(profile_for(name, **ON)))
    monitor = objs["podmonitor.yaml"]
    assert monitor["spec"]["selector"] == {
        "matchLabels": {"leaderworkerset.sigs.k8s.io/name": "demo", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    }
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["default"]}
    assert monitor["spec"]["podMetricsEndpoints"] == [{"port": port, "path": "/metrics", "interval": "30s"}]
    assert monitor["spec"]["podTargetLabels"] == [
        "leaderworkerset.sigs.k8s.io/name",
        "leaderworkerset.sigs.k8s.io/group-index",
    ]
    leader = objs["leaderworkerset.yaml"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert port in {p["name"] for p in leader["ports"]}
    for kind in ("podmonitor.yaml", "prometheusrule.yaml"):
        labels = objs[kind]["metadata"]["labels"]
        assert labels["release"] == "kps" and labels["team"] == "ml" and labels["app.kubernetes.io/instance"] == "demo"


def test_nothing_of_monitoring_without_monitoring(render):
    files = render(profile_for("vllm")).files
    assert not {"podmonitor.yaml", "prometheusrule.yaml"} & set(files)


def test_a_runtime_without_metrics_gets_the_gpu_rule_but_no_podmonitor(render):
    objs = objects_of(render(profile_for("trtllm-serve", **ON)))
    assert "podmonitor.yaml" not in objs
    group, alerts = objs["prometheusrule.yaml"]["spec"]["groups"]
    assert [r["record"] for r in group["rules"]] == ["namespace_pod:dcgm_fi_dev_gpu_util:avg_group"]
    assert "LwsgenMetricsDown" not in [a["alert"] for a in alerts["rules"]]  # no scrape to be down


@pytest.mark.parametrize("name", ["triton-trtllm", "vllm", "sglang", "llamacpp", "aphrodite"])
def test_every_runtime_record_is_scoped_to_this_namespace_and_lws(render, name):
    groups = objects_of(render(profile_for(name, namespace="team-a", **ON)))["prometheusrule.yaml"]["spec"]["groups"]
    assert [g["name"] for g in groups] == [
        "lwsgen.team-a.demo.runtime",
        "lwsgen.team-a.demo.gpu",
        "lwsgen.team-a.demo.alerts",
    ]
    for alert in groups[2]["rules"]:  # every series an alert reads is this namespace's and this LWS's
        selectors = [part.split("}", 1)[0] for part in alert["expr"].split("{")[1:]]
        assert all('namespace="team-a"' in s for s in selectors), alert["alert"]
        # a pod-level series (readiness, phase, creation) by namespace alone is joined on this LWS's pods by name
        by_pod = [s for s in selectors if "demo" not in s]
        alone = ('namespace="team-a"', 'namespace="team-a", condition="true"', 'namespace="team-a", phase="Running"')
        assert all(s in alone for s in by_pod), alert
        assert not by_pod or "* on (namespace, pod)" in alert["expr"], alert["alert"]
    for rule in groups[0]["rules"]:
        selectors = [part for part in rule["expr"].split("{")[1:]]
        ours = 'namespace="team-a", leaderworkerset_sigs_k8s_io_name="demo"'
        # only ours, and for a Triton repository also the served model (or every model but it)
        assert selectors and all(s.startswith((ours + "}", ours + ', model="', ours + ', model!="')) for s in selectors)
    gpu = groups[1]["rules"][0]["expr"]
    assert 'kube_pod_labels{namespace="team-a", label_leaderworkerset_sigs_k8s_io_name="demo"}' in gpu
    assert 'label_leaderworkerset_sigs_k8s_io_worker_index="0"' in gpu and "pod=~" not in gpu


@pytest.mark.parametrize(
    "name, metric, record",
    [
        ("triton-trtllm", "queue-compute-ratio", "namespace_pod:triton_queue_compute:ratio_rate1m"),
        ("vllm", "queue-length", "namespace_pod:vllm_num_requests_waiting:sum"),
        ("vllm", "kv-cache-usage", "namespace_pod:vllm_gpu_cache_usage_perc:max"),  # v0.8.5: before 0.9.2
        ("aphrodite", "kv-cache-usage", "namespace_pod:aphrodite_gpu_cache_usage_perc:max"),
        ("sglang", "queue-length", "namespace_pod:sglang_num_queue_reqs:sum"),
        ("sglang", "kv-cache-usage", "namespace_pod:sglang_token_usage:max"),
        ("llamacpp", "queue-length", "namespace_pod:llamacpp_requests_deferred:sum"),
        ("trtllm-serve", "gpu-utilization", "namespace_pod:dcgm_fi_dev_gpu_util:avg_group"),
    ],
)
def test_hpa_scales_the_lws_on_the_recorded_series_the_adapter_exposes(render, name, metric, record):
    rendered = render(_scaled(name, metric=metric, scaleDownStabilizationSeconds=900, scaleUpPeriodSeconds=600))
    objs = objects_of(rendered)
    hpa = objs["horizontalpodautoscaler.yaml"]["spec"]
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "demo",
    }
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 3)
    [pods_metric] = hpa["metrics"]
    assert pods_metric["type"] == "Pods"
    assert pods_metric["pods"]["target"] == {"type": "AverageValue", "averageValue": "800m"}
    assert hpa["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 900
    assert hpa["behavior"]["scaleUp"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 600}]
    [rule] = objs["prometheus-adapter-rules.yaml"]["rules"]
    assert rule["seriesQuery"] == f'{record}{{namespace!="",pod!=""}}'
    assert rule["name"] == {"matches": f"^{record}$", "as": pods_metric["pods"]["metric"]["name"]}
    assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
    recorded = {r.get("record") for g in objs["prometheusrule.yaml"]["spec"]["groups"] for r in g["rules"]}
    assert record in recorded
    assert "scaledobject.yaml" not in objs


def test_adapter_rules_stay_out_of_the_kustomization(render):
    rendered = render(_scaled("vllm", metric="queue-length"))
    kustomization = fastyaml.load(rendered.files["kustomization.yaml"])
    assert "prometheus-adapter-rules.yaml" in rendered.files
    assert "prometheus-adapter-rules.yaml" not in kustomization["resources"]
    assert "horizontalpodautoscaler.yaml" in kustomization["resources"]
    assert rendered.files["prometheus-adapter-rules.yaml"].startswith("# prometheus-adapter rules")


def test_keda_scaledobject_replaces_the_hpa(render):
    objs = objects_of(
        render(_scaled("sglang", engine="keda", metric="queue-length", prometheusAddress="http://prom.obs:9090"))
    )
    assert "horizontalpodautoscaler.yaml" not in objs and "prometheus-adapter-rules.yaml" not in objs
    spec = objs["scaledobject.yaml"]["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "demo",
    }
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 3)
    [trigger] = spec["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert trigger["metadata"] == {
        "serverAddress": "http://prom.obs:9090",
        "query": (
            'sum(namespace_pod:sglang_num_queue_reqs:sum{namespace="default", leaderworkerset_sigs_k8s_io_name="demo"})'
        ),
        "threshold": "0.8",
    }
    assert (
        spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600
    )


@pytest.mark.parametrize(
    "value, expected", [(1, "1"), (1.0, "1"), (0.8, "800m"), (70, "70"), (2.5, "2500m"), (0.001, "1m")]
)
def test_targets_become_kubernetes_quantities(value, expected):
    assert quantity(value) == expected


def test_adapter_metric_names_drop_the_level_and_colons():
    assert adapter_metric_name("namespace_pod:triton_queue_compute:ratio_rate1m") == "triton_queue_compute_ratio_rate1m"


def _cross(files):
    return [(f, e.path, e.message) for f, _, e in relations.cross_object_errors(files)]


def test_cross_object_rules_catch_a_stray_podmonitor_and_a_misdirected_autoscaler(render):
    objs = objects_of(render(_scaled("vllm", metric="queue-length")))
    lws = objs["leaderworkerset.yaml"]
    monitor, hpa = objs["podmonitor.yaml"], objs["horizontalpodautoscaler.yaml"]
    assert _cross({"l": (lws,), "m": (monitor,), "h": (hpa,)}) == []
    monitor["spec"]["selector"] = {"matchLabels": {"role": "leader"}}
    hpa["spec"]["scaleTargetRef"]["name"] = "leaderworkerset-sample"
    found = _cross({"l": (lws,), "m": (monitor,), "h": (hpa,)})
    assert ("m", ("spec", "selector")) in [(f, p) for f, p, _ in found]
    assert ("h", ("spec", "scaleTargetRef")) in [(f, p) for f, p, _ in found]


def test_podmonitor_port_must_exist_on_the_leader(render):
    objs = objects_of(render(profile_for("vllm", **ON)))
    objs["podmonitor.yaml"]["spec"]["podMetricsEndpoints"][0]["port"] = "metrics"
    [(_, path, message)] = _cross({"l": (objs["leaderworkerset.yaml"],), "m": (objs["podmonitor.yaml"],)})
    assert path == ("spec", "podMetricsEndpoints", 0, "port") and "'metrics' is not a named port" in message


def test_record_names_are_enforced_by_the_prometheusrule_schema(render):
    rule = objects_of(render(profile_for("vllm", **ON)))["prometheusrule.yaml"]
    rule["spec"]["groups"][0]["rules"][0]["record"] = "vllm:num_requests_waiting"
    assert any("does not match" in error.message for error in validate.schema_errors(rule, "1.33"))
