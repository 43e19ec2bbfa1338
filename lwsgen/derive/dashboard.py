"""The profile's Grafana dashboard: a ConfigMap the Grafana sidecar loads (label grafana_dashboard "1"
by default, monitoring.dashboard), whose panels read what the PrometheusRule records, the engine's own
series where the runtime names them (runtimes/base.ServingSeries) and kube-state-metrics' series of
the groups' pods and the autoscaler, selected exactly as the records and alerts select them.

One row per workload (the LeaderWorkerSet, or each role of a DisaggregatedSet): groups ready, GPU
utilisation per group, each record the runtime titles (queue, running, KV cache, ...), request rate,
time to first token, inter-token latency and tokens per second where the engine exports them; and
the autoscaler's replicas where the profile scales. The JSON is Grafana's classic dashboard model
(schemaVersion 41), written by templates/_grafana.json.j2 and checked against Grafana's schema by the
tests (tools/grafana)."""

import hashlib

from lwsgen import runtimes
from lwsgen.derive import alerts
from lwsgen.derive.context import Context
from lwsgen.derive.model import Meta
from lwsgen.derive.monitoring import GPU_RECORD, ksm_keys, matchers
from lwsgen.records import Record
from lwsgen.runtimes.base import Capabilities

# Grafana's window for rate(): four times the data source's scrape interval (its setting, which
# should be monitoring.interval) or more
RATE = "$__rate_interval"
SCHEMA_VERSION = 41  # Grafana 12's dashboard model
WIDTH, HEIGHT, COLUMNS = 12, 8, 2  # Grafana's grid is 24 wide


class Query(Record):
    expr: str
    legend: str


class Panel(Record):
    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]


class Row(Record):
    title: str
    panels: tuple[Panel, ...]


class Dashboard(Record):
    meta: Meta
    file: str  # the ConfigMap key: the sidecar writes it as this file
    board: "Board"


def _groups_panel(scope: alerts.Scope) -> Panel:
    keys = ", ".join(ksm_keys(scope.workload))
    pods = f"kube_pod_labels{matchers(namespace=scope.namespace, **scope.workload.ksm)}"
    ready = f"kube_pod_status_ready{matchers(namespace=scope.namespace, condition='true')}"
    ready_per_group = (
        f"sum by (namespace, {keys}) ({pods} * on (namespace, pod) group_left () max by (namespace, pod) ({ready}))"
    )
    return Panel(
        "Groups ready",
        f"Groups with all {scope.size} pods ready, groups with any pod, and the groups wanted (the replicas, or "
        "the autoscaler's desired): a gap is a group forming, broken or waiting for nodes.",
        "short",
        (
            Query(f"count({ready_per_group} >= {scope.size})", "ready"),
            Query(f"count(count by (namespace, {keys}) ({pods}))", "with pods"),
            _desired(scope.ctx),
        ),
    )


def _desired(ctx: Context) -> Query:
    """The groups wanted: the autoscaler's desired replicas, or the profile's fixed replicas."""
    if ctx.profile.autoscaling.enabled:
        sel = matchers(namespace=ctx.profile.namespace, horizontalpodautoscaler=alerts.hpa_name(ctx))
        return Query(f"kube_horizontalpodautoscaler_status_desired_replicas{sel}", "desired")
    return Query(f"vector({ctx.profile.replicas})", "desired")


def _gpu_panel(sel: str) -> Panel:
    return Panel(
        "GPU utilisation per group",
        f"DCGM's GPU utilisation averaged over every GPU of a group, on its leader pod (the record {GPU_RECORD}).",
        "percent",
        (Query(f"{GPU_RECORD}{sel}", "{{pod}}"),),
    )


def _record_panels(caps: Capabilities, sel: str) -> list[Panel]:
    return [
        Panel(
            rule.title,
            f"The record {rule.record}, one series per group.",
            rule.unit,
            (Query(f"{rule.record}{sel}", "{{pod}}"),),
        )
        for rule in caps.rules
        if rule.title
    ]


def _quantiles(histogram: str, sel: str) -> tuple[Query, ...]:
    return tuple(
        Query(f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{sel}[{RATE}])))", f"p{round(q * 100)}")
        for q in (0.5, 0.95)
    )


def _engine_panels(caps: Capabilities, sel: str) -> list[Panel]:
    series, out = caps.serving_series, []
    if series.requests:
        rate = Query(f"sum(rate({series.requests}{sel}[{RATE}]))", "requests/s")
        out.append(Panel("Request rate", f"Requests finished per second ({series.requests}).", "reqps", (rate,)))
    if series.time_to_first_token:
        queries = _quantiles(series.time_to_first_token, sel)
        out.append(Panel("Time to first token", f"{series.time_to_first_token}, all groups.", "s", queries))
    if series.inter_token_latency:
        queries = _quantiles(series.inter_token_latency, sel)
        out.append(Panel("Inter-token latency", f"{series.inter_token_latency}, all groups.", "s", queries))
    if series.generated_tokens:
        rate = Query(f"sum(rate({series.generated_tokens}{sel}[{RATE}]))", "tokens/s")
        out.append(
            Panel("Tokens generated", f"Output tokens per second ({series.generated_tokens}).", "short", (rate,))
        )
    return out


