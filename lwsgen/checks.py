"""Stage 2b: rules beyond the schema, on a schema-valid profile with defaults filled in."""

from __future__ import annotations

import re
from typing import Any, Callable

from lwsgen import nccl, runtimes, scheduling
from lwsgen.naming import SUFFIXES, name_budget
from lwsgen.problems import Problem
from lwsgen.source import Source

# Docker reference grammar (distribution/reference), anchored.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
IMAGE_RE = re.compile(
    rf"^(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)

# Environment variables lwsgen or LeaderWorkerSet set on the containers themselves.
RESERVED_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX", "HF_TOKEN", "GROUP_KEY", "POD_NAME", "POD_NAMESPACE")

Rule = Callable[[dict[str, Any], Source], list[Problem]]


def world_size(profile: dict[str, Any]) -> int:
    return profile["parallelism"]["tensor"] * profile["parallelism"]["pipeline"]


def highest_group_index(profile: dict[str, Any]) -> int:
    groups = profile["autoscaling"]["maxReplicas"] if profile["autoscaling"]["enabled"] else profile["replicas"]
    return max(groups - 1, 0)


def _layouts(world: int, gpus: int) -> list[str]:
    """Nearby layouts that divide evenly: same GPUs per node with a rounded world size, or fewer GPUs per node."""
    below, above = (world // gpus) * gpus, (world // gpus + 1) * gpus
    out = []
    for total in (below, above):
        if total:
            nodes = total // gpus
            out.append(f"tensor {gpus} x pipeline {nodes} ({nodes} node{'s' if nodes > 1 else ''} of {gpus} GPUs)")
    for per_node in range(gpus - 1, 0, -1):
        if world % per_node == 0:
            out.append(f"node.gpus {per_node} with the same parallelism ({world // per_node} nodes)")
            break
    return out


def check_divisible(profile: dict[str, Any], src: Source) -> list[Problem]:
    world, gpus = world_size(profile), profile["node"]["gpus"]
    if world <= gpus or world % gpus == 0:
        return []
    par = profile["parallelism"]
    message = (f"world size {world} (tensor {par['tensor']} x pipeline {par['pipeline']}) is not a multiple of "
               f"node.gpus {gpus}, so groups cannot take whole nodes; valid layouts near it: " + "; ".join(_layouts(world, gpus)))
    field = ("parallelism", "tensor") if ("parallelism", "tensor") in src.values_at else ("node", "gpus")
    return [src.problem(field, message, "not-divisible")]


def check_name_budget(profile: dict[str, Any], src: Source) -> list[Problem]:
    name = profile["name"]
    top = highest_group_index(profile)
    budget = name_budget(top)
    if len(name) <= budget:
        return []
    longest = max(SUFFIXES.values(), key=len)
    return [src.problem(("name",), (
        f"{len(name)} characters is too long; at most {budget} fit with group indexes up to {top}: "
        f"LeaderWorkerSet labels worker pods with the StatefulSet revision '<name>-{top}-<10-char hash>' (63 at most), "
        f"and derived names such as '<name>{longest}' must stay DNS labels"), "name-too-long")]


def check_replicas(profile: dict[str, Any], src: Source) -> list[Problem]:
    scaling = profile["autoscaling"]
    if scaling["minReplicas"] > scaling["maxReplicas"]:
        return [src.problem(("autoscaling", "minReplicas"),
                            f"minReplicas {scaling['minReplicas']} is greater than maxReplicas {scaling['maxReplicas']}", "min-above-max")]
    return []


def image_problem(image: str) -> str | None:
    """Why an image reference is unusable, or None."""
    if re.search(r"\s", image):
        return "image reference contains whitespace"
    match = IMAGE_RE.match(image)
    domain = match and match["domain"]
    if domain and not ("." in domain or ":" in domain or domain == "localhost" or domain.startswith("[")):
        # Without '.', ':' or localhost the first part is a repository path component (docker.io/<it>/...).
        match = match if re.fullmatch(_COMPONENT, domain) else None
    if not match:
        return "not a valid image reference (registry/repository:tag or @sha256:digest)"
    if match["digest"]:
        return None
    if not match["tag"]:
        return "has neither tag nor digest, so every pull may get a different image; pin a tag or digest"
    if match["tag"] == "latest":
        return "':latest' is not pinned; use a version tag or a digest"
    return None


def check_images(profile: dict[str, Any], src: Source) -> list[Problem]:
    problems = []
    for path in (("image",), ("launch", "kubectlImage"), ("ncclTest", "image")):
        value = profile
        for part in path:
            value = value[part]
        if not value:
            continue
        why = image_problem(value)
        unpinned = why and ("latest" in why or "neither tag" in why)
        if why and not (unpinned and profile["allowLatestImage"]):
            problems.append(src.problem(path, f"{value!r}: {why}", "bad-image"))
    return problems


def check_service(profile: dict[str, Any], src: Source) -> list[Problem]:
    service = profile["service"]
    if service["loadBalancerSourceRanges"] and service["type"] != "LoadBalancer":
        return [src.problem(("service", "loadBalancerSourceRanges"),
                            f"only applies to service.type LoadBalancer, not {service['type']}", "not-applicable")]
    return []


def check_env(profile: dict[str, Any], src: Source) -> list[Problem]:
    return [src.problem(("env", name), f"{name} is set by lwsgen or LeaderWorkerSet; reserved names: {', '.join(RESERVED_ENV)}", "reserved-env", key=True)
            for name in profile["env"] if name in RESERVED_ENV or name.startswith("LWSGEN_")]


OWN_LABEL_PREFIXES = ("app.kubernetes.io/", "leaderworkerset.sigs.k8s.io/")


def check_labels(profile: dict[str, Any], src: Source) -> list[Problem]:
    fields = (("labels",), ("monitoring", "prometheusLabels"))
    return [src.problem((*field, key), f"{key} is set by lwsgen or LeaderWorkerSet; use your own label key", "reserved-label", key=True)
            for field in fields for key in _get(profile, field) if key.startswith(OWN_LABEL_PREFIXES)]


def _get(profile: dict[str, Any], path: tuple) -> Any:
    value: Any = profile
    for part in path:
        value = value[part]
    return value


def check_autoscaling(profile: dict[str, Any], src: Source) -> list[Problem]:
    scaling = profile["autoscaling"]
    if not scaling["enabled"]:
        return []
    problems = []
    if not profile["monitoring"]["enabled"]:
        problems.append(src.problem(("autoscaling", "enabled"), (
            "autoscaling reads the recording rules that monitoring emits; set monitoring.enabled to true"), "needs-monitoring"))
    milli = scaling["target"] * 1000
    if abs(milli - round(milli)) > 1e-9:
        problems.append(src.problem(("autoscaling", "target"), (
            f"{scaling['target']} is finer than a Kubernetes quantity can say; use at most 3 decimals"), "bad-target"))
    return problems


def check_node_selector(profile: dict[str, Any], src: Source) -> list[Problem]:
    node = profile["node"]
    key = "node.kubernetes.io/instance-type"
    if "instanceType" in node and node["nodeSelector"].get(key, node["instanceType"]) != node["instanceType"]:
        return [src.problem(("node", "nodeSelector", key), f"conflicts with node.instanceType {node['instanceType']!r}", "conflict", key=True)]
    return []


def check_rollout(profile: dict[str, Any], src: Source) -> list[Problem]:
    lws = profile["lws"]
    problems = []
    for field in ("maxUnavailable", "maxSurge"):
        value = lws[field]
        if isinstance(value, str) and int(value[:-1]) > 100:
            problems.append(src.problem(("lws", field), f"{value} is more than 100%", "out-of-range"))
    if lws["maxUnavailable"] in (0, "0%") and lws["maxSurge"] in (0, "0%"):
        problems.append(src.problem(("lws", "maxUnavailable"), "maxUnavailable and maxSurge cannot both be 0: a rolling update could never proceed", "rollout-stuck"))
    return problems


def check_runtime(profile: dict[str, Any], src: Source) -> list[Problem]:
    plugin = runtimes.get(profile["runtime"])
    if plugin is None:
        return [src.problem(("runtime",), f"{profile['runtime']!r} is not available in this version of lwsgen; available: {', '.join(runtimes.known())}", "unknown-runtime")]
    problems = [src.problem(path, message, code) for path, message, code in runtimes.checks(plugin, profile)]
    caps = plugin.CAPABILITIES
    if profile["lws"]["startupPolicy"] == "LeaderReady" and caps.leader_ready_needs_workers:
        problems.append(src.problem(("lws", "startupPolicy"), (
            f"LeaderReady would deadlock with {profile['runtime']}: its leader is only ready after the workers start, "
            "and LeaderReady creates the workers only once the leader is ready; use LeaderCreated"), "startup-deadlock"))
    if profile["parallelism"]["pipeline"] > 1 and not caps.pipeline_parallel:
        problems.append(src.problem(("parallelism", "pipeline"), (
            f"{profile['runtime']} has no separate pipeline degree; set parallelism.tensor to the number of GPUs "
            f"({world_size(profile)}) and pipeline to 1"), "not-supported"))
    scaling = profile["autoscaling"]
    if scaling["enabled"] and scaling["metric"] not in caps.autoscaling_metrics:
        problems.append(src.problem(("autoscaling", "metric"), (
            f"{profile['runtime']} cannot produce {scaling['metric']}; it supports: {', '.join(caps.autoscaling_metrics)}"), "not-supported"))
    return problems


def check_nccl_test(profile: dict[str, Any], src: Source) -> list[Problem]:
    return nccl.check(profile, src, runtimes.get(profile["runtime"]).CAPABILITIES, group_size(profile))


RULES: tuple[Rule, ...] = (
    check_runtime, check_divisible, check_name_budget, check_replicas, check_images, check_service,
    check_env, check_labels, check_autoscaling, check_node_selector, check_rollout, scheduling.check, check_nccl_test,
)


def check_rules(profile: dict[str, Any], src: Source) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(profile, src)]


def group_size(profile: dict[str, Any]) -> int:
    return max(world_size(profile) // profile["node"]["gpus"], 1)


def warnings(profile: dict[str, Any], src: Source) -> list[Problem]:
    """What is valid but emitted differently than asked, costly, or unlikely to fit, said out loud."""
    out = scheduling.warnings(profile, src, group_size(profile))
    from lwsgen import sizing

    too_small = sizing.fits_profile(profile)
    if too_small:
        field = ("model", "family") if "family" in profile["model"] else ("model", "params")
        out.append(src.problem(field, too_small, "does-not-fit"))
    caps = runtimes.get(profile["runtime"]).CAPABILITIES
    if profile["monitoring"]["enabled"] and not caps.metrics:
        out.append(src.problem(("monitoring", "enabled"), (
            f"{profile['runtime']} exposes no Prometheus metrics, so no PodMonitor is emitted; "
            "the group GPU utilisation is still recorded from DCGM"), "not-emitted"))
    return out
