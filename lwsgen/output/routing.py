"""Rules that span the gateway's objects (gateway.enabled): the InferencePool selects leaders of a
LeaderWorkerSet in the set on a port their container has, and names an endpoint picker Service in
the set by a port it has; the HTTPRoute routes to a pool in the set; the endpoint picker's
--pool-name names that pool (a kustomize namePrefix renames the pool, not the flag); Services and
PodMonitors of a Deployment select its pods on ports they have; the picker's config is an
EndpointPickerConfig the picker's strict decoder accepts, whose references resolve."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import yaml

from lwsgen import registry
from lwsgen.jsondata import dig
from lwsgen.naming import LWS_NAME_LABEL, SET_NAME_LABEL, SUFFIXES, WORKER_INDEX_LABEL
from lwsgen.output import sets as ds_rules
from lwsgen.output.inventory import Inventory
from lwsgen.problems import Finding
from lwsgen.registry import SET
from lwsgen.resources import package_dir
from lwsgen.yamlread import SAFE_LOADER

PICKER_CONFIG_KIND = "EndpointPickerConfig"
EPP_SUFFIX = SUFFIXES["epp"]  # the picker's Deployment is <pool>-epp


def _pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    return dig(workload, "spec", "template", "metadata", "labels") or {}


def _container_ports(template: dict[str, Any]) -> dict[str, int]:
    return {
        p.get("name"): p.get("containerPort")
        for c in dig(template, "spec", "containers") or []
        for p in c.get("ports") or []
    }


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _leader(lws: dict[str, Any]) -> dict[str, Any]:
    lwt = dig(lws, "spec", "leaderWorkerTemplate") or {}
    return lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}


@registry.rule("cross-object", scope=SET, kinds=("InferencePool",))
def pool_selects_serving_leaders(pool: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """An InferencePool selects the serving leaders of a LeaderWorkerSet (or every role's leaders of a
    DisaggregatedSet) in the set, on a port their container has, and names an endpoint picker Service of the
    set by a port it has."""
    spec = pool.get("spec") or {}
    selector = dig(spec, "selector", "matchLabels") or {}
    if ds_rules.selects_set(selector):  # every role's leaders of a DisaggregatedSet
        ports = [
            (("spec", "targetPorts", i, "number"), p.get("number")) for i, p in enumerate(spec.get("targetPorts", []))
        ]
        yield from ds_rules.selector_errors(selector, inv.sets, ("spec", "selector", "matchLabels"), ports)
        yield from _picker_ref(spec, inv)
        return
    lws = inv.lws.get(selector.get(LWS_NAME_LABEL))
    leader_labels = _leader(lws).get("metadata", {}).get("labels", {}) if lws else {}
    extra = {k: v for k, v in selector.items() if k not in (LWS_NAME_LABEL, WORKER_INDEX_LABEL)}
    if (
        lws is None
        or selector.get(WORKER_INDEX_LABEL) != "0"
        or any(leader_labels.get(k) != v for k, v in extra.items())
    ):
        yield Finding(
            ("spec", "selector", "matchLabels"),
            f'must select {LWS_NAME_LABEL}=<a LeaderWorkerSet in this set> and {WORKER_INDEX_LABEL}="0" (the leaders, '
            "which serve; workers do not) and only labels its leader pods carry",
        )
    else:
        numbers = set(_container_ports(_leader(lws)).values())
        for index, port in enumerate(spec.get("targetPorts", [])):
            if port.get("number") not in numbers:
                yield Finding(
                    ("spec", "targetPorts", index, "number"),
                    f"{port.get('number')} is not a port of the leader container: "
                    + ", ".join(str(n) for n in sorted(numbers)),
                )
    yield from _picker_ref(spec, inv)


def _picker_ref(spec: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    ref = spec.get("endpointPickerRef") or {}
    service = inv.named["Service"].get(ref.get("name"))
    if service is None:
        yield Finding(("spec", "endpointPickerRef", "name"), f"Service {ref.get('name')!r} is not in this set")
    elif dig(ref, "port", "number") not in {p.get("port") for p in dig(service, "spec", "ports") or []}:
        yield Finding(
            ("spec", "endpointPickerRef", "port", "number"),
            f"is not a port of Service {ref.get('name')!r}",
        )


@registry.rule("cross-object", scope=SET, kinds=("HTTPRoute",))
def route_reaches_a_pool(route: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """An HTTPRoute routes to an InferencePool or a Service of the set, on a port the Service has."""
    for r, rule in enumerate(dig(route, "spec", "rules") or []):
        for b, backend in enumerate(rule.get("backendRefs") or []):
            if backend.get("kind") == "InferencePool" and backend.get("name") not in inv.named["InferencePool"]:
                yield Finding(
                    ("spec", "rules", r, "backendRefs", b, "name"),
                    f"InferencePool {backend.get('name')!r} is not in this set",
                )
            if backend.get("kind") == "Service":  # the SGLang router's, in front of a set of roles
                service = inv.named["Service"].get(backend.get("name"))
                ports = {p.get("port") for p in dig(service, "spec", "ports") or []}
                if service is None or backend.get("port") not in ports:
                    yield Finding(
                        ("spec", "rules", r, "backendRefs", b),
                        f"Service {backend.get('name')!r} port {backend.get('port')} is not in this set",
                    )


@registry.rule("cross-object", scope=SET, kinds=("Deployment",))
def picker_names_its_pool(deployment: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """The endpoint picker's --pool-name names the InferencePool of the set beside it (a kustomize
    namePrefix renames the pool, not the flag), and a router's selectors select pods of the set."""
    for c, container in enumerate(dig(deployment, "spec", "template", "spec", "containers") or []):
        args = list(container.get("args") or [])
        if "--pool-name" in args[:-1]:
            index = args.index("--pool-name") + 1
            at = ("spec", "template", "spec", "containers", c, "args", index)
            own = str(dig(deployment, "metadata", "name") or "").removesuffix(EPP_SUFFIX)
            if args[index] not in inv.named["InferencePool"]:
                yield Finding(at, f"names InferencePool {args[index]!r}, which is not in this set ({RENAMED})")
            elif args[index] != own and own in inv.named["InferencePool"]:
                yield Finding(
                    at,
                    f"names InferencePool {args[index]!r}, the pool of another copy "
                    f"(this picker's is {own!r}; {RENAMED})",
                )
    yield from _router_selectors(deployment, inv)