def _autoscaler_panel(ctx: Context) -> Panel | None:
    """The workload's autoscaler (a role's own, in a DisaggregatedSet), from kube-state-metrics."""
    if not ctx.profile.autoscaling.enabled:
        return None
    sel = matchers(namespace=ctx.profile.namespace, horizontalpodautoscaler=alerts.hpa_name(ctx))
    queries = tuple(
        Query(f"kube_horizontalpodautoscaler_{series}{sel}", legend)
        for series, legend in (
            ("status_current_replicas", "current"),
            ("status_desired_replicas", "desired"),
            ("spec_max_replicas", "maximum"),
        )
    )
    return Panel(
        "Autoscaler replicas", f"Groups the autoscaler {alerts.hpa_name(ctx)} runs and wants.", "short", queries
    )


def rows(ctx: Context) -> tuple[Row, ...]:
    out = []
    for scope, caps in alerts.scopes(ctx):
        sel = matchers(namespace=scope.namespace, **scope.workload.series)
        panels = [_groups_panel(scope), _gpu_panel(sel)]
        if caps.metrics:
            label = caps.serving_series.model_label  # an engine of many models: the served one's
            served = {label: runtimes.served_name(scope.ctx.profile)} if label else {}
            engine_sel = matchers(namespace=scope.namespace, **scope.workload.series, **served)
            panels += _record_panels(caps, sel) + _engine_panels(caps, engine_sel)
        panels += [p for p in (_autoscaler_panel(scope.ctx),) if p is not None]
        out.append(Row(scope.what[:1].upper() + scope.what[1:], tuple(panels)))
    return tuple(out)


class Target(Record):
    ref_id: str
    expr: str
    legend: str


class RowPlace(Record):
    id: int
    title: str
    y: int


class PanelPlace(Record):
    id: int
    title: str
    description: str
    unit: str
    x: int
    y: int
    w: int
    h: int
    targets: tuple[Target, ...]


class Item(Record):
    """One entry of Grafana's flat panel list: a row or a panel."""

    row: RowPlace | None = None
    panel: PanelPlace | None = None


class Board(Record):
    uid: str
    title: str
    description: str
    tags: tuple[str, ...]
    schema_version: int
    items: tuple[Item, ...]


def _place(panel: Panel, ident: int, x: int, y: int) -> PanelPlace:
    targets = tuple(Target(chr(ord("A") + i), q.expr, q.legend) for i, q in enumerate(panel.queries))
    return PanelPlace(ident, panel.title, panel.description, panel.unit, x, y, WIDTH, HEIGHT, targets)


def _items(grouped: tuple[Row, ...]) -> tuple[Item, ...]:
    """Rows and their panels on Grafana's grid, two panels a line, ids in order."""
    out, y, ident = [], 0, 0
    for row in grouped:
        ident += 1
        out.append(Item(row=RowPlace(ident, row.title, y)))
        y += 1
        for index, panel in enumerate(row.panels):
            ident += 1
            out.append(Item(panel=_place(panel, ident, (index % COLUMNS) * WIDTH, y + (index // COLUMNS) * HEIGHT)))
        y += -(-len(row.panels) // COLUMNS) * HEIGHT
    return tuple(out)


def _uid(namespace: str, name: str) -> str:
    """Stable per profile and at most Grafana's 40 characters."""
    return "lwsgen-" + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:16]


def board(ctx: Context) -> Board:
    profile = ctx.profile
    return Board(
        _uid(profile.namespace, profile.name),
        f"{profile.name} ({profile.namespace})",
        f"lwsgen: the groups of {profile.name}, {profile.runtime} on {profile.platform}.",
        ("lwsgen", profile.runtime),
        SCHEMA_VERSION,
        _items(rows(ctx)),
    )


def grafana_dashboard(ctx: Context, kind) -> Dashboard | None:
    profile, settings = ctx.profile, ctx.profile.monitoring.dashboard
    if not (profile.monitoring.enabled and settings.enabled):
        return None
    meta = ctx.meta(
        kind, f"{profile.name}-dashboard", labels=dict(settings.labels), annotations=dict(settings.annotations)
    )
    # the sidecar writes every dashboard ConfigMap's keys as files into one folder: a key named by the
    # namespace too, so two namespaces' profiles of one name do not overwrite each other
    return Dashboard(meta, f"{profile.namespace}-{profile.name}.json", board(ctx))
