"""Monitoring and autoscaling: the PodMonitor, the recording rules, an HPA with its
prometheus-adapter rules, or a KEDA ScaledObject. Everything here is values for the templates.

Every record is one value per leader pod, labelled namespace, pod and the LWS name and group
index, so an HPA (which sees leader pods only) can read it through prometheus-adapter.
"""

import json
from decimal import Decimal
from typing import Any

from lwsgen import naming, platforms, runtimes
from lwsgen.derive.context import Context, Workload, single
from lwsgen.derive.model import Meta
from lwsgen.profile import Profile, thaw
from lwsgen.records import Record
from lwsgen.runtimes.base import Capabilities, RecordingRule

# Pod labels copied onto scraped series by podTargetLabels, as Prometheus names them.
NAME_SERIES_LABEL = "leaderworkerset_sigs_k8s_io_name"
GROUP_SERIES_LABEL = "leaderworkerset_sigs_k8s_io_group_index"
# The same pod labels as kube-state-metrics exports them in kube_pod_labels.
KSM_NAME, KSM_GROUP, KSM_WORKER = (
    f"label_{x}" for x in (NAME_SERIES_LABEL, GROUP_SERIES_LABEL, "leaderworkerset_sigs_k8s_io_worker_index")
)
GPU_RECORD = "namespace_pod:dcgm_fi_dev_gpu_util:avg_group"
ADAPTER_FILE = "prometheus-adapter-rules.yaml"


def promql_string(value: str) -> str:
    """A PromQL string literal (Go's escapes) of any value, quotes and backslashes too: JSON's, with
    characters beyond U+FFFF as they are (JSON's surrogate-pair escapes are no PromQL escape)."""
    return json.dumps(value, ensure_ascii=False)


def matchers(**labels: str) -> str:
    return "{" + ", ".join(f"{key}={promql_string(value)}" for key, value in labels.items()) + "}"


def leader_pods(namespace: str, workload: Workload) -> str:
    """kube_pod_labels of the workload's leader pods (kube-state-metrics' names for their labels)."""
    leader = {f"label_{naming.series_label(k)}": v for k, v in workload.leader_only} or {KSM_WORKER: "0"}
    return f"kube_pod_labels{matchers(namespace=namespace, **workload.ksm, **leader)}"


def ksm_keys(workload: Workload) -> tuple[str, ...]:
    """The kube_pod_labels labels a record keeps: the LWS name and group, and the set's where it has one."""
    if workload.group_keys:  # one group: the labels that name it
        return tuple(workload.ksm)
    return (KSM_NAME, KSM_GROUP, *(k for k in workload.ksm if k != KSM_NAME))


def record_labels(workload: Workload) -> tuple[str, ...]:
    return ("namespace", "pod", *(key.removeprefix("label_") for key in ksm_keys(workload)))


def _lws_labels(expr: str, workload: Workload) -> str:
    """expr with kube-state-metrics' label_ names of the pod labels as the records carry them."""
    keys = ksm_keys(workload)
    renames = [f'"{key.removeprefix("label_")}", "$1", "{key}", "(.*)"' for key in keys]
    return "label_replace(" * len(keys) + f"\n{expr},\n" + "),\n".join(renames) + ")"


def gpu_rule(namespace: str, workload: Workload) -> RecordingRule:
    """Average DCGM GPU utilisation of every GPU of a group (leader and workers), recorded onto the
    leader pod. Pods are attributed through their LWS labels in kube_pod_labels, never by parsing
    pod names (an LWS named <name>-1 has pods that look like group 1 of <name>). DCGM's own
    namespace/pod labels are used whether the exporter is scraped with honorLabels or not."""
    pods = f"kube_pod_labels{matchers(namespace=namespace, **workload.ksm)}"
    leaders = leader_pods(namespace, workload)
    kept = ", ".join(ksm_keys(workload))
    pod_labels, group_labels = f"namespace, pod, {kept}", f"namespace, {kept}"
    dcgm = (
        'label_replace(label_replace(DCGM_FI_DEV_GPU_UTIL, "namespace", "$1", "exported_namespace", "(.+)"), '
        '"pod", "$1", "exported_pod", "(.+)")'
    )
    per_group = (
        f"avg by ({group_labels}) (\n  {dcgm}\n  * on (namespace, pod) group_left ({kept})\n"
        f"  max by ({pod_labels}) ({pods})\n)"
    )
    on_leader = f"max by ({pod_labels}) ({leaders})\n* on ({group_labels}) group_left ()\n{per_group}"
    renamed = _lws_labels(on_leader, workload)
    by = ", ".join(record_labels(workload))
    return RecordingRule(GPU_RECORD, f"max by ({by}) (\n{renamed}\n)", autoscaling="gpu-utilization")


