"""Rules that span objects: what one object says about another must hold in the set (a Service
and a PodMonitor select leaders of a LeaderWorkerSet that exists, their ports exist on the leader,
an autoscaler targets an LWS that exists, every container requests what it limits)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lwsgen import quantity, registry
from lwsgen.naming import LWS_NAME_LABEL, WORKER_INDEX_LABEL
from lwsgen.output import invariants, routing
from lwsgen.output import sets as ds_rules
from lwsgen.output.inventory import Inventory, inventory
from lwsgen.output.routing import monitor_namespace
from lwsgen.problems import Finding
from lwsgen.registry import SET


def _leader_template(lws: dict[str, Any]) -> dict[str, Any]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return lwt.get("leaderTemplate") or lwt["workerTemplate"]


def _containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    spec = template.get("spec", {})
    return list(spec.get("initContainers", [])) + list(spec.get("containers", []))


def _unequal_resources(resources: dict[str, Any]) -> list[str]:
    """Resources whose request differs from their limit (an omitted request defaults to the limit)."""

    def amount(value: object) -> object:
        parsed = quantity.parse(value)
        return str(value) if parsed is None else parsed  # 8, '8' and 8000m are one amount

    limits = {k: amount(v) for k, v in (resources.get("limits") or {}).items()}
    requests = {**limits, **{k: amount(v) for k, v in (resources.get("requests") or {}).items()}}
    return sorted(k for k in requests if requests[k] != limits.get(k))


def _lws_rules(lws: dict[str, Any]) -> Iterator[Finding]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    for side in ("leaderTemplate", "workerTemplate"):
        for index, container in enumerate(lwt.get(side, {}).get("spec", {}).get("containers", [])):
            unequal = _unequal_resources(container.get("resources", {}))
            if unequal:
                yield Finding(
                    ("spec", "leaderWorkerTemplate", side, "spec", "containers", index, "resources"),
                    f"requests must equal limits (a whole node per pod): {', '.join(unequal)} differ",
                )


def _service_rules(service: dict[str, Any], lws_by_name: dict[str, dict[str, Any]]) -> Iterator[Finding]:
    selector = (service.get("spec") or {}).get("selector") or {}
    if LWS_NAME_LABEL not in selector:
        return  # not a Service of LeaderWorkerSet pods
    lws = lws_by_name.get(selector.get(LWS_NAME_LABEL))
    # other labels (a kustomize commonLabels overlay adds its own) only where the leader pods carry them
    leader_labels = _leader_template(lws).get("metadata", {}).get("labels", {}) if lws else {}
    extra = {k: v for k, v in selector.items() if k not in (LWS_NAME_LABEL, WORKER_INDEX_LABEL)}
    if (
        lws is None
        or selector.get(WORKER_INDEX_LABEL) != "0"
        or any(leader_labels.get(k) != v for k, v in extra.items())
    ):
        yield Finding(
            ("spec", "selector"),
            f'must select {LWS_NAME_LABEL}=<a LeaderWorkerSet in this set> and {WORKER_INDEX_LABEL}="0" '
            "(and only labels its leader pods carry)",
        )
        return
    if service["metadata"]["name"] == lws["metadata"]["name"]:
        yield Finding(
            ("metadata", "name"),
            "must differ from the LeaderWorkerSet name (LWS owns a headless Service of that name)",
        )
    named = _leader_ports(lws)
    for index, port in enumerate(service["spec"].get("ports", [])):
        if "targetPort" not in port:  # Kubernetes then targets the number in `port`, which may not listen
            yield Finding(
                ("spec", "ports", index),
                "has no targetPort; name one of the leader container's ports: "
                + ", ".join(sorted(filter(None, named))),
            )
        elif port["targetPort"] not in named:
            yield Finding(
                ("spec", "ports", index, "targetPort"),
                f"{port['targetPort']!r} is not a named port of the leader container",
            )


def _leader_ports(lws: dict[str, Any]) -> set[str]:
    return {p.get("name") for c in _containers(_leader_template(lws)) for p in c.get("ports", [])}


def _worker_ports(lws: dict[str, Any]) -> set[str]:
    return {
        p.get("name")
        for c in _containers(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"])
        for p in c.get("ports", [])
    }


def _set_monitor_rules(monitor: dict[str, Any], sets: dict) -> Iterator[Finding]:
    selector = monitor["spec"]["selector"].get("matchLabels", {})
    endpoints = monitor["spec"].get("podMetricsEndpoints", [])
    ports = [(("spec", "podMetricsEndpoints", i, "port"), e.get("port")) for i, e in enumerate(endpoints)]
    yield from ds_rules.selector_errors(selector, sets, ("spec", "selector"), ports, every_pod=True)
    yield from monitor_namespace(monitor)


def _podmonitor_rules(monitor: dict[str, Any], lws_by_name: dict[str, dict[str, Any]]) -> Iterator[Finding]:
    selector = monitor["spec"]["selector"].get("matchLabels", {})
    if ds_rules.selects_set(selector):
        return  # a DisaggregatedSet's: set_references
    if LWS_NAME_LABEL not in selector and selector:
        return  # not a monitor of LeaderWorkerSet pods: routing.py checks it selects a Deployment's
    lws = lws_by_name.get(selector.get(LWS_NAME_LABEL))
    endpoints = [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]]
    # every pod of the group, where the workers serve a metrics port too (SGLang's data-parallel attention);
    # a port that is nowhere is reported as such below
    every_pod = (
        lws is not None
        and WORKER_INDEX_LABEL not in selector
        and bool(set(endpoints) & _worker_ports(lws) or set(endpoints) - _leader_ports(lws))
    )
    if (
        lws is None
        or not (selector.get(WORKER_INDEX_LABEL) == "0" or every_pod)
        or len(monitor["spec"]["selector"]) != 1
    ):
        yield Finding(
            ("spec", "selector"),
            f'must match exactly {LWS_NAME_LABEL}=<a LeaderWorkerSet in this set> and {WORKER_INDEX_LABEL}="0" '
            "(or only the first, where the worker pods serve the metrics port too)",
        )
        return
    yield from monitor_namespace(monitor)
    named = _leader_ports(lws)
    for index, endpoint in enumerate(monitor["spec"]["podMetricsEndpoints"]):
        if endpoint["port"] not in named:
            yield Finding(
                ("spec", "podMetricsEndpoints", index, "port"),
                f"{endpoint['port']!r} is not a named port of the leader container",
            )
        elif every_pod and endpoint["port"] not in _worker_ports(lws):
            yield Finding(
                ("spec", "podMetricsEndpoints", index, "port"),
                f"{endpoint['port']!r} is not a named port of the worker container, and this PodMonitor selects "
                "every pod of the group",
            )


_SERIES_NAME = re.compile(r'leaderworkerset_sigs_k8s_io_name="([^"]*)"')
_SERIES_SET = re.compile(r'disaggregatedset_x_k8s_io_name="([^"]*)"')
_SERIES_NAMESPACE = re.compile(r'(?<![_a-z])namespace="([^"]*)"')


def _rule_rules(rule: dict[str, Any], lws_by_name: dict[str, dict[str, Any]], sets: dict) -> Iterator[Finding]:
    """Names inside PromQL cannot follow a kustomize overlay (namePrefix, namespace): say where they broke."""
    own = rule["metadata"].get("namespace")
    for g, group in enumerate(rule["spec"].get("groups", [])):
        for r, item in enumerate(group.get("rules", [])):
            at = ("spec", "groups", g, "rules", r, "expr")
            yield from _promql_rules(
                str(item.get("expr", "")),
                own,
                at,
                lws_by_name,
                sets,
                owner="rule",
                own_name=rule["metadata"].get("name"),
            )


def _promql_rules(
    expr: str, own: str | None, at: tuple, lws_by_name, sets: dict, owner: str = "object", own_name: str | None = None
) -> Iterator[Finding]:
    for name in set(_SERIES_SET.findall(expr)):
        if sets and name not in sets:
            yield Finding(
                at,
                f"selects DisaggregatedSet {name!r}, which is not in this set (names in PromQL do not follow a rename)",
            )
    for name in sorted(set(_SERIES_NAME.findall(expr))):
        if name in lws_by_name and own_name in lws_by_name and name != own_name:
            yield Finding(
                at,
                f"selects LeaderWorkerSet {name!r}, another copy's (this object's is {own_name!r}; names in PromQL "
                "do not follow a kustomize namePrefix/nameSuffix; render the profile with the new name)",
            )
        if lws_by_name and name not in lws_by_name:
            yield Finding(
                at,
                (
                    f"selects LeaderWorkerSet {name!r}, which is not in this set (names in PromQL do not follow a "
                    "kustomize namePrefix/nameSuffix; render the profile with the new name)"
                ),
            )
    for namespace in set(_SERIES_NAMESPACE.findall(expr)):
        if own and namespace != own:
            yield Finding(
                at,
                (
                    f"selects namespace {namespace!r}, not the {owner}'s own {own!r} (a kustomize `namespace:` overlay "
                    "does not reach into PromQL; set the profile's namespace)"
                ),
            )


def _scaled_rules(scaled: dict[str, Any], lws_by_name: dict[str, dict[str, Any]], sets: dict) -> Iterator[Finding]:
    """The KEDA query names the LWS and namespace in PromQL, which an overlay cannot follow either."""
    yield from _target_rules(scaled, lws_by_name)
    own = scaled["metadata"].get("namespace")
    for index, trigger in enumerate(scaled["spec"].get("triggers", [])):
        query = str((trigger.get("metadata") or {}).get("query", ""))
        target = (scaled["spec"].get("scaleTargetRef") or {}).get("name")
        yield from _promql_rules(
            query, own, ("spec", "triggers", index, "metadata", "query"), lws_by_name, sets, own_name=target
        )


def _role_rules(role: dict[str, Any], lws_by_name: dict[str, dict[str, Any]]) -> Iterator[Finding]:
    """resourceNames are pod names derived from the LWS name: an overlay that renames the LWS breaks them."""
    for index, rule in enumerate(role.get("rules", [])):
        for name in rule.get("resourceNames", []):
            if lws_by_name and not any(name.startswith(f"{lws}-") for lws in lws_by_name):
                yield Finding(
                    ("rules", index, "resourceNames"),
                    f"{name!r} is not a pod of a LeaderWorkerSet in this set (pod names do not follow a "
                    "kustomize namePrefix/nameSuffix; render the profile with the new name)",
                )
                break


def _target_rules(obj: dict[str, Any], lws_by_name: dict[str, dict[str, Any]]) -> Iterator[Finding]:
    ref = obj["spec"]["scaleTargetRef"]
    if ref.get("kind") != ds_rules.SCALER_KIND and (  # a role's scaler: set_references
        ref.get("kind") != "LeaderWorkerSet"
        or ref.get("apiVersion") != "leaderworkerset.x-k8s.io/v1"
        or ref.get("name") not in lws_by_name
    ):
        yield Finding(
            ("spec", "scaleTargetRef"),
            "must target a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) in this set by kind and name",
        )
    spec = obj["spec"]
    low, high = (
        spec.get("minReplicas", spec.get("minReplicaCount", 1)),
        spec.get("maxReplicas", spec.get("maxReplicaCount", 1)),
    )
    if low > high:
        yield Finding(("spec",), f"minimum {low} is above maximum {high}")


@registry.rule(
    "cross-object", scope=SET, kinds=(ds_rules.KIND, "PodMonitor", "HorizontalPodAutoscaler", "ScaledObject")
)
def set_references(obj: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """What refers to a DisaggregatedSet selects its pods by set and role, names a set and role that
    exist and ports their leaders have; each role's LeaderWorkerSet spec holds a LeaderWorkerSet's rules."""
    kind = obj.get("kind")
    if kind == ds_rules.KIND:
        for prefix, lws in ds_rules.as_leaderworkersets(obj):
            for finding in _lws_rules(lws):
                yield finding._replace(path=(*prefix, *finding.path))
    elif kind == "PodMonitor" and ds_rules.selects_set(obj["spec"]["selector"].get("matchLabels", {})):
        yield from _set_monitor_rules(obj, inv.sets)
    elif (
        kind in ("HorizontalPodAutoscaler", "ScaledObject")
        and (obj["spec"].get("scaleTargetRef") or {}).get("kind") == ds_rules.SCALER_KIND
    ):
        yield from ds_rules.scaler_errors(obj["spec"]["scaleTargetRef"], inv.sets)


@registry.rule("cross-object", scope=SET, kinds=("LeaderWorkerSet",))
def a_node_per_pod(lws: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """Every container of a group requests what it limits (a whole node per pod)."""
    return _lws_rules(lws)


@registry.rule("cross-object", scope=SET, kinds=("Service",))
def service_selects_leaders(service: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A Service of LeaderWorkerSet pods selects the leaders (worker index 0) of a LeaderWorkerSet in the
    set, is not named as the set (LeaderWorkerSet owns a headless Service of that name) and targets
    ports the leader container names."""
    return _service_rules(service, inv.lws)


