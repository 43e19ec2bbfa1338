"""Monitoring and autoscaling parts of a Deployment: PodMonitor, recording rules, HPA with its
prometheus-adapter rules, or a KEDA ScaledObject. Everything here is data for the templates.

Every record is one value per leader pod, labelled namespace, pod and the LWS name and group
index, so an HPA (which sees leader pods only) can read it through prometheus-adapter.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from lwsgen.naming import LWS_NAME_LABEL, WORKER_INDEX_LABEL
from lwsgen.runtimes.base import Capabilities, RecordingRule

GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
# Pod labels copied onto scraped series by podTargetLabels, as Prometheus names them.
NAME_SERIES_LABEL = "leaderworkerset_sigs_k8s_io_name"
GROUP_SERIES_LABEL = "leaderworkerset_sigs_k8s_io_group_index"
# The same pod labels as kube-state-metrics exports them in kube_pod_labels.
KSM_NAME, KSM_GROUP, KSM_WORKER = (f"label_{x}" for x in (NAME_SERIES_LABEL, GROUP_SERIES_LABEL, "leaderworkerset_sigs_k8s_io_worker_index"))
RECORD_LABELS = ("namespace", "pod", NAME_SERIES_LABEL, GROUP_SERIES_LABEL)
GPU_RECORD = "namespace_pod:dcgm_fi_dev_gpu_util:avg_group"
ADAPTER_FILE = "prometheus-adapter-rules.yaml"


def _matchers(**labels: str) -> str:
    return "{" + ", ".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def gpu_rule(namespace: str, name: str) -> RecordingRule:
    """Average DCGM GPU utilisation of every GPU of a group (leader and workers), recorded onto the
    leader pod. Pods are attributed through their LWS labels in kube_pod_labels, never by parsing
    pod names (an LWS named <name>-1 has pods that look like group 1 of <name>). DCGM's own
    namespace/pod labels are used whether the exporter is scraped with honorLabels or not."""
    pods = f"kube_pod_labels{_matchers(namespace=namespace, **{KSM_NAME: name})}"
    leaders = f"kube_pod_labels{_matchers(namespace=namespace, **{KSM_NAME: name, KSM_WORKER: '0'})}"
    pod_labels = f"namespace, pod, {KSM_NAME}, {KSM_GROUP}"
    group_labels = f"namespace, {KSM_NAME}, {KSM_GROUP}"
    dcgm = ('label_replace(label_replace(DCGM_FI_DEV_GPU_UTIL, "namespace", "$1", "exported_namespace", "(.+)"), '
            '"pod", "$1", "exported_pod", "(.+)")')
    per_group = (f"avg by ({group_labels}) (\n  {dcgm}\n  * on (namespace, pod) group_left ({KSM_NAME}, {KSM_GROUP})\n"
                 f"  max by ({pod_labels}) ({pods})\n)")
    on_leader = f"max by ({pod_labels}) ({leaders})\n* on ({group_labels}) group_left ()\n{per_group}"
    renamed = (f'label_replace(label_replace(\n{on_leader},\n"{NAME_SERIES_LABEL}", "$1", "{KSM_NAME}", "(.*)"),\n'
               f'"{GROUP_SERIES_LABEL}", "$1", "{KSM_GROUP}", "(.*)")')
    return RecordingRule(GPU_RECORD, f"max by ({', '.join(RECORD_LABELS)}) (\n{renamed}\n)", autoscaling="gpu-utilization")


def _expr(rule: RecordingRule, namespace: str, name: str) -> str:
    return rule.expr.replace("{sel}", _matchers(namespace=namespace, **{NAME_SERIES_LABEL: name})).replace("{by}", ", ".join(RECORD_LABELS))


def rule_groups(caps: Capabilities, namespace: str, name: str) -> list[dict[str, Any]]:
    """PrometheusRule groups: the runtime's records (if it has metrics) and the group GPU record."""
    groups = []
    if caps.rules:
        groups.append({"name": f"lwsgen.{namespace}.{name}.runtime",
                       "rules": [{"record": r.record, "expr": _expr(r, namespace, name)} for r in caps.rules]})
    gpu = gpu_rule(namespace, name)
    groups.append({"name": f"lwsgen.{namespace}.{name}.gpu", "rules": [{"record": gpu.record, "expr": gpu.expr}]})
    return groups