# The endpoint picker's pool gauges (llm-d-router pkg/epp/metrics/llm_d_router_metrics.go@v0.10.0,
# labelled name = the InferencePool), by the autoscaling.metric each serves.
ROUTER_GAUGES = {
    "router-queue-size": "llm_d_epp_average_queue_size",
    "router-kv-cache-usage": "llm_d_epp_average_kv_cache_utilization",
}


def router_rule(namespace: str, name: str, metric: str) -> RecordingRule:
    """The pool's average over its pods (one per group: the leaders it selects), recorded onto every
    leader pod of this LWS, so an HPA over the leaders (or KEDA's sum over groups divided by their
    count) reads the pool's average. Leaders come from kube_pod_labels, as in gpu_rule."""
    gauge = ROUTER_GAUGES[metric]
    renamed = _lws_labels(leader_pods(namespace, single(name)), single(name))
    pool = f"max by (namespace) ({gauge}{matchers(namespace=namespace, name=name)})"
    expr = f"max by ({', '.join(record_labels(single(name)))}) (\n{renamed}\n* on (namespace) group_left ()\n{pool}\n)"
    return RecordingRule(f"namespace_pod:{gauge}:pool", expr, autoscaling=metric)


def router_rules(namespace: str, name: str) -> tuple[RecordingRule, ...]:
    return tuple(router_rule(namespace, name, metric) for metric in ROUTER_GAUGES)


def _expr(rule: RecordingRule, namespace: str, workload: Workload, model: str) -> str:
    series = workload.series
    if workload.group_keys:  # no LeaderWorkerSet names the leader pod: a record keeps the pod that reports
        on_leader = ("", "")
    elif workload.set_name is None:  # the leader pod's name: <lws>-<group index>, the LWS name known here
        on_leader = ("label_replace(", f', "pod", "{series[NAME_SERIES_LABEL]}-$1", "{GROUP_SERIES_LABEL}", "(.+)")')
    else:  # a role's LWS name carries the controller's revision hash: joined from the pod's own labels
        on_leader = ("label_join(", f', "pod", "-", "{NAME_SERIES_LABEL}", "{GROUP_SERIES_LABEL}")')
    return (
        rule.expr.replace("{sel_model}", matchers(namespace=namespace, **series, model=model))
        .replace("{sel_composing}", matchers(namespace=namespace, **series)[:-1] + f", model!={promql_string(model)}}}")
        .replace("{sel}", matchers(namespace=namespace, **series))
        .replace("{by}", ", ".join(record_labels(workload)))
        .replace("{leader_pod[}", on_leader[0])
        .replace("{]leader_pod}", on_leader[1])
    )


class RuleGroup(Record):
    name: str
    rules: tuple[RecordingRule, ...]  # with their expressions for this LeaderWorkerSet


def rule_groups(
    caps: Capabilities,
    namespace: str,
    name: str,
    model: str,
    router: bool = False,
    workload: Workload | None = None,
    prefix: str = "",
) -> tuple[RuleGroup, ...]:
    """PrometheusRule groups: the runtime's records (if it has metrics), the group GPU record, and
    the endpoint picker's pool records where a gateway fronts the groups (`router`); `model` is the
    served model, for records of engines that report every model of a repository."""
    groups, workload = [], workload or single(name)
    # a role's records carry its role as a static label too, so promtool tells two roles' rules apart
    role_label = None if workload.role is None else {naming.series_label(workload.role_label): workload.role}
    if caps.rules:
        groups.append(
            RuleGroup(
                f"lwsgen.{namespace}.{name}.{prefix}runtime",
                tuple(r._replace(expr=_expr(r, namespace, workload, model), labels=role_label) for r in caps.rules),
            )
        )
    groups.append(
        RuleGroup(
            f"lwsgen.{namespace}.{name}.{prefix}gpu", (gpu_rule(namespace, workload)._replace(labels=role_label),)
        )
    )
    if router:
        groups.append(RuleGroup(f"lwsgen.{namespace}.{name}.router", router_rules(namespace, name)))
    return tuple(groups)


