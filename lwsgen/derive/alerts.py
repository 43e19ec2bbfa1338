"""The alerts of a profile's PrometheusRule: what tells the on-call engineer a group is half formed,
out of capacity or failing to start, each with a severity, a summary, a description and a runbook
(docs/runbooks.md), its thresholds from the profile (the start budget, monitoring.alerts).

They read what lwsgen records (derive/monitoring.py) and what kube-state-metrics exports (the pods'
labels with --metric-labels-allowlist, as the group GPU record does; pod readiness; Jobs; HPAs), so a
group is found by the labels of its pods whatever the platform makes them."""

from lwsgen.check import budget
from lwsgen.derive import monitoring, nccl
from lwsgen.derive.context import Context, Workload
from lwsgen.derive.delivery import job_name
from lwsgen.derive.monitoring import GPU_RECORD, KSM_WORKER, ksm_keys, matchers
from lwsgen.naming import series_label
from lwsgen.records import Record
from lwsgen.runtimes.base import Capabilities


class Alert(Record):
    alert: str
    expr: str
    hold: str  # Prometheus `for`
    severity: str
    summary: str
    description: str
    runbook: str
    role: str | None = None  # a role's alerts carry their role as a label


class AlertGroup(Record):
    name: str
    alerts: tuple[Alert, ...]


def _seconds(seconds: int) -> str:
    return f"{seconds}s"


def _record(caps: Capabilities, purpose: str) -> str | None:
    """The runtime's record for one purpose (its autoscaling tag: queue-length, kv-cache-usage)."""
    return next((r.record for r in caps.rules if r.autoscaling == purpose), None)


class Scope(Record):
    """One workload's alerts: its pods' series and labels, its group size and start budget."""

    namespace: str
    workload: Workload
    size: int
    start_seconds: int
    what: str  # for people: "LeaderWorkerSet x", "role prefill of DisaggregatedSet x"
    role: str | None
    ctx: Context  # the workload's own (a role's, in a set)


def _group_not_whole(scope: Scope, runbook) -> Alert:
    keys = ", ".join(ksm_keys(scope.workload))
    pods = f"kube_pod_labels{matchers(namespace=scope.namespace, **scope.workload.ksm)}"
    ready = f"kube_pod_status_ready{matchers(namespace=scope.namespace, condition='true')}"
    expr = (
        f"sum by (namespace, {keys}) (\n  {pods}\n  * on (namespace, pod) group_left ()\n"
        f"  max by (namespace, pod) ({ready})\n) < {scope.size}"
    )
    group = "/".join(f"{{{{ $labels.{key} }}}}" for key in ksm_keys(scope.workload))
    return Alert(
        "LwsgenGroupNotWhole",
        expr,
        _seconds(scope.start_seconds),
        "critical",
        f"A group of {scope.what} is not whole",
        f"Group {group} of {scope.what} has had only {{{{ $value }}}} of its {scope.size} pods ready for longer "
        f"than its start budget ({scope.start_seconds} s): it serves nothing, or with fewer GPUs than it needs.",
        runbook("LwsgenGroupNotWhole"),
        scope.role,
    )


def _scrape_down(scope: Scope, runbook) -> Alert:
    up = f"up{matchers(namespace=scope.namespace, **scope.workload.series)}"
    return Alert(
        "LwsgenMetricsDown",
        f"{up} == 0",
        "10m",
        "critical",
        f"Prometheus cannot scrape a pod of {scope.what}",
        f"Pod {{{{ $labels.pod }}}} of {scope.what} answers no scrape: the engine is down or hung, and every "
        "record, alert and autoscaler reading its metrics is blind to it.",
        runbook("LwsgenMetricsDown"),
        scope.role,
    )


def _not_scraped(scope: Scope, runbook) -> Alert:
    """Running leader pods and no scrape target for any pod of the workload: Prometheus does not use
    the PodMonitor (its namespace or label selector for monitors, not for rules), may not list the
    namespace's pods, or the PodMonitor selects none. Pending pods have no address, so Prometheus
    makes no target for them (discovery/kubernetes/pod.go): only Running leaders count."""
    leaders = monitoring.leader_pods(scope.namespace, scope.workload)
    running = f"kube_pod_status_phase{matchers(namespace=scope.namespace, phase='Running')} == 1"
    up = f"up{matchers(namespace=scope.namespace, **scope.workload.series)}"
    running_leaders = f"{leaders}\n  * on (namespace, pod) group_left ()\n  ({running})"
    return Alert(
        "LwsgenLeadersNotScraped",
        f"count by (namespace) (\n  {running_leaders}\n)\nunless on (namespace)\ncount by (namespace) ({up})",
        "10m",
        "critical",
        f"Prometheus scrapes no pod of {scope.what}",
        f"{scope.what} has running leader pods but Prometheus has no scrape target among its pods: its PodMonitor "
        "is not used or selects nothing, so every record, alert, dashboard panel and autoscaler reading them is blind.",
        runbook("LwsgenLeadersNotScraped"),
        scope.role,
    )