@registry.rule("cross-object", scope=SET, kinds=("PodMonitor",))
def monitor_selects_leaders(monitor: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A PodMonitor of LeaderWorkerSet pods selects exactly one set's leaders (or every pod, where the
    workers serve the metrics port too), in its own namespace, on ports the containers name."""
    return _podmonitor_rules(monitor, inv.lws)


@registry.rule("cross-object", scope=SET, kinds=("HorizontalPodAutoscaler",))
def autoscaler_targets_a_set(hpa: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """An autoscaler targets a LeaderWorkerSet of the set by kind and name, its minimum at most its maximum."""
    return _target_rules(hpa, inv.lws)


@registry.rule("cross-object", scope=SET, kinds=("PrometheusRule",))
def records_name_the_set(rule: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """Names inside PromQL (the LeaderWorkerSet, DisaggregatedSet and namespace of a recording rule)
    cannot follow a kustomize overlay: they name the set's own."""
    return _rule_rules(rule, inv.lws, inv.sets)


@registry.rule("cross-object", scope=SET, kinds=("Role",))
def role_names_pods_of_the_set(role: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A Role's resourceNames are pods of a LeaderWorkerSet of the set."""
    return _role_rules(role, inv.lws)


@registry.rule("cross-object", scope=SET, kinds=("ScaledObject",))
def keda_targets_a_set(scaled: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A ScaledObject targets a LeaderWorkerSet of the set, and its query names the set's own series."""
    return _scaled_rules(scaled, inv.lws, inv.sets)


# What a rule raises on an object of a shape its schema allows but the rule cannot read.
READ_ERRORS = (KeyError, TypeError, AttributeError, IndexError, ValueError)
SET_RULE_MODULES = (invariants, routing)  # their rules register on import, beside this module's


def cross_object_errors(objects_by_file: dict[str, tuple[dict[str, Any], ...]]) -> Iterator[tuple[str, int, Finding]]:
    """(file, document index, finding) of every registered set rule, each object against the set's
    inventory: the same rules for a render's output and for `lwsgen validate` (a runtimeVersion is
    read from the pods' annotations, output/podneeds.py)."""
    try:
        inv = inventory(objects_by_file)
    except READ_ERRORS as err:
        said = f"{type(err).__name__}: {err}"[:200]
        first = next((f for f, docs in objects_by_file.items() if docs), None)
        message = f"the cross-object rules cannot read this set of objects ({said}); write them as lwsgen does"
        if first is not None:
            yield first, 0, Finding((), message, code="cross-object")
        return
    set_rules = registry.rules(SET)  # one code each (registry.rule): each finding gets its rule's
    for file, docs in objects_by_file.items():
        for index, obj in enumerate(docs):
            if isinstance(obj, dict):
                for finding in dict.fromkeys(_object_findings(obj, inv, set_rules)):
                    yield file, index, finding


def _object_findings(obj: dict, inv: Inventory, set_rules) -> Iterator[Finding]:
    kind = obj.get("kind")
    for each in set_rules:
        if each.kinds and kind not in each.kinds:
            continue
        try:
            found = list(each.function(obj, inv))
        except READ_ERRORS as err:
            said = f"{type(err).__name__}: {err}"[:200]
            message = f"the cross-object rules cannot read this {kind} ({said}); write it as lwsgen does"
            found = [Finding((), message)]
        for finding in found:
            yield finding._replace(code=each.codes[0])