def autoscaling_record(caps: Capabilities, metric: str, namespace: str, name: str) -> str:
    """The record an autoscaling.metric scales on (checks have refused metrics a runtime lacks)."""
    every = (*caps.rules, gpu_rule(namespace, single(name)), *router_rules(namespace, name))
    return next(r.record for r in every if r.autoscaling == metric)


def adapter_metric_name(record: str) -> str:
    """The custom-metrics API name prometheus-adapter serves a record as: its metric and operations."""
    return record.split(":", 1)[1].replace(":", "_")


class PodMonitor(Record):
    meta: Meta
    selector: dict[str, str]
    port: str
    path: str
    interval: str
    target_labels: tuple[str, ...]
    bearer: object | None = None  # the API key Secret (lwsgen.profile.TokenSecret), when /metrics needs it


class PrometheusRule(Record):
    meta: Meta
    groups: tuple[RuleGroup, ...]
    alert_groups: tuple = ()  # derive/alerts.py AlertGroup


class Behavior(Record):
    """Scale down only after the stabilization window, one group at a time; scale up one group per
    scaleUpPeriodSeconds, since every new group costs a whole set of nodes and a model load. A
    direction autoscaling.behavior gives is the profile's rules, as written (HPAScalingRules)."""

    scale_down_window: int | None  # None: the profile's scale_down instead
    scale_up_period: int | None
    scale_down: dict[str, Any] | None = None
    scale_up: dict[str, Any] | None = None


def behavior(scaling) -> Behavior:
    down, up = thaw(scaling.behavior.get("scaleDown")), thaw(scaling.behavior.get("scaleUp"))
    return Behavior(
        scaling.scale_down_stabilization_seconds if down is None else None,
        scaling.scale_up_period_seconds if up is None else None,
        down,
        up,
    )


class Wake(Record):
    """KEDA's second trigger of a scale-to-zero LWS, `active`: every request of the pool, held,
    waiting or running. KEDA goes from zero to one group once a trigger passes its activation and
    from one to zero only when every trigger is inactive for cooldownPeriod; the metric's own
    trigger counts waiting requests only, which a group serving without a queue does not have.
    Its threshold is out of reach, so it never asks for more groups than the metric does."""

    query: str
    threshold: str = "1000000"


class Autoscaler(Record):
    """A HorizontalPodAutoscaler (metric, average) or a KEDA ScaledObject (server, query, threshold)."""

    meta: Meta
    target: tuple[str, str, str]  # apiVersion, kind, name: the LWS or a role's scaler, through its scale subresource
    min: int
    max: int
    behavior: Behavior
    metric: str | None = None
    average: str | None = None
    polling_interval: int | None = None
    server: str | None = None
    query: str | None = None
    threshold: str | None = None
    cooldown: int | None = None  # KEDA cooldownPeriod: idle seconds before the last group goes
    idle: int | None = None  # KEDA idleReplicaCount
    activation: str | None = None  # KEDA activationThreshold of the metric's trigger
    wake: Wake | None = None


class AdapterRules(Record):
    rules: tuple["AdapterRule", ...]


class AdapterRule(Record):
    """prometheus-adapter `rules` exposing exactly one record, per pod, as the HPA's metric."""

    series_query: str
    matches: str
    metric: str


def _monitored(ctx: Context) -> bool:
    return ctx.profile.monitoring.enabled


def podmonitor(ctx: Context, kind) -> PodMonitor | None:
    caps, profile = ctx.caps, ctx.profile
    if not (_monitored(ctx) and caps.metrics):
        return None
    return PodMonitor(
        ctx.meta(kind, profile.name, labels=profile.monitoring.prometheus_labels),
        ctx.workload.pods if caps.metrics_on_every_pod else ctx.workload.leaders,
        caps.metrics_port,
        caps.metrics_path,
        profile.monitoring.interval,
        ctx.workload.target_labels,
        profile.service.api_key_secret if caps.metrics_need_api_key else None,
    )


