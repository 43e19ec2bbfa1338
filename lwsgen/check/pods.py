"""The pod escape hatches (podAnnotations, podLabels, affinity, topologySpreadConstraints, volumes,
volumeMounts, initContainers, containers, dnsConfig; per role under leader:/worker: with env, args
and resources too): what each role gets once the role's own settings are laid over the shared
ones, and the rules that keep a hatch from undoing what lwsgen derives or opening a hole.

Merging: maps key by key (the role's wins); lists of named things by name (volumes, containers,
init containers) or mountPath (volume mounts), the role's replacing the shared entry; affinity,
topologySpreadConstraints and dnsConfig whole (the role's, when given, instead of the shared).
Every merged entry keeps the profile path it came from, so a problem points at it."""

from __future__ import annotations

import re
from typing import Any

from lwsgen.check.delivery import CACHE_MOUNT, gigabytes
from lwsgen.check.metadata import ANNOTATIONS_BYTES, key_problem, label_value_problem
from lwsgen.check.profile import Profile
from lwsgen.load.source import Source
from lwsgen.problems import Problem
from lwsgen.records import Record
from lwsgen.runtimes.base import SCRIPTS_MOUNT, TOOLS_MOUNT

SIDES = ("leader", "worker")
# Volumes and containers lwsgen itself puts into a pod (derive/pods.py, workload.py, delivery.py).
OWN_VOLUMES = ("dshm", "model", "launch-scripts", "tools", "engine-cache", "model-local")
OWN_CONTAINERS = ("leader", "worker", "await-model", "cache-model")
OWN_LABEL_PREFIXES = ("app.kubernetes.io/", "leaderworkerset.sigs.k8s.io/")
# Pod annotations lwsgen derives, by key prefix: the profile field that sets them instead.
OWN_ANNOTATIONS = (
    ("k8s.v1.cni.cncf.io/networks", "node.networks"),
    ("leaderworkerset.sigs.k8s.io/", "scheduling.exclusiveTopology"),
    ("lwsgen/", "a key of your own (lwsgen/ is lwsgen's)"),
    ("kueue.x-k8s.io/", "scheduling.requiredTopology"),
    ("scheduling.volcano.sh/", "scheduling.queue"),
    ("volcano.sh/", "scheduling.podGroupAnnotations"),
)
# Device resources a pod gets from the node shape: never from a hatch.
DEVICE_FIELDS = {"vpc.amazonaws.com/efa": "node.efa"}
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


class Entry(Record):
    path: tuple  # where the profile sets it
    value: Any


class PodSettings(Record):
    """What one role's pods get from the hatches."""

    env: dict[str, Entry]
    args: tuple[Entry, ...]
    resources: dict[str, Entry]
    annotations: dict[str, Entry]
    labels: dict[str, Entry]
    affinity: Entry | None
    topology_spread: Entry | None
    volumes: tuple[Entry, ...]
    volume_mounts: tuple[Entry, ...]
    init_containers: tuple[Entry, ...]
    containers: tuple[Entry, ...]
    dns_config: Entry | None

    @property
    def sidecars(self) -> tuple[Entry, ...]:
        return (*self.init_containers, *self.containers)


def _map(shared: dict, own: dict, shared_path: tuple, own_path: tuple) -> dict[str, Entry]:
    out = {key: Entry((*shared_path, key), value) for key, value in shared.items()}
    out.update({key: Entry((*own_path, key), value) for key, value in own.items()})
    return out


def _named(shared: tuple, own: tuple, field: str, side: str, key: str) -> tuple[Entry, ...]:
    out: dict[Any, Entry] = {}
    for path, items in (((field,), shared), ((side, field), own)):
        for index, item in enumerate(items):
            out[item.get(key, (path, index))] = Entry((*path, index), item)
    return tuple(out.values())


def _whole(shared: Any, own: Any, field: str, side: str) -> Entry | None:
    if own is not None:
        return Entry((side, field), own)
    return Entry((field,), shared) if shared else None


def settings(profile: Profile, side: str) -> PodSettings:
    """The hatches of the leader or the worker pods, the role's own laid over the shared ones."""
    role = getattr(profile, side)
    return PodSettings(
        env={name: Entry((side, "env", name), value) for name, value in role.env.items()},
        args=tuple(Entry((side, "args", i), arg) for i, arg in enumerate(role.args)),
        resources=_map({}, role.resources, (), (side, "resources")),
        annotations=_map(profile.pod_annotations, role.pod_annotations, ("podAnnotations",), (side, "podAnnotations")),
        labels=_map(profile.pod_labels, role.pod_labels, ("podLabels",), (side, "podLabels")),
        affinity=_whole(profile.affinity, role.affinity, "affinity", side),
        topology_spread=_whole(
            profile.topology_spread_constraints, role.topology_spread_constraints, "topologySpreadConstraints", side
        ),
        volumes=_named(profile.volumes, role.volumes, "volumes", side, "name"),
        volume_mounts=_named(profile.volume_mounts, role.volume_mounts, "volumeMounts", side, "mountPath"),
        init_containers=_named(profile.init_containers, role.init_containers, "initContainers", side, "name"),
        containers=_named(profile.containers, role.containers, "containers", side, "name"),
        dns_config=_whole(profile.dns_config, role.dns_config, "dnsConfig", side),
    )


