"""The one pod builder: every pod lwsgen emits (the LeaderWorkerSet's leader and worker, both NCCL
test launchers) is built here, so a pod on a GPU node always gets the node shape of the profile:
the same node selection, GPU product affinity, tolerations, scheduler and priority, GPU/EFA/RDMA/
CPU/memory requests (= limits), /dev/shm size, the profile's env, pull secrets and security."""

from __future__ import annotations

import math
from typing import Any

from lwsgen.check.budget import budget as start_budget
from lwsgen.derive.model import (
    ClaimSource,
    ConfigMapSource,
    Container,
    ContainerSecurity,
    EmptyDir,
    EnvVar,
    Mount,
    Pod,
    PodSecurity,
    Probe,
    Resources,
    Volume,
)
from lwsgen.derive.scheduling import Placement
from lwsgen.profile import Profile, kept_capabilities
from lwsgen.records import Record
from lwsgen.runtimes.base import SCRIPTS_MOUNT, Port, Probes, literal

SHM_VOLUME, MODEL_VOLUME, LAUNCH_VOLUME = "dshm", "model", "launch-scripts"
PULL_POLICY = "IfNotPresent"
PROBE_PERIOD = 10
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"  # Multus: the pod's secondary networks
INIT_USER = 65532  # small helper containers only copy a file: never root
HELPER_RESOURCES = {"cpu": "100m", "memory": "64Mi"}


def env_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def profile_env(profile: Profile) -> tuple[EnvVar, ...]:
    """The profile's own env, as every pod on its nodes gets it (literal: see runtimes.base.literal)."""
    return env_values(profile.env)


def env_values(values: dict[str, object]) -> tuple[EnvVar, ...]:
    return tuple(EnvVar(name, value=literal(env_text(value))) for name, value in values.items())


def equal(amounts: dict[str, str]) -> Resources:
    ordered = dict(sorted(amounts.items()))
    return Resources(ordered, dict(ordered))


def node_amounts(profile: Profile) -> dict[str, str]:
    """What one pod asks of its node: its GPUs, EFA and RDMA devices, CPU, memory and disk."""
    node = profile.node
    amounts = {node.gpu_resource: str(profile.gpus_per_pod)}
    if node.efa:
        amounts["vpc.amazonaws.com/efa"] = str(node.efa)
    amounts.update({name: str(count) for name, count in node.rdma_resource.items()})
    for value, resource in ((node.cpu, "cpu"), (node.memory, "memory"), (node.ephemeral_storage, "ephemeral-storage")):
        if value is not None:
            amounts[resource] = str(value)
    return amounts


def shm(profile: Profile) -> tuple[Volume, Mount]:
    """/dev/shm in memory, of node.shmSize when set (NCCL and the engines use it between ranks)."""
    size = profile.node.shm_size
    volume = Volume(SHM_VOLUME, empty_dir=EmptyDir("Memory", None if size is None else str(size)))
    return volume, Mount(SHM_VOLUME, "/dev/shm")


def model_storage(profile: Profile, read_only: bool | None = None) -> tuple[tuple[Volume, ...], tuple[Mount, ...]]:
    """The model claim and its mount; read-only as storage.readOnly says, unless the caller says."""
    storage = profile.storage
    if storage is None:
        return (), ()
    read_only = storage.read_only if read_only is None else read_only
    return (
        (Volume(MODEL_VOLUME, claim=ClaimSource(storage.claim_name, read_only)),),
        (Mount(MODEL_VOLUME, storage.mount_path, read_only),),
    )


def launch_scripts(config_map: str) -> tuple[Volume, Mount]:
    """The launch-scripts ConfigMap, mounted where script_command runs them from."""
    return config_map_volume(LAUNCH_VOLUME, config_map, SCRIPTS_MOUNT)


def config_map_volume(name: str, config_map: str, path: str) -> tuple[Volume, Mount]:
    return Volume(name, config_map=ConfigMapSource(config_map)), Mount(name, path, True)


def container_security(profile: Profile, add: tuple[str, ...] | None = None) -> ContainerSecurity:
    """Every capability dropped; `add` (default: kept_capabilities(profile)) kept; the profile's user."""
    user = profile.security.run_as_user
    kept = kept_capabilities(profile) if add is None else add
    privileged = profile.security.allow_privileged
    return ContainerSecurity(("ALL",), kept or None, True if user else None, user or None, None, privileged)


def helper_security() -> ContainerSecurity:
    return ContainerSecurity(("ALL",), None, True, INIT_USER, True)


def pod_security(profile: Profile) -> PodSecurity:
    user = profile.security.run_as_user or None
    return PodSecurity(True if user else None, user, user)


def probes(profile: Profile, spec: Probes) -> tuple[Probe, Probe]:
    """Startup covers the rendezvous (the launch script waits for the group before the engine
    listens) plus the model load budget; readiness three misses. Each call may take the runtime's
    timeout (an engine whose health check generates a token needs longer) and never outlasts its period."""
    seconds = start_budget(profile).startup_probe
    timeout = spec.readiness_timeout
    period = max(PROBE_PERIOD, timeout)
    checks = math.ceil(seconds / period)
    return (
        Probe(spec.startup_path, spec.port, period, timeout, checks),
        Probe(spec.readiness_path, spec.port, period, timeout, 3),
    )


