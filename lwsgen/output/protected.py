"""What no escape hatch (a patch, a user template) may change or open, checked on the objects it
produced: the values lwsgen derives (each named with the profile field that sets it instead),
and the pod security the profile allows. `changes` compares an object before and after a hatch;
`holes` reads one object alone (every pod spec in it: LWS templates, Deployments, Jobs, MPIJobs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwsgen.check import containers
from lwsgen.check.pods import OWN_LABEL_PREFIXES, OWN_VOLUMES, annotation_owner
from lwsgen.check.profile import Profile
from lwsgen.output import kept
from lwsgen.records import Record

ANY, OWN_LABELS, OWN_POD_ANNOTATIONS, DEVICES = "*", "@labels", "@annotations", "@devices"
PROBES, OWN_ENV, OWN_MOUNTS = "@probes", "@env", "@mounts"
PROBE_FIELDS = ("startupProbe", "readinessProbe", "livenessProbe")
# Environment variables lwsgen or LWS sets (check/rules.RESERVED_ENV and lwsgen's own LWSGEN_*).
RESERVED_ENV = ("LWS_", "LWSGEN_", "HF_TOKEN", "GROUP_KEY", "POD_NAME", "POD_NAMESPACE", "VLLM_HOST_IP")
POD = ("spec", "leaderWorkerTemplate", ANY, "spec")
POD_META = ("spec", "leaderWorkerTemplate", ANY, "metadata")


class Guard(Record):
    kinds: tuple[str, ...]  # empty: every kind
    path: tuple
    field: str  # what to change in the profile instead


GUARDS = (
    Guard((), ("metadata", "name"), "name"),
    Guard((), ("metadata", "namespace"), "namespace"),
    Guard((), ("metadata", "labels", OWN_LABELS), "labels (lwsgen's own labels are selected on)"),
    Guard(("LeaderWorkerSet",), ("spec", "replicas"), "replicas, or autoscaling (an autoscaler owns them)"),
    Guard(("LeaderWorkerSet",), ("spec", "leaderWorkerTemplate", "size"), "parallelism and node.gpus"),
    Guard(("LeaderWorkerSet",), ("spec", "leaderWorkerTemplate", "restartPolicy"), "lws.restartPolicy"),
    Guard(("LeaderWorkerSet",), ("spec", "startupPolicy"), "lws.startupPolicy"),
    Guard(("LeaderWorkerSet",), ("spec", "rolloutStrategy"), "lws.maxUnavailable, lws.maxSurge and lws.partition"),
    Guard(("LeaderWorkerSet",), (*POD_META, "labels", OWN_LABELS), "podLabels (lwsgen's own labels are selected on)"),
    Guard(("LeaderWorkerSet",), (*POD_META, "annotations", OWN_POD_ANNOTATIONS), "the scheduling and node fields"),
    Guard(
        ("LeaderWorkerSet",),
        (*POD, "containers", 0, "name"),
        "containers (the engine's container stays first: list it first in the patch, or add sidecars there)",
    ),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "image"), "image"),
    Guard(
        ("LeaderWorkerSet",),
        (*POD, "containers", 0, "command"),
        "runtime (the launch command is lwsgen's; engine flags: model.extraArgs, leader.args, worker.args)",
    ),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "resources", ANY, DEVICES), "node.gpus, node.efa, parallelism"),
    Guard(("LeaderWorkerSet",), (*POD, "schedulerName"), "scheduling.scheduler"),
    Guard(
        ("LeaderWorkerSet",),
        (*POD, "containers", 0, "args"),
        "model.extraArgs, leader.args and worker.args (the engine's command line is lwsgen's)",
    ),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "ports"), "runtime (the engine's ports)"),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, PROBES), "model.startSeconds and the runtime (the probes)"),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "securityContext"), "security.*"),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "env", OWN_ENV), "env (lwsgen's own variables)"),
    Guard(("LeaderWorkerSet",), (*POD, "containers", 0, "volumeMounts", OWN_MOUNTS), "storage.* (lwsgen's mounts)"),
    Guard(("LeaderWorkerSet",), (*POD, "volumes", OWN_MOUNTS), "storage.* and node.shmSize (lwsgen's volumes)"),
    Guard(("LeaderWorkerSet",), (*POD, "securityContext"), "security.runAsUser"),
    Guard(("LeaderWorkerSet",), (*POD, "affinity"), "affinity and node.gpuProduct"),
    Guard(("LeaderWorkerSet",), (*POD, "tolerations"), "node.tolerations"),
    Guard(("LeaderWorkerSet",), (*POD, "nodeSelector"), "node.nodeSelector and node.instanceType"),
    Guard(("LeaderWorkerSet",), (*POD, "priorityClassName"), "scheduling.priorityClassName"),
    Guard(("LeaderWorkerSet",), (*POD, "serviceAccountName"), "runtime (the launcher's account)"),
    Guard(("LeaderWorkerSet",), (*POD, "automountServiceAccountToken"), "runtime (the launcher's account)"),
    Guard(("LeaderWorkerSet",), ("metadata", "annotations", OWN_POD_ANNOTATIONS), "the scheduling fields"),
    Guard(("LeaderWorkerSet",), ("metadata", "labels", "kueue.x-k8s.io/queue-name"), "scheduling.queue"),
    Guard(("PrometheusRule",), ("spec",), "monitoring.* (the records autoscalers and dashboards read)"),
    Guard(("Role",), ("rules",), "runtime (what its launcher may do)"),
    Guard(("RoleBinding",), ("roleRef",), "runtime (what its launcher may do)"),
    Guard(("RoleBinding",), ("subjects",), "runtime (who may act as its launcher)"),
    Guard(("ServiceAccount",), (), "runtime (its launcher's account)"),
    Guard(("Service",), ("spec", "externalIPs"), "service.type (a Service's addresses are lwsgen's)"),
    Guard(("Service",), ("spec", "externalTrafficPolicy"), "service.externalTrafficPolicy"),
    Guard(("Service",), ("spec", "publishNotReadyAddresses"), "nothing: only ready leaders serve"),
    Guard(("HorizontalPodAutoscaler", "ScaledObject"), ("spec",), "autoscaling.*"),
    Guard(("HTTPRoute",), ("spec",), "gateway.*"),
    Guard(("PodMonitor",), ("spec", "podMetricsEndpoints", ANY, "port"), "the runtime (its metrics port)"),
    Guard(("PodMonitor",), ("spec", "podMetricsEndpoints", ANY, "path"), "the runtime (its metrics path)"),
    Guard(("Service",), ("spec", "selector"), "name (the Service selects this LWS's leaders)"),
    Guard(("Service",), ("spec", "type"), "service.type"),
    Guard(("Service",), ("spec", "ports"), "service.port and service.extraPorts"),
    Guard(("Service",), ("spec", "loadBalancerSourceRanges"), "service.loadBalancerSourceRanges"),
    Guard(
        ("NetworkPolicy",),
        ("spec",),
        "security.networkPolicy, service.allowedSources, service.allowedNamespaces, service.extraPorts",
    ),
    Guard(("PodMonitor",), ("spec", "selector"), "name (the PodMonitor selects this LWS's pods)"),
    Guard(("PodMonitor",), ("spec", "namespaceSelector"), "namespace"),
    Guard(("HorizontalPodAutoscaler", "ScaledObject"), ("spec", "scaleTargetRef"), "name"),
    Guard(("HorizontalPodAutoscaler",), ("spec", "minReplicas"), "autoscaling.minReplicas"),
    Guard(("HorizontalPodAutoscaler",), ("spec", "maxReplicas"), "autoscaling.maxReplicas"),
    Guard(("HorizontalPodAutoscaler",), ("spec", "metrics"), "autoscaling.metric and autoscaling.target"),
    Guard(("ScaledObject",), ("spec", "minReplicaCount"), "autoscaling.minReplicas"),
    Guard(("ScaledObject",), ("spec", "maxReplicaCount"), "autoscaling.maxReplicas"),
    Guard(("ScaledObject",), ("spec", "idleReplicaCount"), "autoscaling.idleReplicas"),
    Guard(("ScaledObject",), ("spec", "triggers"), "autoscaling.metric, target and activationTarget"),
    Guard(("InferencePool",), ("spec",), "gateway.* (the pool selects this LWS's leaders on the serving port)"),
    Guard(("HTTPRoute",), ("spec", "parentRefs"), "gateway.parentRefs"),
    Guard(("HTTPRoute",), ("spec", "rules", ANY, "backendRefs"), "gateway.* (the route's backend is this pool)"),
    Guard(("ConfigMap",), ("data",), "runtime (launch scripts and picker configuration are lwsgen's)"),
    Guard(("PersistentVolumeClaim",), ("spec",), "storage.create"),
    Guard(("Kustomization",), ("resources",), "the files this directory holds"),
)
_MISSING = object()


def _expand(value: Any, step: Any, devices: set[str]) -> list[Any]:
    if not isinstance(value, (dict, list)):
        return []
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    if step == ANY:
        return keys
    if step == OWN_LABELS:
        return [k for k in keys if str(k).startswith(OWN_LABEL_PREFIXES)]
    if step == OWN_POD_ANNOTATIONS:
        return [k for k in keys if annotation_owner(str(k))]
    if step == DEVICES:
        return [k for k in keys if k in devices or str(k).startswith("nvidia.com/")]
    if step == PROBES:
        return [k for k in keys if k in PROBE_FIELDS] if isinstance(value, dict) else []
    if step in (OWN_ENV, OWN_MOUNTS):
        return [_Named(name) for name in _names(value, step)]
    return [step]


class _Named(str):
    """A list element found by its name, not its place."""


def _names(value: Any, step: str) -> list[str]:
    if not isinstance(value, list):
        return []
    names = [str(item.get("name")) for item in value if isinstance(item, dict)]
    if step == OWN_ENV:
        return [n for n in names if n.startswith(RESERVED_ENV)]
    return [n for n in names if n in OWN_VOLUMES]


def _paths(obj: Any, path: tuple, devices: set[str], at: tuple = ()) -> Iterator[tuple]:
    if not path:
        yield at
        return
    for key in _expand(obj, path[0], devices):
        child = _step(obj, key)
        if child is _MISSING and len(path) > 1:
            continue
        yield from _paths(child, path[1:], devices, (*at, key))


def _step(obj: Any, key: Any) -> Any:
    if isinstance(key, _Named):
        found = (
            [item for item in obj if isinstance(item, dict) and str(item.get("name")) == key]
            if isinstance(obj, list)
            else []
        )
        return found[0] if found else _MISSING
    if isinstance(obj, dict) and key in obj:
        return obj[key]
    if isinstance(obj, list) and isinstance(key, int) and not isinstance(key, bool) and key < len(obj):
        return obj[key]
    return _MISSING


def _get(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = _step(obj, key)
        if obj is _MISSING:
            return _MISSING
    return obj


def devices(profile: Profile) -> set[str]:
    node = profile.node
    return {node.gpu_resource, "vpc.amazonaws.com/efa", *node.rdma_resource}


ADDS_ONLY = "the profile (a hatch adds to what lwsgen writes; it does not change or remove it)"


def changes(before: dict, after: dict, found: set[str]) -> Iterator[tuple[tuple, str]]:
    """(path, profile field) for every value lwsgen wrote that the hatch changed or removed, and
    every change at all (additions too) inside what is frozen (GUARDS)."""
    said = list(_guarded(before, after, found))
    yield from said
    for path in kept.lost(before, after):
        if not any(path[: len(p)] == p or p[: len(path)] == path for p, _ in said):
            yield path, ADDS_ONLY


def _guarded(before: dict, after: dict, found: set[str]) -> Iterator[tuple[tuple, str]]:
    kind, moved = before.get("kind"), []
    for guard in GUARDS:
        if guard.kinds and kind not in guard.kinds:
            continue
        paths = dict.fromkeys((*_paths(before, guard.path, found), *_paths(after, guard.path, found)))
        for path in paths:
            if _get(before, path) != _get(after, path) and not any(path[: len(m)] == m for m in moved):
                yield path, guard.field
                if path[-1] == "name" and "containers" in path:  # another container first: said once
                    moved.append(path[:-1])


def _pod_specs(value: Any, at: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            yield at, value
        for key, child in value.items():
            yield from _pod_specs(child, (*at, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _pod_specs(child, (*at, index))


HOST_FIELDS = {"hostNetwork": "security.allowHostNetwork", "hostIPC": "security.allowHostIPC"}


def holes(profile: Profile, obj: dict, before: dict | None = None) -> Iterator[tuple[tuple, str]]:
    """(path, what is wrong) for every way the object's pods get more than the profile allows; a
    container not in `before` (what lwsgen derived, if anything) is held to the sidecar rules too."""
    for at, spec in _pod_specs(obj):
        yield from _pod_holes(profile, spec, at)
        for group in ("initContainers", "containers"):
            for index, container in enumerate(spec.get(group) or []):
                if not isinstance(container, dict):
                    continue
                engine = group == "containers" and index == 0  # its amounts are the node shape's: guarded
                for path, message, _code in containers.container(profile, container, final=True, added=not engine):
                    yield (*at, group, index, *path), message
                if (container.get("resources") or {}).get("claims"):
                    yield (*at, group, index, "resources", "claims"), "a pod's devices come from node.*, not claims"


def _pod_holes(profile: Profile, spec: dict, at: tuple) -> Iterator[tuple[tuple, str]]:
    security = profile.security
    allowed = {"hostNetwork": security.allow_host_network, "hostIPC": security.allow_host_ipc}
    for field, setting in HOST_FIELDS.items():
        if spec.get(field) and not allowed[field]:
            yield (*at, field), f"{field} is not allowed for this profile; set {setting} to allow it"
    for field, why in (("hostPID", "the node's PID namespace"), ("shareProcessNamespace", "one process namespace")):
        if spec.get(field):
            yield (*at, field), f"lwsgen never runs a pod's containers in {why}"
    if spec.get("nodeName"):
        yield (
            (*at, "nodeName"),
            "nodeName skips the scheduler (gang scheduling, node.gpuProduct); set node.nodeSelector",
        )
    if spec.get("resourceClaims"):
        yield (*at, "resourceClaims"), "a pod's devices come from node.* (DRA claims are not lwsgen's to hand out)"
    for index, volume in enumerate(spec.get("volumes") or []):
        if isinstance(volume, dict) and "hostPath" in volume and not security.allow_host_path:
            yield (*at, "volumes", index, "hostPath"), "hostPath is not allowed; set security.allowHostPath"
    context = spec.get("securityContext") or {}
    for path, message, _code in containers.confinement(profile, context, ("securityContext",)):
        yield (*at, *path), message
