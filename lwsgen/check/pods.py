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

from lwsgen.check import containers
from lwsgen.check.delivery import CACHE_MOUNT
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
# Pod annotations lwsgen derives or keeps, by key prefix (a prefix ending in '/' owns every key under
# it, any other that one key): what to do instead.
OWN_ANNOTATIONS = (
    ("k8s.v1.cni.cncf.io/networks", "lwsgen derives it; set node.networks instead"),
    ("leaderworkerset.sigs.k8s.io/", "lwsgen derives it; set scheduling.exclusiveTopology instead"),
    ("lwsgen/", "lwsgen's own; use a key of your own"),
    ("kueue.x-k8s.io/", "lwsgen derives it; set scheduling.requiredTopology instead"),
    ("scheduling.volcano.sh/", "lwsgen derives it; set scheduling.queue instead"),
    ("volcano.sh/", "lwsgen derives it; set scheduling.podGroupAnnotations instead"),
    ("container.apparmor.security.beta.kubernetes.io/", "refused: the containers keep the runtime's AppArmor profile"),
    ("seccomp.security.alpha.kubernetes.io/", "refused: the pods keep seccomp RuntimeDefault"),
)
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
PORT_NAME = re.compile(r"(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # IANA_SVC_NAME, at most 15
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
        why = key_problem(key) or owner
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
        elif not DNS_LABEL.fullmatch(str(name)) or len(str(name)) > 63:
            message = f"{name!r} is not a DNS-1123 label: lower-case letters, digits and '-', at most 63"
            out.append(src.problem((*entry.path, "name"), message, "bad-name"))
        if "hostPath" in entry.value and not profile.security.allow_host_path:
            message = "a hostPath volume reaches into the node's filesystem; set security.allowHostPath to allow it"
            out.append(src.problem((*entry.path, "hostPath"), message, "host-access", key=True))
        names.add(name)
    own_mounts = _own_mounts(profile)
    for entry in pod.volume_mounts:
        out += _mount(src, entry.path, entry.value, names)
        path = str(entry.value.get("mountPath", ""))
        taken = next((what for mount, what in own_mounts.items() if _overlaps(path, mount)), None)
        if taken:
            message = f"{path} overlaps where lwsgen mounts {taken}; mount elsewhere"
            out.append(src.problem((*entry.path, "mountPath"), message, "taken"))
    for entry in pod.sidecars:
        for index, mount in enumerate(entry.value.get("volumeMounts") or []):
            out += _mount(src, (*entry.path, "volumeMounts", index), mount, names)
    return out


def _mount(src: Source, at: tuple, mount: dict, names: set) -> list[Problem]:
    """A mount names a volume of the pod, and mounts lwsgen's own volumes read-only."""
    name = mount.get("name")
    if name not in names:
        allowed = ", ".join(sorted(n for n in names if n not in OWN_VOLUMES)) or "none"
        message = f"no volume {name!r} in this pod; volumes of the profile: {allowed}"
        return [src.problem((*at, "name"), message, "unknown-volume")]
    if name in OWN_VOLUMES and mount.get("readOnly") is not True:
        message = f"lwsgen's volume {name!r} is mounted read-only by anything but lwsgen (set readOnly: true)"
        return [src.problem((*at, "name"), message, "read-only")]
    return []


def _overlaps(path: str, mount: str) -> bool:
    path, mount = path.rstrip("/") or "/", mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount + "/") or mount.startswith(path + "/")


def _container(profile: Profile, src: Source, entry: Entry, taken: set[str], engine_ports: set[str]) -> list[Problem]:
    spec, path = entry.value, entry.path
    out = [
        src.problem((*path, *at), message, code)
        for at, message, code in containers.container(profile, spec, final=False, added=True)
    ]
    name = spec.get("name")
    if name in taken:
        out.append(src.problem((*path, "name"), f"lwsgen names a container {name!r}; choose another", "taken"))
    for index, port in enumerate(spec.get("ports") or []):
        if isinstance(port, dict) and port.get("name") in engine_ports:
            message = f"the engine's container has a port named {port['name']!r}; a pod's port names are unique"
            out.append(src.problem((*path, "ports", index, "name"), message, "taken"))
    return out