RESTARTS = 3  # recreations (or engine restarts) within the hour that make a group "restarting"


def _restarting(scope: Scope, runbook) -> Alert:
    """A LeaderWorkerSet recreates a failed group's pods under the same names: each recreation is a new
    pod uid (kube_pod_created per uid). KServe's Deployments restart the engine container instead."""
    ns = scope.namespace
    if scope.workload.group_keys:  # an InferenceService's head: container restarts
        leaders = matchers(namespace=ns, **{f"label_{series_label(k)}": v for k, v in scope.workload.leaders.items()})
        counted = f"increase(kube_pod_container_status_restarts_total{matchers(namespace=ns)}[1h])"
    else:
        leader = {KSM_WORKER: "0"}
        leaders = matchers(namespace=ns, **scope.workload.ksm, **leader)
        counted = f"count by (namespace, pod) (max_over_time(kube_pod_created{matchers(namespace=ns)}[1h]))"
    expr = (
        f"max by (namespace, pod) ({counted})\n* on (namespace, pod) group_left ()\n"
        f"max by (namespace, pod) (kube_pod_labels{leaders})\n>= {RESTARTS}"
    )
    return Alert(
        "LwsgenGroupRestarting",
        expr,
        "0s",
        "warning",
        f"A group of {scope.what} keeps restarting",
        f"The group of leader {{{{ $labels.pod }}}} of {scope.what} has started at least {RESTARTS} times in the "
        "last hour: something kills it after it forms (a lost worker, the engine failing, a probe).",
        runbook("LwsgenGroupRestarting"),
        scope.role,
    )


def _nccl_failed(scope: Scope, runbook) -> Alert | None:
    test = nccl.nccl_test(scope.ctx, None)
    if test is None:
        return None
    job = test.meta.name + ("-launcher" if test.mpijob is not None else "")  # the MPI operator's launcher Job
    return Alert(
        "LwsgenNcclPreflightFailed",
        f"kube_job_status_failed{matchers(namespace=scope.namespace, job_name=job)} > 0",
        "0s",
        "warning",
        f"The NCCL preflight of {scope.what} failed",
        f"Job {job}, the all-reduce preflight on the shape of a group of {scope.what}, failed: the nodes or their "
        "network do not carry a group's traffic; its verdict is in its logs (nccl-test.yaml's header).",
        runbook("LwsgenNcclPreflightFailed"),
        scope.role,
    )


def _capacity(scope: Scope, caps: Capabilities, settings, runbook) -> tuple[Alert, ...]:
    sel = matchers(namespace=scope.namespace, **scope.workload.series)
    out = []
    kv = _record(caps, "kv-cache-usage")
    if kv is not None:
        out.append(
            Alert(
                "LwsgenKVCacheNearFull",
                f"{kv}{sel} > {settings.kv_cache_usage}",
                settings.hold_for,
                "warning",
                f"The KV cache of a group of {scope.what} is near full",
                f"Group leader {{{{ $labels.pod }}}} has used more than {settings.kv_cache_usage:.0%} of its KV "
                f"cache for {settings.hold_for}: new requests wait or running ones are preempted.",
                runbook("LwsgenKVCacheNearFull"),
                scope.role,
            )
        )
    queue = _record(caps, "queue-length")
    if queue is not None:
        expr = f"({queue}{sel} > 0)\nand on (namespace, pod)\n({GPU_RECORD}{sel} > {settings.gpu_busy_percent})"
        out.append(
            Alert(
                "LwsgenQueueWhileGPUsBusy",
                expr,
                settings.hold_for,
                "warning",
                f"A group of {scope.what} is out of capacity",
                f"Requests have waited at group leader {{{{ $labels.pod }}}} for {settings.hold_for} while its GPUs "
                f"were more than {settings.gpu_busy_percent}% busy: add groups.",
                runbook("LwsgenQueueWhileGPUsBusy"),
                scope.role,
            )
        )
    return tuple(out)


def hpa_name(ctx: Context) -> str:
    """The HorizontalPodAutoscaler that scales the profile: its own, or the one KEDA makes for it."""
    name = ctx.profile.name
    return name if ctx.profile.autoscaling.engine == "hpa" else f"keda-hpa-{name}"  # KEDA names its HPA so


def _preempting(scope: Scope, caps: Capabilities, settings, runbook) -> Alert | None:
    """Where the engine counts the requests it evicts from a full KV cache (vLLM's preemptions,
    SGLang's retractions): evictions that go on are lost work the KV-cache alert only predicts."""
    counter = caps.serving_series.preemptions
    if not counter:
        return None
    sel = matchers(namespace=scope.namespace, **scope.workload.series)
    by = ", ".join(monitoring.record_labels(scope.workload))  # the pod and its group, as the records keep them
    return Alert(
        "LwsgenRequestsPreempted",
        f"sum by ({by}) (rate({counter}{sel}[5m])) > 0",
        settings.hold_for,
        "warning",
        f"A group of {scope.what} keeps evicting requests from its KV cache",
        f"Pod {{{{ $labels.pod }}}} has evicted running requests from its full KV cache ({counter}) for "
        f"{settings.hold_for}: each is recomputed later, so latency and GPU time grow while throughput does not.",
        runbook("LwsgenRequestsPreempted"),
        scope.role,
    )