def autoscaling_record(caps: Capabilities, metric: str, namespace: str, name: str) -> str:
    """The record an autoscaling.metric scales on (checks have refused metrics a runtime lacks)."""
    return next(r.record for r in (*caps.rules, gpu_rule(namespace, name)) if r.autoscaling == metric)


def adapter_metric_name(record: str) -> str:
    """The custom-metrics API name prometheus-adapter serves a record as: its metric and operations."""
    return record.split(":", 1)[1].replace(":", "_")


def podmonitor_spec(profile: dict[str, Any], caps: Capabilities) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": {LWS_NAME_LABEL: profile["name"], WORKER_INDEX_LABEL: "0"}},
        "namespaceSelector": {"matchNames": [profile["namespace"]]},
        "podMetricsEndpoints": [{"port": caps.metrics_port, "path": "/metrics", "interval": profile["monitoring"]["interval"]}],
        "podTargetLabels": [LWS_NAME_LABEL, GROUP_INDEX_LABEL],
    }


def quantity(value: float) -> str:
    """A target as a Kubernetes quantity: whole numbers as they are, fractions in milli-units."""
    exact = Decimal(str(value))
    if exact == exact.to_integral_value():
        return str(int(exact))
    return f"{int(exact * 1000)}m"


def behavior(scaling: dict[str, Any]) -> dict[str, Any]:
    """Scale down only after the stabilization window, one group at a time; scale up one group per
    scaleUpPeriodSeconds, since every new group costs a whole set of nodes and a model load."""
    return {
        "scaleDown": {"stabilizationWindowSeconds": scaling["scaleDownStabilizationSeconds"],
                      "selectPolicy": "Min", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Min",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": scaling["scaleUpPeriodSeconds"]}]},
    }


def _scale_target(profile: dict[str, Any]) -> dict[str, str]:
    """What an autoscaler scales: this LeaderWorkerSet, by kind and name (its scale subresource)."""
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": profile["name"]}


def hpa_spec(profile: dict[str, Any], record: str) -> dict[str, Any]:
    scaling = profile["autoscaling"]
    return {
        "scaleTargetRef": _scale_target(profile),
        "minReplicas": scaling["minReplicas"],
        "maxReplicas": scaling["maxReplicas"],
        "metrics": [{"type": "Pods", "pods": {"metric": {"name": adapter_metric_name(record)},
                                              "target": {"type": "AverageValue", "averageValue": quantity(scaling["target"])}}}],
        "behavior": behavior(scaling),
    }


def adapter_rules(record: str) -> dict[str, Any]:
    """prometheus-adapter `rules` exposing exactly this record, per pod, as the HPA's metric."""
    return {"rules": [{
        "seriesQuery": f'{record}{{namespace!="",pod!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": f"^{record}$", "as": adapter_metric_name(record)},
        "metricsQuery": "max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})",
    }]}


def keda_query(record: str, namespace: str, name: str) -> str:
    """The metric summed over every group of this LWS; KEDA divides by the group count (AverageValue)."""
    return f"sum({record}{_matchers(namespace=namespace, **{NAME_SERIES_LABEL: name})})"


def scaledobject_spec(profile: dict[str, Any], record: str) -> dict[str, Any]:
    scaling = profile["autoscaling"]
    return {
        "scaleTargetRef": _scale_target(profile),
        "minReplicaCount": scaling["minReplicas"],
        "maxReplicaCount": scaling["maxReplicas"],
        "pollingInterval": 30,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(scaling)}},
        "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": scaling["prometheusAddress"],
            "query": keda_query(record, profile["namespace"], profile["name"]),
            "threshold": format(Decimal(str(scaling["target"])).normalize(), "f"),
        }}],
    }