def _containers(
    profile: Profile, src: Source, pod: PodSettings, own: set[str], engine_ports: set[str]
) -> list[Problem]:
    out, seen, ports = [], set(), set()
    for entry in pod.sidecars:
        name = entry.value.get("name")
        if name in seen:
            out.append(src.problem((*entry.path, "name"), f"a second container named {name!r}", "duplicate"))
        elif not DNS_LABEL.fullmatch(str(name)) or len(str(name)) > 63:
            message = f"{name!r} is not a DNS-1123 label: lower-case letters, digits and '-', at most 63"
            out.append(src.problem((*entry.path, "name"), message, "bad-name"))
        seen.add(name)
        out += _container(profile, src, entry, own, engine_ports)
        out += _port_names(src, entry, ports)
    return out


def _port_names(src: Source, entry: Entry, seen: set) -> list[Problem]:
    out = []
    for index, port in enumerate(entry.value.get("ports") or []):
        name = port.get("name") if isinstance(port, dict) else None
        if name is None:
            continue
        at = (*entry.path, "ports", index, "name")
        if not PORT_NAME.fullmatch(str(name)) or len(str(name)) > 15:
            message = f"{name!r} is not a port name: lower-case letters, digits and '-' with a letter, at most 15"
            out.append(src.problem(at, message, "bad-name"))
        elif name in seen:
            out.append(src.problem(at, f"a second port named {name!r} in this pod", "duplicate"))
        seen.add(name)
    return out


LISTS = (("volumes", "name"), ("volumeMounts", "mountPath"), ("initContainers", "name"), ("containers", "name"))


def _duplicates(src: Source) -> list[Problem]:
    """One list naming the same thing twice: the later entry would silently replace the earlier."""
    out = []
    for owner in ((), *((side,) for side in SIDES)):
        fields = src.data if not owner else (src.data.get(owner[0]) or {})
        for field, key in LISTS:
            seen = set()
            for index, item in enumerate(fields.get(field) or []):
                value = item.get(key) if isinstance(item, dict) else None
                if isinstance(value, (str, int)) and value in seen:
                    message = f"a second entry with {key} {value!r}"
                    out.append(src.problem((*owner, field, index, key), message, "duplicate"))
                seen.add(value)
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
        if containers.is_device(profile, resource):
            field = containers.DEVICE_FIELDS.get(resource, "node.gpus and parallelism")
            message = f"{resource} comes from the node shape; set {field} instead"
            out.append(src.problem(entry.path, message, "derived", key=True))
    return out


POD_FIELDS = (
    "pod_annotations",
    "pod_labels",
    "affinity",
    "topology_spread_constraints",
    "volumes",
    "volume_mounts",
    "init_containers",
    "containers",
    "dns_config",
)


def uses_hatches(profile: Profile) -> bool:
    """Whether the profile sets any pod field, shared or per role (most do not: nothing to check)."""
    shared = any(getattr(profile, field) for field in POD_FIELDS)
    return shared or any(value not in (None, (), {}) for side in SIDES for value in getattr(profile, side))


def check(profile: Profile, src: Source) -> list[Problem]:
    from lwsgen import runtimes
    from lwsgen.check.rules import env_problems

    if not uses_hatches(profile):
        return []
    parts = runtimes.get(profile.runtime).parts(profile)
    out = _duplicates(src)
    for side in SIDES:
        pod, role = settings(profile, side), getattr(parts, side)
        own = {*OWN_CONTAINERS, *(name for name, _image, _command in role.tool_installers)}
        engine_ports = {port.name for port in role.ports}
        out += _metadata(src, pod) + _volumes(profile, src, pod) + _containers(profile, src, pod, own, engine_ports)
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