RENAMED = "a flag does not follow a kustomize namePrefix/nameSuffix; render the profile with the new name"
TEXT_RENAMED = (
    "the text of a ConfigMap does not follow a kustomize namePrefix/nameSuffix; render the profile with the new name"
)
# sglang_router/router_args.py@0.3.2: the role selectors take key=value words up to the next flag
ROUTER_SELECTORS = ("--prefill-selector", "--decode-selector")


def _flag_words(args: list[Any], flag: str) -> tuple[int, list[Any]]:
    """(index of the first word after flag, the words up to the next flag)."""
    start = args.index(flag) + 1
    end = next((i for i in range(start, len(args)) if str(args[i]).startswith("--")), len(args))
    return start, args[start:end]


def _router_selectors(deployment: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """The SGLang router's service discovery finds each role's leaders by exact labels
    (--prefill-selector, --decode-selector) on --service-discovery-port: a set and role of this set,
    their leaders, on a port they have."""
    for c, container in enumerate(dig(deployment, "spec", "template", "spec", "containers") or []):
        args = list(container.get("args") or [])
        port = None
        if "--service-discovery-port" in args[:-1]:
            at, words = _flag_words(args, "--service-discovery-port")
            port = (("spec", "template", "spec", "containers", c, "args", at), _number(words[0]) if words else None)
        for flag in ROUTER_SELECTORS:
            if flag not in args:
                continue
            at, words = _flag_words(args, flag)
            where = ("spec", "template", "spec", "containers", c, "args", at)
            errors = _set_selector_errors(_label_terms(words), inv.sets, where, [port] if port else [], RENAMED)
            for finding in errors:
                yield finding._replace(message=f"{flag} {' '.join(map(str, words))}: {finding.message}")


def _label_terms(terms: Any) -> dict[str, str]:
    """key=value terms (a router's selector words, a label selector's comma-separated terms) as labels."""
    return dict(str(term).strip().partition("=")[::2] for term in terms)


def _set_selector_errors(
    selector: dict[str, str], sets: dict[str, dict], at: tuple, ports: list, renamed: str, every_pod: bool = False
) -> Iterator[Finding]:
    """ds_rules.selector_errors of a selector kustomize cannot rewrite: one naming a set this set
    lacks says so (`renamed`: why the rename did not reach it)."""
    hint = f" ({renamed})" if selector.get(SET_NAME_LABEL) not in sets else ""
    for finding in ds_rules.selector_errors(selector, sets, at, ports, every_pod):
        yield finding._replace(message=f"{finding.message}{hint}")


def _number(word: Any) -> Any:
    return int(word) if isinstance(word, str) and word.isdigit() else word


def _deployment_selector(
    obj: dict[str, Any], selector: dict[str, str], ports: list[tuple[tuple, Any]], inv: Inventory
) -> Iterator[Finding]:
    """A Service or PodMonitor that selects no LeaderWorkerSet must select a Deployment of the set
    (or Job) and name ports its pods have."""
    owners = [d for d in inv.workloads if _selects(selector, _pod_labels(d))]
    if not owners:
        yield Finding(("spec", "selector"), "selects the pods of no LeaderWorkerSet, Deployment or Job in this set")
        return
    deployments = [d for d in owners if d.get("kind") == "Deployment"]
    if len(deployments) > 1:
        names = " and ".join(repr(dig(d, "metadata", "name")) for d in deployments)
        yield Finding(
            ("spec", "selector"),
            f"selects the pods of Deployments {names}: two copies of one output in a namespace carry the same "
            "labels (a namePrefix renames objects, not labels); add a label per copy (kustomize `labels` with "
            "includeSelectors), or render each copy as a profile of its own",
        )
    named = _container_ports(dig(owners[0], "spec", "template") or {})
    for path, port in ports:
        if isinstance(port, str) and port not in named:
            yield Finding(path, f"{port!r} is not a named port of the pods it selects")


@registry.rule("cross-object", scope=SET, kinds=("Service",))
def service_selects_a_workload(service: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A Service of a Deployment or Job selects its pods, on ports they have."""
    selector = dig(service, "spec", "selector") or {}
    if LWS_NAME_LABEL in selector or ds_rules.selects_set(selector) or not selector or not inv.workloads:
        return
    ports = [
        (("spec", "ports", i, "targetPort"), p.get("targetPort"))
        for i, p in enumerate(dig(service, "spec", "ports") or [])
    ]
    yield from _deployment_selector(service, selector, ports, inv)


def monitor_namespace(monitor: dict[str, Any]) -> Iterator[Finding]:
    own = dig(monitor, "metadata", "namespace")
    names = dig(monitor, "spec", "namespaceSelector", "matchNames")
    if own and names is not None and own not in names:
        yield Finding(
            ("spec", "namespaceSelector", "matchNames"),
            f"does not name the PodMonitor's own namespace {own!r} (a kustomize `namespace:` overlay cannot "
            "change it: render the profile with the new namespace instead)",
        )


@registry.rule("cross-object", scope=SET, kinds=("PodMonitor",))
def monitor_selects_a_workload(monitor: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A PodMonitor of a Deployment or Job selects its pods, on ports they have, in its own namespace."""
    selector = dig(monitor, "spec", "selector", "matchLabels") or {}
    if LWS_NAME_LABEL in selector or ds_rules.selects_set(selector) or not selector:
        return  # relations.py checks monitors of LeaderWorkerSet pods (and ones that select nothing)
    endpoints = dig(monitor, "spec", "podMetricsEndpoints") or []
    ports = [(("spec", "podMetricsEndpoints", i, "port"), e.get("port")) for i, e in enumerate(endpoints)]
    yield from _deployment_selector(monitor, selector, ports, inv)
    yield from monitor_namespace(monitor)


@lru_cache(maxsize=1)
def _config_validator():
    import jsonschema

    schema = json.loads((package_dir("schemas") / "endpointpickerconfig.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _references(config: dict[str, Any]) -> Iterator[Finding]:
    """pluginRefs name configured plugins (by name, or by type where the name is left out)."""
    names = {p.get("name") or p.get("type") for p in config.get("plugins", [])}
    refs: list[tuple[tuple, str]] = []
    for s, profile in enumerate(config.get("schedulingProfiles") or []):
        refs += [
            (("schedulingProfiles", s, "plugins", i), p.get("pluginRef"))
            for i, p in enumerate(profile.get("plugins") or [])
        ]
    for s, source in enumerate(dig(config, "dataLayer", "sources") or []):
        refs.append((("dataLayer", "sources", s), source.get("pluginRef")))
        refs += [
            (("dataLayer", "sources", s, "extractors", e), x.get("pluginRef"))
            for e, x in enumerate(source.get("extractors") or [])
        ]
    for path, ref in refs:
        if ref not in names:
            yield Finding(path, f"pluginRef {ref!r} names no plugin of this config")


def _picker_config(config_map: dict[str, Any], sets: dict[str, dict]) -> Iterator[Finding]:
    for key, text in (config_map.get("data") or {}).items():
        if not isinstance(text, str) or PICKER_CONFIG_KIND not in text:
            continue
        try:
            config = yaml.load(text, Loader=SAFE_LOADER)
        except yaml.YAMLError as err:
            yield Finding(("data", key), f"is not YAML: {err}")
            continue
        if not isinstance(config, dict) or config.get("kind") != PICKER_CONFIG_KIND:
            continue
        for err in sorted(_config_validator().iter_errors(config), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in err.absolute_path) or "(top)"
            yield Finding(("data", key), f"{where}: {err.message} (llm-d-router decodes its config strictly)")
        found = [
            *(_references(config) if isinstance(config.get("plugins"), list) else ()),
            *_screener_scopes(config, sets),
        ]
        for finding in found:  # a place inside the config's text: said at its key, the place in the message
            yield Finding(("data", key), f"{'.'.join(map(str, finding.path))}: {finding.message}")


SCREENER = "disaggregatedset-rollout-screener"


def _screener_scopes(config: dict[str, Any], sets: dict[str, dict]) -> Iterator[Finding]:
    """The rollout screener counts the Ready pods of one set by revision and role: its scope names a
    set of this set (kustomize does not rewrite a ConfigMap's text)."""
    for index, plugin in enumerate(config.get("plugins") if isinstance(config.get("plugins"), list) else ()):
        if not isinstance(plugin, dict) or plugin.get("type") != SCREENER:
            continue
        scope = str(dig(plugin, "parameters", "scope", "labelSelector") or "")
        where = ("plugins", index, "parameters", "scope", "labelSelector")
        for finding in _set_selector_errors(_label_terms(scope.split(",")), sets, where, [], TEXT_RENAMED, True):
            yield finding._replace(message=f"{scope!r}: {finding.message}")


@registry.rule("cross-object", scope=SET, kinds=("ConfigMap",))
def picker_config_is_one_the_picker_accepts(config_map: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """The endpoint picker's config is an EndpointPickerConfig the picker's strict decoder accepts,
    whose plugin references resolve and whose scopes name roles of the set."""
    return _picker_config(config_map, inv.sets)