def prometheusrule(ctx: Context, kind) -> PrometheusRule | None:
    profile = ctx.profile
    if not _monitored(ctx):
        return None
    if ctx.roles is not None:  # one PrometheusRule of the set: each role's groups, <role>_runtime and <role>_gpu
        groups = tuple(
            group
            for role, c in ctx.roles.items()
            for group in rule_groups(
                c.caps, profile.namespace, profile.name, runtimes.served_name(c.profile), False, c.workload, f"{role}_"
            )
        )
        return PrometheusRule(ctx.meta(kind, profile.name, labels=profile.monitoring.prometheus_labels), groups)
    return PrometheusRule(
        ctx.meta(kind, profile.name, labels=profile.monitoring.prometheus_labels),
        rule_groups(
            ctx.caps,
            profile.namespace,
            profile.name,
            runtimes.served_name(profile),
            # a pool of both roles: no role's average; KServe's picker and pool are its own, not scraped here
            profile.gateway.enabled and ctx.workload.set_name is None and profile.platform == platforms.LWS,
            ctx.workload,
        ),
    )


def quantity(value: float) -> str:
    """A target as a Kubernetes quantity: whole numbers as they are, fractions in milli-units."""
    exact = Decimal(str(value))
    if exact == exact.to_integral_value():
        return str(int(exact))
    return f"{int(exact * 1000)}m"


def _scaling_record(ctx: Context, engine: str) -> str | None:
    scaling = ctx.profile.autoscaling
    if not scaling.enabled or scaling.engine != engine:
        return None
    return autoscaling_record(ctx.caps, scaling.metric, ctx.profile.namespace, ctx.profile.name)


def _autoscaler(ctx: Context, kind, **fields) -> Autoscaler:
    profile, scaling = ctx.profile, ctx.profile.autoscaling
    return Autoscaler(
        ctx.meta(kind, profile.name),
        ctx.workload.scale_target,
        scaling.min_replicas,
        scaling.max_replicas,
        behavior(scaling),
        **fields,
    )


def horizontalpodautoscaler(ctx: Context, kind) -> Autoscaler | None:
    record = _scaling_record(ctx, "hpa")
    if record is None:
        return None
    return _autoscaler(ctx, kind, metric=adapter_metric_name(record), average=quantity(ctx.profile.autoscaling.target))


def adapter_rules(ctx: Context, kind) -> AdapterRules | None:
    """The rules exposing what the HPA (or each role's HPA) scales on, each record once."""
    rules = []
    for c in (ctx.roles or {"": ctx}).values():
        record = _scaling_record(c, "hpa")
        rule = (
            None
            if record is None
            else AdapterRule(f'{record}{{namespace!="",pod!=""}}', f"^{record}$", adapter_metric_name(record))
        )
        if rule is not None and rule not in rules:
            rules.append(rule)
    return AdapterRules(tuple(rules)) if rules else None


def keda_query(record: str, namespace: str, name: str, workload: Workload | None = None) -> str:
    """The metric summed over every group of this LWS (or role); KEDA divides by the group count (AverageValue)."""
    return f"sum({record}{matchers(namespace=namespace, **(workload or single(name)).series)})"


def scaledobject(ctx: Context, kind) -> Autoscaler | None:
    record = _scaling_record(ctx, "keda")
    if record is None:
        return None
    profile: Profile = ctx.profile
    scaling = profile.autoscaling
    return _autoscaler(
        ctx,
        kind,
        polling_interval=30,
        server=scaling.prometheus_address,
        query=keda_query(record, profile.namespace, profile.name, ctx.workload),
        threshold=_number(scaling.target),
        idle=scaling.idle_replicas,
        activation=None if scaling.activation_target is None else _number(scaling.activation_target),
        wake=_wake(profile) if scaling.to_zero else None,
        cooldown=scaling.scale_down_stabilization_seconds if scaling.to_zero else None,
    )


def _number(value: float) -> str:
    return format(Decimal(str(value)).normalize(), "f")


WAKE_GAUGE = "llm_d_epp_flow_control_queue_size"


# The picker's pool averages over its endpoints (label name = the pool) and its flow-control queue
# (label inference_pool = the pool): llm-d-router v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go;
# the pool is the picker's --pool-name (pkg/epp/flowcontrol/controller/controller.go).
POOL_AVERAGES = ("llm_d_epp_average_queue_size", "llm_d_epp_average_running_requests")


def _wake(profile: Profile) -> Wake:
    """Held + waiting + running requests of the pool (each absent series counts 0: no endpoints)."""
    namespace, name = profile.namespace, profile.name
    held = f"(sum({WAKE_GAUGE}{matchers(namespace=namespace, inference_pool=name)}) or vector(0))"
    pool = [f"(max({gauge}{matchers(namespace=namespace, name=name)}) or vector(0))" for gauge in POOL_AVERAGES]
    return Wake(" + ".join((held, *pool)))