def _metadata(src: Source, pod: PodSettings) -> list[Problem]:
    out = []
    for key, entry in pod.labels.items():
        why = key_problem(key) or label_value_problem(str(entry.value))
        if key.startswith(OWN_LABEL_PREFIXES):
            why = "set by lwsgen or LeaderWorkerSet (selectors use it); use your own label key"
        if why:
            out.append(src.problem(entry.path, f"pod label {key!r}: {why}", "reserved-label", key=True))
    for key, entry in pod.annotations.items():
        owner = annotation_owner(key)
        why = key_problem(key) or (owner and f"lwsgen derives it; set {owner} instead")
        if why:
            out.append(src.problem(entry.path, f"pod annotation {key!r}: {why}", "reserved-annotation", key=True))
    size = sum(len(k.encode()) + len(str(e.value).encode()) for k, e in pod.annotations.items())
    if size > ANNOTATIONS_BYTES:
        message = f"pod annotations total {size} bytes; Kubernetes allows at most {ANNOTATIONS_BYTES} per object"
        out.append(src.problem(next(iter(pod.annotations.values())).path[:-1], message, "too-large"))
    return out


def annotation_owner(key: str) -> str | None:
    """The profile field that sets a pod annotation lwsgen derives (a prefix ending in '/' owns
    every key under it; any other, that one key)."""
    for prefix, field in OWN_ANNOTATIONS:
        if key.startswith(prefix) if prefix.endswith("/") else key == prefix:
            return field
    return None


def _own_mounts(profile: Profile) -> dict[str, str]:
    """Mount path -> what lwsgen mounts there."""
    mounts = {"/dev/shm": "shared memory", SCRIPTS_MOUNT: "the launch scripts", TOOLS_MOUNT: "the tools"}
    if profile.storage is not None:
        mounts[profile.storage.mount_path] = "the model (storage.mountPath)"
        mounts[CACHE_MOUNT] = "the local model cache"
    return mounts


def _volumes(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    out, names = [], set(OWN_VOLUMES)
    for entry in pod.volumes:
        name = entry.value.get("name")
        if name in OWN_VOLUMES:
            out.append(src.problem((*entry.path, "name"), f"lwsgen names a volume {name!r}; choose another", "taken"))
        if "hostPath" in entry.value and not profile.security.allow_host_path:
            message = "a hostPath volume reaches into the node's filesystem; set security.allowHostPath to allow it"
            out.append(src.problem((*entry.path, "hostPath"), message, "host-access", key=True))
        names.add(name)
    own_mounts = _own_mounts(profile)
    for entry in pod.volume_mounts:
        name, path = entry.value.get("name"), str(entry.value.get("mountPath", ""))
        if name not in names:
            allowed = ", ".join(sorted(n for n in names if n not in OWN_VOLUMES)) or "none"
            message = f"no volume {name!r} in this pod; volumes of the profile: {allowed}"
            out.append(src.problem((*entry.path, "name"), message, "unknown-volume"))
        taken = next((what for mount, what in own_mounts.items() if _overlaps(path, mount)), None)
        if taken:
            message = f"{path} overlaps where lwsgen mounts {taken}; mount elsewhere"
            out.append(src.problem((*entry.path, "mountPath"), message, "taken"))
    return out


def _overlaps(path: str, mount: str) -> bool:
    path, mount = path.rstrip("/") or "/", mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount + "/") or mount.startswith(path + "/")


def _container(profile: Profile, src: Source, entry: Entry, taken: set[str]) -> list[Problem]:
    spec, path, out = entry.value, entry.path, []
    name = spec.get("name")
    if name in taken:
        out.append(src.problem((*path, "name"), f"lwsgen names a container {name!r}; choose another", "taken"))
    resources = spec.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    if "memory" not in limits:
        message = (
            "needs resources.limits.memory: a container without a memory limit can take the GPU node's memory "
            "from the engine"
        )
        out.append(src.problem((*path, "resources") if "resources" in spec else path, message, "no-limit"))
    unequal = sorted(r for r, amount in requests.items() if r not in limits or _amount(amount) != _amount(limits[r]))
    if unequal:
        message = (
            f"requests {unequal[0]} below or without its limit: the GPU pods are Guaranteed QoS (every container "
            "requests what it limits) so the kubelet can pin CPUs and NUMA nodes to the GPUs; give limits only"
        )
        out.append(src.problem((*path, "resources", "requests", unequal[0]), message, "not-guaranteed"))
    devices = sorted(r for r in {**limits, **requests} if _device(profile, r))
    if devices:
        message = f"{devices[0]} is the engine's: a pod's devices come from node.gpus, node.efa and node.rdmaResource"
        out.append(src.problem((*path, "resources"), message, "derived"))
    out += _security(profile, src, path, spec.get("securityContext") or {})
    for field, index, name in secret_references(spec):
        out.append(src.problem((*path, field, index), secret_message(name), "secret-on-command-line"))
    return out