def _autoscaler_at_max(scope: Scope, settings, runbook) -> Alert | None:
    """The autoscaler of the workload (a role's own, in a DisaggregatedSet) at its maximum."""
    profile, scaling = scope.ctx.profile, scope.ctx.profile.autoscaling
    if not scaling.enabled:
        return None
    name = hpa_name(scope.ctx)
    sel = matchers(namespace=profile.namespace, horizontalpodautoscaler=name)
    # kube-state-metrics v2.20.0 internal/store/horizontalpodautoscaler.go: the target and the current
    # value of each metric, labelled metric_name and metric_target_type (lines 53, 194, 255)
    same_metric = "on (namespace, horizontalpodautoscaler, metric_name, metric_target_type)"
    same_hpa = "on (namespace, horizontalpodautoscaler)"
    expr = (
        f"(\n  kube_horizontalpodautoscaler_status_current_replicas{sel}\n  >= {same_hpa}\n"
        f"  kube_horizontalpodautoscaler_spec_max_replicas{sel}\n)\nand {same_hpa}\n"
        f"(\n  kube_horizontalpodautoscaler_status_target_metric{sel}\n  > {same_metric}\n"
        f"  kube_horizontalpodautoscaler_spec_target_metric{sel}\n)"
    )
    return Alert(
        "LwsgenAutoscalerAtMax",
        expr,
        settings.hold_for,
        "warning",
        f"The autoscaler of {scope.what} is at its maximum",
        f"{name} has run {scaling.max_replicas} groups (autoscaling.maxReplicas) for {settings.hold_for} with its "
        "metric still above its target: requests queue; raise maxReplicas if the cluster has the nodes.",
        runbook("LwsgenAutoscalerAtMax"),
        scope.role,
    )


def _download_failed(ctx: Context, runbook) -> Alert | None:
    if ctx.profile.model.source is None:
        return None
    job = job_name(ctx)
    return Alert(
        "LwsgenModelDownloadFailed",
        f"kube_job_status_failed{matchers(namespace=ctx.profile.namespace, job_name=job)} > 0",
        "0s",
        "critical",
        f"The model download of {ctx.profile.name} failed",
        f"Job {job} failed: the claim has no complete snapshot, and every group of {ctx.profile.name} waits "
        "for it until its start budget runs out.",
        runbook("LwsgenModelDownloadFailed"),
    )


def scopes(ctx: Context) -> list[tuple[Scope, Capabilities]]:
    namespace = ctx.profile.namespace
    if ctx.roles is None:
        scope = Scope(
            namespace,
            ctx.workload,
            ctx.profile.group_size,
            budget.budget(ctx.profile).total,
            f"{ctx.workload.scale_target[1]} {ctx.workload.scale_target[2]}",
            None,
            ctx,
        )
        return [(scope, ctx.caps)]
    out = []
    for role, c in ctx.roles.items():
        what = f"role {role} of {ctx.workload.scale_target[1]} {ctx.profile.name}"
        scope = Scope(namespace, c.workload, c.profile.group_size, budget.budget(c.profile).total, what, role, c)
        out.append((scope, c.caps))
    return out


def alert_groups(ctx: Context) -> tuple[AlertGroup, ...]:
    """The profile's alert group (none when monitoring.alerts.enabled is false)."""
    settings = ctx.profile.monitoring.alerts
    if not settings.enabled:
        return ()

    def runbook(alert: str) -> str:
        return f"{settings.runbook_url}#{alert.lower()}"

    alerts: list[Alert] = []
    for scope, caps in scopes(ctx):
        alerts.append(_group_not_whole(scope, runbook))
        alerts.append(_restarting(scope, runbook))
        if caps.metrics:
            alerts += [_scrape_down(scope, runbook), _not_scraped(scope, runbook)]
        alerts += _capacity(scope, caps, settings, runbook)
        alerts += [a for a in (_preempting(scope, caps, settings, runbook),) if a is not None]
        alerts += [a for a in (_nccl_failed(scope, runbook), _autoscaler_at_max(scope, settings, runbook)) if a]
    alerts += [a for a in (_download_failed(ctx, runbook),) if a is not None]
    return (AlertGroup(f"lwsgen.{ctx.profile.namespace}.{ctx.profile.name}.alerts", tuple(alerts)),)


def prometheusrule(ctx: Context, kind):
    """The PrometheusRule of derive/monitoring.py with the profile's alerts beside its records."""
    rule = monitoring.prometheusrule(ctx, kind)
    return None if rule is None else rule._replace(alert_groups=alert_groups(ctx))
