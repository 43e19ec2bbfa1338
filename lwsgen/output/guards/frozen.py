"""What no escape hatch (a patch, a user template) may change or open, checked on the objects it
produced: the values lwsgen derives (each named with the profile field that sets it instead),
and the pod security the profile allows. `changes` compares an object before and after a hatch;
`holes` reads one object alone (every pod spec in it: LWS templates, Deployments, Jobs, MPIJobs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwsgen import naming, runtimes
from lwsgen.check.pods import OWN_LABEL_PREFIXES, OWN_VOLUMES, annotation_owner
from lwsgen.output.guards import addsonly
from lwsgen.output.guards.podsecurity import pod_specs
from lwsgen.profile import Profile
from lwsgen.records import Record

ANY, OWN_LABELS, OWN_POD_ANNOTATIONS, DEVICES = "*", "@labels", "@annotations", "@devices"
PROBES, OWN_ENV, OWN_MOUNTS = "@probes", "@env", "@mounts"
PROBE_FIELDS = ("startupProbe", "readinessProbe", "livenessProbe")
# Environment variables lwsgen, LeaderWorkerSet or a runtime's launch sets (prefixes: LWS_ is every
# LeaderWorkerSet variable, present and future).
RESERVED_ENV = (
    "LWS_",
    naming.OWN_ENV_PREFIX,
    *naming.OWN_ENV,
    *sorted({name for plugin in runtimes.REGISTRY.values() for name in plugin.reserved_env}),
)
POD = ("spec", "leaderWorkerTemplate", ANY, "spec")
POD_META = ("spec", "leaderWorkerTemplate", ANY, "metadata")


TOKEN_POD = (
    "nothing: these pods run with their ServiceAccount's token, so what runs in them is lwsgen's (a sidecar, "
    "command, probe or mounted program there would act as that account); resources and other fields may change"
)


# lwsgen's own pod annotations that one profile field sets: named in the refusal instead of the guard's
OWN_ANNOTATION_FIELDS = {
    naming.RUNTIME_VERSION_ANNOTATION: "runtimeVersion",
    naming.RUNTIME_VERSION_IMAGE_ANNOTATION: "image and runtimeVersion",
}


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
    # lwsgen's Deployments (the endpoint picker, the P/D router) run with their ServiceAccount's
    # token (they watch pods and pools): what runs in them is lwsgen's, or a hatch would run code
    # with that account. A new container is a new index: its name differs from nothing.
    *(
        Guard(("Deployment",), ("spec", "template", "spec", group, ANY, field), TOKEN_POD)
        for group in ("containers", "initContainers", "ephemeralContainers")
        for field in (
            *("name", "image", "command", "args", "env", "envFrom", "lifecycle", "workingDir", "volumeMounts"),
            *("startupProbe", "readinessProbe", "livenessProbe", "securityContext", "volumeDevices"),
        )
    ),
    Guard(("Deployment",), ("spec", "template", "spec", "volumes"), TOKEN_POD),  # an image volume's programs
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


def spec_at(obj: Any, path: tuple) -> dict | None:
    """The mapping at path in obj, or None."""
    found = _get(obj, path)
    return found if isinstance(found, dict) else None


def devices(profile: Profile) -> set[str]:
    node = profile.node
    return {node.gpu_resource, "vpc.amazonaws.com/efa", *node.rdma_resource}


ADDS_ONLY = "the profile (a hatch adds to what lwsgen writes; it does not change or remove it)"
# Pod fields lwsgen (or a profile field) decides, in every pod it writes: a hatch neither sets nor changes them.
DECIDED = {
    "hostAliases": "nothing: names resolve as the cluster's DNS says (LWS_LEADER_ADDRESS too)",
    "dnsPolicy": "dnsConfig",
    "dnsConfig": "dnsConfig",
    "hostname": "nothing: LeaderWorkerSet names the pods",
    "subdomain": "nothing: LeaderWorkerSet names the pods",
    "setHostnameAsFQDN": "nothing: LeaderWorkerSet names the pods",
    "priority": "scheduling.priorityClassName",
    "priorityClassName": "scheduling.priorityClassName",
    "preemptionPolicy": "scheduling.priorityClassName",
    "runtimeClassName": "nothing: the GPU runtime is the node's",
    "schedulerName": "scheduling.scheduler",
    "overhead": "node.*",
    "hostUsers": "nothing: the pods keep the node's default user namespaces",
    "serviceAccountName": "runtime (the launcher's account)",
    "serviceAccount": "runtime (the launcher's account)",
    "automountServiceAccountToken": "runtime (the launcher's account)",
    "securityContext": "security.runAsUser",
    "os": "nothing: the GPU nodes are Linux",
}


def _decided(before: dict, after: dict) -> Iterator[tuple[tuple, str]]:
    """The pod fields lwsgen decides, and its pod templates' labels (what selectors see)."""

    for at, spec in pod_specs(before):
        theirs = _get(after, at)
        if not isinstance(theirs, dict):
            continue
        for field, owner in DECIDED.items():
            if spec.get(field, _MISSING) != theirs.get(field, _MISSING):
                yield (*at, field), owner
        labels = (*at[:-1], "metadata", "labels")
        if at and at[-1] == "spec" and _get(before, labels) != _get(after, labels):
            yield labels, "podLabels (the selectors of lwsgen's Services, monitors and policies read pod labels)"


def changes(before: dict, after: dict, found: set[str]) -> Iterator[tuple[tuple, str]]:
    """(path, profile field) for every value lwsgen wrote that the hatch changed or removed, and
    every change at all (additions too) inside what is frozen (GUARDS, DECIDED, pod labels)."""
    said = list(_guarded(before, after, found))
    said += [(p, f) for p, f in _decided(before, after) if not any(p[: len(s)] == s for s, _ in said)]
    yield from said
    for path in addsonly.lost(before, after):
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
                yield path, OWN_ANNOTATION_FIELDS.get(path[-1], guard.field)
                if path[-1] == "name" and "containers" in path:  # another container first: said once
                    moved.append(path[:-1])