_REFERENCE = re.compile(r"(?<!\$)\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def secret_references(container: dict) -> list[tuple[str, int, str]]:
    """(command or args, index, variable) where the kubelet would expand a Secret-sourced variable
    of the container into its command line."""
    secrets = {
        e.get("name")
        for e in container.get("env") or []
        if isinstance(e, dict) and (e.get("valueFrom") or {}).get("secretKeyRef")
    }
    return [
        (field, index, name)
        for field in ("command", "args")
        for index, arg in enumerate(container.get(field) or [])
        for name in _REFERENCE.findall(str(arg))[:1]
        if name in secrets
    ]


def secret_message(name: str) -> str:
    return (
        f"$({name}) puts a Secret on the process's command line (any process of the node sees it in ps, and "
        f"programs log their arguments); read {name} from the environment inside the program, or write $$({name}) "
        "for the literal text"
    )


def _amount(quantity: object) -> object:
    try:
        return gigabytes(quantity)  # type: ignore[arg-type]
    except (AttributeError, KeyError, ValueError):
        return str(quantity)


def _device(profile: Profile, resource: str) -> bool:
    node = profile.node
    return resource in (node.gpu_resource, *DEVICE_FIELDS, *node.rdma_resource) or resource.startswith("nvidia.com/")


def _security(profile: Profile, src: Source, path: tuple, context: dict) -> list[Problem]:
    security, out, at = profile.security, [], (*path, "securityContext")
    if not security.allow_privileged:
        for key in ("privileged", "allowPrivilegeEscalation"):
            if context.get(key):
                message = f"{key} gives the container the node; set security.allowPrivileged to allow it"
                out.append(src.problem((*at, key), message, "host-access"))
    added = (context.get("capabilities") or {}).get("add") or []
    kept = {"IPC_LOCK", *security.add_capabilities} if profile.node.needs_ipc_lock else set(security.add_capabilities)
    for index, capability in enumerate(added):
        if capability not in kept:
            message = f"capability {capability} is not kept for this profile; list it in security.addCapabilities"
            out.append(src.problem((*at, "capabilities", "add", index), message, "capability"))
    return out


def _containers(profile: Profile, src: Source, pod: PodSettings, own: set[str]) -> list[Problem]:
    out, seen = [], set()
    for entry in pod.sidecars:
        name = entry.value.get("name")
        if name in seen:
            out.append(src.problem((*entry.path, "name"), f"a second container named {name!r}", "duplicate"))
        seen.add(name)
        out += _container(profile, src, entry, own)
    return out


def _affinity(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    if pod.affinity is None or profile.node.gpu_product is None:
        return []
    required = (
        (pod.affinity.value.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    ) or {}
    for index, term in enumerate(required.get("nodeSelectorTerms") or []):
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == GPU_PRODUCT_LABEL:
                at = (*pod.affinity.path, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
                message = f"{GPU_PRODUCT_LABEL} is required from node.gpuProduct in every term; set it there"
                return [src.problem((*at, "nodeSelectorTerms", index), message, "derived")]
    return []


def _resources(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    out = []
    for resource, entry in pod.resources.items():
        if _device(profile, resource):
            field = DEVICE_FIELDS.get(resource, "node.gpus and parallelism")
            message = f"{resource} comes from the node shape; set {field} instead"
            out.append(src.problem(entry.path, message, "derived", key=True))
    return out


def check(profile: Profile, src: Source) -> list[Problem]:
    from lwsgen import runtimes
    from lwsgen.check.rules import env_problems

    parts = runtimes.get(profile.runtime).parts(profile)
    out = []
    for side in SIDES:
        pod, role = settings(profile, side), getattr(parts, side)
        own = {*OWN_CONTAINERS, *(name for name, _image, _command in role.tool_installers)}
        out += _metadata(src, pod) + _volumes(profile, src, pod) + _containers(profile, src, pod, own)
        out += _affinity(profile, src, pod) + _resources(profile, src, pod)
        out += env_problems(src, (side, "env"), getattr(profile, side).env)
        if pod.args and not role.args:
            message = (
                f"the {profile.runtime} {side} runs no command of its own to take arguments (it joins the "
                "leader's group); engine flags go in model.extraArgs"
            )
            out.append(src.problem((side, "args"), message, "not-applicable"))
    return list(dict.fromkeys(out))  # a shared field's problem once, not once per role


def warnings(profile: Profile, src: Source) -> list[Problem]:
    if not profile.security.allow_host_path:
        return []
    message = "hostPath volumes reach into the node's filesystem: a compromised container can read or change the node"
    return [src.problem(("security", "allowHostPath"), message, "host-access")]