def container(
    name: str,
    image: str,
    command: tuple[str, ...],
    *,
    args: tuple[str, ...] = (),
    env: tuple[EnvVar, ...] = (),
    ports: tuple[Port, ...] = (),
    resources: Resources,
    mounts: tuple[Mount, ...] = (),
    probes: tuple[Probe, Probe] | None = None,
    security: ContainerSecurity,
) -> Container:
    startup, readiness = probes or (None, None)
    return Container(
        name, image, tuple(command), tuple(args) or None, env, ports, resources, mounts, startup, readiness, security
    )


def helper_container(name: str, image: str, command: tuple[str, ...], mounts: tuple[Mount, ...]) -> Container:
    """A small init container (copies a tool into a shared emptyDir)."""
    return container(name, image, command, resources=equal(HELPER_RESOURCES), mounts=mounts, security=helper_security())


def affinity(gpu_product: str | None, written: dict[str, Any] | None, nodes_only: bool = False) -> Affinity | None:
    """The profile's affinity (if any) with node.gpuProduct required in every required node
    selector term (terms are alternatives: each must ask for the product); nodes_only: its node
    affinity alone (the NCCL test runs on the serving nodes, not beside or apart from its pods)."""
    written = written or {}
    if nodes_only:
        written = {key: value for key, value in written.items() if key == "nodeAffinity"}
    node = written.get("nodeAffinity") or {}
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    terms = tuple(NodeTerm(tuple(t.get("matchExpressions") or ()), t.get("matchFields")) for t in required or ())
    if gpu_product is not None and not terms:
        terms = (NodeTerm(()),)
    preferred = node.get("preferredDuringSchedulingIgnoredDuringExecution")
    nodes = NodeAffinity(terms or None, preferred) if terms or preferred else None
    if nodes is None and not written.get("podAffinity") and not written.get("podAntiAffinity"):
        return None
    return Affinity(gpu_product, nodes, written.get("podAffinity"), written.get("podAntiAffinity"))


def pod(
    profile: Profile,
    placement: Placement,
    *,
    labels: dict[str, str],
    containers: tuple[Container, ...],
    volumes: tuple[Volume, ...],
    annotations: dict[str, str] | None = None,
    on_gpu_node: bool = True,
    init_containers: tuple[Container, ...] = (),
    service_account: str | None = None,
    subdomain: str | None = None,
    restart_policy: str | None = None,
    extras: Any = None,
) -> Pod:
    """A pod template. On a GPU node (the default) it takes the profile's node selection, GPU product
    affinity, tolerations, scheduler and priority; every pod takes pull secrets and pod security."""
    node = profile.node
    # Pods other than the LWS roles (the NCCL test's) take the node placement of the shared affinity.
    placed = extras.affinity if extras is not None else profile.affinity
    extras = extras or NO_EXTRAS
    labels = {**extras.labels, **labels}
    annotations = {**extras.annotations, **(annotations or {})}
    selector = {}
    if on_gpu_node and node.instance_type is not None:
        selector["node.kubernetes.io/instance-type"] = node.instance_type
    if on_gpu_node:
        selector.update(node.node_selector)
    if on_gpu_node and node.networks:
        annotations = {**(annotations or {}), NETWORKS_ANNOTATION: ",".join(node.networks)}
    host = profile.security
    return Pod(
        host_network=True if on_gpu_node and host.allow_host_network else None,
        dns_policy="ClusterFirstWithHostNet" if on_gpu_node and host.allow_host_network else None,
        host_ipc=True if on_gpu_node and host.allow_host_ipc else None,
        labels=labels,
        annotations=annotations or None,
        scheduler_name=placement.scheduler_name if on_gpu_node else None,
        service_account=service_account,
        automount_token=service_account is not None,
        security=pod_security(profile),
        priority_class=(profile.scheduling.priority_class_name or None) if on_gpu_node else None,
        image_pull_secrets=profile.image_pull_secrets,
        node_selector=selector or None,
        affinity=affinity(node.gpu_product, placed, nodes_only=extras is NO_EXTRAS) if on_gpu_node else None,
        tolerations=node.tolerations if on_gpu_node else None,
        subdomain=subdomain,
        restart_policy=restart_policy,
        init_containers=init_containers,
        containers=containers,
        volumes=volumes,
        topology_spread=extras.topology_spread,
        dns_config=extras.dns_config,
        extra_init_containers=extras.init_containers,
        sidecars=extras.containers,
        extra_volumes=extras.volumes,
    )


class NodeTerm(Record):
    """One required node selector term of the profile's affinity, as written."""

    expressions: tuple[dict[str, Any], ...]
    fields: Any = None


class NodeAffinity(Record):
    required: tuple[NodeTerm, ...] | None
    preferred: Any = None  # preferred node terms, as written


class Affinity(Record):
    """A pod's affinity: node.gpuProduct (the template adds it to every required term) and what
    the profile's affinity says."""

    gpu_product: str | None
    nodes: NodeAffinity | None
    pods: Any = None  # podAffinity, as written
    apart: Any = None  # podAntiAffinity, as written


class PodExtras(Record):
    """What the profile's pod hatches add to a pod (derive/hatches.py builds it)."""

    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    affinity: dict[str, Any] | None = None
    topology_spread: tuple[dict[str, Any], ...] | None = None
    dns_config: dict[str, Any] | None = None
    init_containers: tuple[dict[str, Any], ...] = ()
    containers: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()


NO_EXTRAS = PodExtras()
