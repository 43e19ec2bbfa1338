"""`lwsgen explain`: what a profile will run, from its rendered (not written) output."""

from __future__ import annotations

from typing import Any

import yaml

from lwsgen import platforms, runtimes
from lwsgen.check import budget
from lwsgen.pipeline import Rendered
from lwsgen.yamlread import SAFE_LOADER


def _objects(result: Rendered) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [d for d in yaml.load_all(text, Loader=SAFE_LOADER) if d] for name, text in sorted(result.files.items())
    }


def pods(result: Rendered, d=None, lws: str | None = None) -> list[tuple[str, str, range, list[int]]]:
    """(pod of group 0, role, its global ranks, the pipeline stages they belong to): rank r is tensor
    rank r % tensor of pipeline stage r // tensor, and pod r // GPUs per pod. d, lws: one role of a
    set and its LeaderWorkerSet's name."""
    d = d or result.profile
    if d.platform == platforms.KSERVE_ISVC:  # two Deployments: pods named by their ReplicaSets
        return [
            (f"{d.name}-predictor{'-worker' if i else ''}-<hash>", "head" if i == 0 else "worker", ranks, stages)
            for i, (_, _, ranks, stages) in enumerate(pods(result, d._replace(platform=platforms.LWS)))
        ]
    lws = lws or (platforms.llmisvc_lws(d.name) if d.platform == platforms.KSERVE else None)
    out = []
    for index in range(d.group_size):
        name = (lws or d.name) + "-0" + (f"-{index}" if index else "")
        ranks = range(index * d.gpus_per_pod, (index + 1) * d.gpus_per_pod)
        stages = sorted({(rank // d.parallelism.tensor) % d.parallelism.pipeline for rank in ranks})
        out.append((name, "leader" if index == 0 else "worker", ranks, stages))
    return out


def _autoscaling_path(objects: dict[str, list[dict[str, Any]]]) -> list[str]:
    if "horizontalpodautoscaler.yaml" in objects:
        hpa = objects["horizontalpodautoscaler.yaml"][0]["spec"]
        metric = hpa["metrics"][0]["pods"]["metric"]["name"]
        rule = objects["prometheus-adapter-rules.yaml"][0]["rules"][0]
        record = rule["name"]["matches"].strip("^$")
        return [
            f"recording rule {record} (PrometheusRule, one value per leader pod)",
            f"prometheus-adapter serves it as custom metric {metric} (prometheus-adapter-rules.yaml)",
            f"HorizontalPodAutoscaler: average {hpa['metrics'][0]['pods']['target']['averageValue']} per group, "
            f"{hpa['minReplicas']}..{hpa['maxReplicas']} groups",
            f"LeaderWorkerSet {hpa['scaleTargetRef']['name']} (scale subresource; the HPA sees leader pods only)",
        ]
    if "scaledobject.yaml" in objects:
        spec = objects["scaledobject.yaml"][0]["spec"]
        trigger = spec["triggers"][0]["metadata"]
        return [
            f"KEDA query {trigger['query']} at {trigger['serverAddress']}",
            f"ScaledObject: threshold {trigger['threshold']} per group (AverageValue), "
            f"{spec['minReplicaCount']}..{spec['maxReplicaCount']} groups",
            f"LeaderWorkerSet {spec['scaleTargetRef']['name']}",
        ]
    return []


def _kserve_path(d) -> list[str]:
    """What KServe's controller puts in front of the pods (docs/kserve.md)."""
    if d.platform == platforms.KSERVE_ISVC:
        return [f"client -> Service {d.name}-predictor (KServe's) -> the head"]
    if not d.gateway.enabled:
        return [f"client -> Service {d.name}-kserve-workload-svc (KServe's, port 8000) -> a leader"]
    gateways = ", ".join(f"{r.get('namespace', d.namespace)}/{r['name']}" for r in d.gateway.parent_refs)
    roles = " of both roles" if d.roles else ""
    return [
        "client",
        f"Gateway {gateways}",
        "KServe's HTTPRoute (router.route)",
        f"InferencePool {d.name}-inference-pool (KServe's router.scheduler): the leaders{roles}, port 8000",
        f"endpoint picker Service {d.name}-epp-service (KServe's) picks one leader per request"
        + (", with its prefill and decode profiles" if d.roles else ""),
        "a decode leader, whose routing sidecar runs the prefill on the prefill leader the picker chose"
        if d.roles
        else "a leader (it serves its group)",
    ]


def _traffic_path(objects: dict[str, list[dict[str, Any]]], d) -> list[str]:
    """client -> Gateway -> HTTPRoute -> InferencePool -> endpoint picker -> leader (gateway.enabled);
    a set of roles behind the SGLang router: client -> (Gateway -> HTTPRoute ->) Service -> router;
    on KServe, what its controller makes."""
    if d.platform != platforms.LWS:
        return _kserve_path(d)
    if "router.yaml" in objects:
        service = objects["service.yaml"][0]
        front = [f"HTTPRoute {objects['httproute.yaml'][0]['metadata']['name']}"] if "httproute.yaml" in objects else []
        return [
            "client",
            *front,
            f"Service {service['metadata']['name']} ({service['spec']['type']})",
            "the SGLang router: a prefill leader and a decode leader per request, found by their set and role labels",
            "the prefill leader computes the KV cache and hands it to the decode leader, which answers",
        ]
    if "httproute.yaml" not in objects:
        service = objects["service.yaml"][0]
        return [f"client -> Service {service['metadata']['name']} ({service['spec']['type']}) -> a leader"]
    route = objects["httproute.yaml"][0]
    pool = objects["inferencepool.yaml"][0]
    picker = next(o for o in objects["endpoint-picker.yaml"] if o["kind"] == "Deployment")
    own = route["metadata"]["namespace"]
    gateways = ", ".join(
        f"{ref.get('namespace', own)}/{ref['name']}" + (f" ({ref['sectionName']})" if "sectionName" in ref else "")
        for ref in route["spec"]["parentRefs"]
    )
    match = route["spec"]["rules"][0]["matches"][0]["path"]
    hosts = ", ".join(route["spec"].get("hostnames", [])) or "any host"
    ref = pool["spec"]["endpointPickerRef"]
    selector = ", ".join(f"{k}={v}" for k, v in pool["spec"]["selector"]["matchLabels"].items())
    ports = ", ".join(str(p["number"]) for p in pool["spec"]["targetPorts"])
    return [
        "client",
        f"Gateway {gateways}",
        f"HTTPRoute {route['metadata']['name']}: {hosts}, {match['type']} {match['value']}, "
        f"timeout {route['spec']['rules'][0]['timeouts']['request']}",
        f"InferencePool {pool['metadata']['name']}: pods {selector}, port {ports}",
        f"endpoint picker Service {ref['name']}:{ref['port']['number']} ({picker['spec']['replicas']} replica"
        f"{'s' if picker['spec']['replicas'] > 1 else ''}, {ref['failureMode']}) picks one pod per request",
        "a leader (it serves its group)"
        if "disaggregatedset.yaml" not in objects
        else "a decode leader, whose routing sidecar runs the prefill on the prefill leader the picker chose",
    ]


def _engine(profile) -> str:
    """The engine version the profile runs and how lwsgen knows it, and the launch mode if there is a choice."""

    version = runtimes.engine_version(profile)
    said = f"{version.engine.title} {version.engine.spell(version.text)} ({version.said()})"
    plugin = runtimes.get(profile.runtime)
    return f"{said}, launch {plugin.mode(profile)}" if plugin.mode is not None else said


def _parallelism(profile) -> str:
    par = profile.parallelism
    data = f"data {par.data} x " if par.data > 1 else ""
    expert = ", experts over every GPU of the group" if par.expert else ""
    all_to_all = f" ({par.all_to_all})" if par.all_to_all != "default" else ""
    return f"{data}tensor {par.tensor} x pipeline {par.pipeline}{expert}{all_to_all}"


def _shape(d) -> str:
    groups = "autoscaled" if d.fixed_replicas is None else f"{d.replicas} group" + ("s" if d.replicas != 1 else "")
    pods = f"{d.group_size} pod{'s' if d.group_size > 1 else ''}"
    return f"world size {d.world_size} = {pods} x {d.gpus_per_pod} GPUs per group; {groups}"


def _group_lines(result: Rendered, d, lws: str | None, pad: str) -> list[str]:
    lines, group = [], pods(result, d, lws)
    for i, (name, side, ranks, stages) in enumerate(group):
        branch = "└─" if i == len(group) - 1 else "├─"
        stage_text = f"pipeline stage{'s' if len(stages) > 1 else ''} {', '.join(map(str, stages))}"
        lines.append(f"{pad}{branch} {name} ({side}): ranks {ranks.start}-{ranks.stop - 1}, {stage_text}")
    return lines


def _shape_lines(result: Rendered) -> list[str]:
    d = result.profile
    if not d.roles:
        return [
            f"├─ {_shape(d)}",
            f"├─ engine: {_engine(d)}",
            f"├─ parallelism: {_parallelism(d)}",
            "├─ group 0",
            *_group_lines(result, d, None, "│  "),
        ]
    lines = [f"├─ engine: {_engine(next(iter(d.roles.values())))}"]
    for role, p in d.roles.items():
        lines += [f"├─ role {role}: {_shape(p)}", f"│  ├─ parallelism: {_parallelism(p)}", "│  └─ group 0"]
        lines += _group_lines(result, p, _role_lws(d, role), "│     ")
    return lines


def _role_lws(d, role: str) -> str:
    """The LeaderWorkerSet a role runs as: KServe's <name>-kserve-mn(-prefill), or the one the
    DisaggregatedSet controller names <set>-<slice>-<revision>-<role>."""
    if d.platform == platforms.KSERVE:
        return platforms.llmisvc_lws(d.name, role)
    return f"{d.name}-0-<revision>-{role}"


def _selectors(objects: dict[str, list[dict[str, Any]]], file: str, path: tuple[str, ...]) -> list[tuple[str, dict]]:
    """(kind, selector) of each object of the file that selects pods; named where there are several (roles)."""
    found = [o for o in objects.get(file, []) if o.get("kind")]
    out = []
    for obj in found:
        selector = obj
        for key in path:
            selector = selector[key]
        kind = obj["kind"] if len(found) == 1 else f"{obj['kind']} {obj['metadata']['name']}"
        out.append((kind, selector))
    return out


def _placement(profile) -> list[str]:
    """How each group's pods are placed, from the scheduling fields (docs/scheduling.md), and a
    DisaggregatedSet's slices (its CRD's placementPolicy: the controller co-locates a slice's roles and
    spreads the slices across topology domains)."""
    s = profile.scheduling
    if s.scheduler == "volcano":
        queue = f", queue {s.queue}" if s.queue else ""
        steps = [f"Volcano gang scheduling{queue}: a PodGroup per group, none of its pods placed until all can be"]
    elif s.scheduler == "kueue":
        steps = [f"Kueue: LocalQueue {s.queue} admits the workload"]
        if s.required_topology:
            steps.append(f"every pod of a group in one {s.required_topology} domain (Kueue topology-aware scheduling)")
    else:
        steps = ["default scheduler, no gang scheduling: a group's pods are placed one by one as nodes have room"]
    if s.exclusive_topology:
        steps.append(f"one group per {s.exclusive_topology} domain, all its pods in it (LWS exclusive-topology)")
    if s.priority_class_name:
        steps.append(f"priority class {s.priority_class_name}")
    placed = profile.disaggregation.placement if profile.roles else None
    if placed is not None and placed.type != "None":
        steps.append(
            f"DisaggregatedSet placementPolicy {placed.type} on {placed.topology_key}: each slice's roles together, "
            f"the {profile.disaggregation.slices} slices spread across those domains"
        )
    return steps


def text(result: Rendered) -> str:
    d = result.profile
    objects = _objects(result)
    on = "" if d.platform == platforms.LWS else f", on {d.platform}"
    lines = [f"{d.name} ({d.runtime}{on}) in namespace {d.namespace}", *_shape_lines(result)]

    how = "model.servedName" if d.model.served_name else "the engine's default: the model as given"
    lines.append(f"├─ clients request model {runtimes.served_name(d)!r} ({how})")
    lines.append("├─ objects")
    names = list(objects)
    listed_in_kustomization = {"kustomization.yaml", *objects["kustomization.yaml"][0]["resources"]}
    for i, name in enumerate(names):
        branch = "└─" if i == len(names) - 1 else "├─"
        kinds = ", ".join(
            f"{o.get('kind', 'fragment')} {o.get('metadata', {}).get('name', '')}".strip() for o in objects[name]
        )
        listed = "" if name in listed_in_kustomization else " (outside the kustomization)"
        lines.append(f"│  {branch} {name}: {kinds}{listed}")
    selectors = [("Service", objects["service.yaml"][0]["spec"]["selector"])] if "service.yaml" in objects else []
    selectors += _selectors(objects, "podmonitor.yaml", ("spec", "selector", "matchLabels"))
    selectors += _selectors(objects, "inferencepool.yaml", ("spec", "selector", "matchLabels"))
    selectors += _selectors(objects, "networkpolicy.yaml", ("spec", "podSelector", "matchLabels"))
    lines.append("├─ selectors")
    for i, (kind, selector) in enumerate(selectors):
        branch = "└─" if i == len(selectors) - 1 else "├─"
        lines.append(f"│  {branch} {kind}: " + ", ".join(f"{k}={v}" for k, v in selector.items()))
    traffic = _traffic_path(objects, d)
    lines.append("├─ traffic")
    for i, step in enumerate(traffic):
        lines.append(f"│  {'└─' if i == len(traffic) - 1 else '├─'} {step}")

    placement = _placement(d)
    lines.append("├─ placement")
    for i, step in enumerate(placement):
        lines.append(f"│  {'└─' if i == len(placement) - 1 else '├─'} {step}")

    plan = budget.budget(next(iter(d.roles.values())) if d.roles else d)
    size = "size unknown" if plan.size_gb is None else f"{plan.size_gb:,.0f} GB"
    lines.append(f"├─ start budget (model {size}, {plan.size_from})")
    start = budget.steps(plan, next(iter(d.roles.values())) if d.roles else d)
    for i, (step, how) in enumerate(start):
        lines.append(f"│  {'└─' if i == len(start) - 1 else '├─'} {step}: {how}")
    path = _autoscaling_path(objects)
    lines.append("└─ autoscaling" + ("" if path else ": off"))
    for i, step in enumerate(path):
        lines.append(f"   {'└─' if i == len(path) - 1 else '├─'} {step}")
    return "\n".join(lines) + "\n"


def mermaid(result: Rendered) -> str:
    d = result.profile
    objects = _objects(result)
    service = {platforms.KSERVE: "-kserve-workload-svc", platforms.KSERVE_ISVC: "-predictor"}.get(d.platform, "-leader")
    lines = ["flowchart LR", f'  svc["Service {d.name}{service}"]']
    if "inferencepool.yaml" in objects:
        lines += [
            '  client["client"] --> gw["Gateway"] --> route["HTTPRoute"] --> pool["InferencePool"]',
            f'  pool -->|asks| epp["endpoint picker {d.name}-epp"]',
        ]
    workload = {
        platforms.KSERVE: f"LeaderWorkerSet {platforms.llmisvc_lws(d.name)} (KServe's)",
        platforms.KSERVE_ISVC: f"InferenceService {d.name} (KServe's Deployments)",
    }.get(d.platform, f"LeaderWorkerSet {d.name}")
    lines.append(f'  subgraph g0["group 0 of {workload}"]')
    for index, (name, role, ranks, _stages) in enumerate(pods(result)):
        lines.append(f'    p{index}["{name} ({role})<br/>ranks {ranks.start}-{ranks.stop - 1}"]')
    lines.append("  end")
    lines.append("  svc -->|leaders only| p0")
    if "inferencepool.yaml" in objects:
        lines.append("  pool -->|the picked leader| p0")
    for index in range(1, d.group_size):
        lines.append(f"  p0 <-->|group traffic| p{index}")
    if "podmonitor.yaml" in objects:
        lines.append('  prom["Prometheus"] -->|PodMonitor scrapes| p0')
        lines.append('  prom --> rules["PrometheusRule records"]')
    path = _autoscaling_path(objects)
    if path:
        scaler = "HPA via prometheus-adapter" if "horizontalpodautoscaler.yaml" in objects else "KEDA ScaledObject"
        lines.append(f'  rules --> scaler["{scaler}"]')
        lines.append(f'  scaler -->|replicas| lws["LeaderWorkerSet {d.name}"]')
    return "\n".join(lines) + "\n"
