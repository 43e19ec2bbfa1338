"""The pod escape hatches (podAnnotations, podLabels, affinity, topologySpreadConstraints, volumes,
volumeMounts, initContainers, containers, dnsConfig; per role under leader:/worker: with env, args
and resources too): what each role gets once the role's own settings are laid over the shared
ones, and the rules that keep a hatch from undoing what lwsgen derives or opening a hole.

Merging: maps key by key (the role's wins); lists of named things by name (volumes, containers,
init containers) or mountPath (volume mounts), the role's replacing the shared entry; affinity,
topologySpreadConstraints and dnsConfig whole (the role's, when given, instead of the shared).
Every merged entry keeps the profile path it came from, so a problem points at it."""

from __future__ import annotations

from typing import Any

from lwsgen.profile import Profile
from lwsgen.records import Record

SIDES = ("leader", "worker")
# Volumes and containers lwsgen itself puts into a pod (derive/pods.py, workload.py, delivery.py).
OWN_VOLUMES = ("dshm", "model", "launch-scripts", "tools", "engine-cache", "model-local")
OWN_CONTAINERS = ("leader", "worker", "await-model", "cache-model")
# disaggregatedset.x-k8s.io/*: the P/D controller's labels, which InferencePools and the router select on
OWN_LABEL_PREFIXES = ("app.kubernetes.io/", "leaderworkerset.sigs.k8s.io/", "disaggregatedset.x-k8s.io/")
# Kueue's queue label is scheduling.queue; Istio's inject label takes the pods out of the mesh
POD_LABEL_PREFIXES = (*OWN_LABEL_PREFIXES, "kueue.x-k8s.io/", "sidecar.istio.io/", "istio.io/", "linkerd.io/")
# Pod annotations lwsgen derives or keeps, by key prefix (a prefix ending in '/' owns every key under
# it, any other that one key): what to do instead.
NETWORK_OWNED = (
    "refused: the pod's network is the cluster's, fenced by lwsgen's NetworkPolicy (this would replace it, pin its "
    "addresses or opt out of the mesh); add attachments with node.networks"
)
OWN_ANNOTATIONS = (
    ("k8s.v1.cni.cncf.io/networks", "lwsgen derives it; set node.networks instead"),
    ("leaderworkerset.sigs.k8s.io/", "lwsgen derives it; set scheduling.exclusiveTopology instead"),
    ("lwsgen/", "lwsgen's own; use a key of your own"),
    ("kueue.x-k8s.io/", "lwsgen derives it; set scheduling.requiredTopology instead"),
    ("scheduling.volcano.sh/", "lwsgen derives it; set scheduling.queue instead"),
    ("volcano.sh/", "lwsgen derives it; set scheduling.podGroupAnnotations instead"),
    ("container.apparmor.security.beta.kubernetes.io/", "refused: the containers keep the runtime's AppArmor profile"),
    ("seccomp.security.alpha.kubernetes.io/", "refused: the pods keep seccomp RuntimeDefault"),
    # The pod's network is the cluster's, fenced by lwsgen's NetworkPolicy: no annotation replaces it,
    # pins its addresses or takes the pod out of the mesh that enforces policy.
    ("v1.multus-cni.io/", NETWORK_OWNED),
    ("cni.projectcalico.org/", NETWORK_OWNED),
    ("sidecar.istio.io/", NETWORK_OWNED),
    ("traffic.sidecar.istio.io/", NETWORK_OWNED),
    *((prefix, NETWORK_OWNED) for prefix in ("proxy.istio.io/", "ambient.istio.io/", "istio.io/", "linkerd.io/")),
    *((prefix, NETWORK_OWNED) for prefix in ("config.linkerd.io/", "ovn.kubernetes.io/", "k8s.ovn.org/")),
)
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


# Of those, the ones a LeaderWorkerSet's controller or a gang scheduler reads on the set itself: refused in
# the set-wide `annotations` too (check/metadata.py), or the checks on the scheduling fields (a Volcano gang
# that could never start, a queue without its Queue) are stepped around.
SET_OWNED_PREFIXES = (
    "leaderworkerset.sigs.k8s.io/",
    "scheduling.volcano.sh/",
    "volcano.sh/",
    "kueue.x-k8s.io/",
    "lwsgen/",
)


def annotation_owner(key: str) -> str | None:
    """The profile field that sets a pod annotation lwsgen derives (a prefix ending in '/' owns
    every key under it; any other, that one key)."""
    for prefix, field in OWN_ANNOTATIONS:
        if key.startswith(prefix) if prefix.endswith("/") else key == prefix:
            return field
    return None


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
