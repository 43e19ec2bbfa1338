"""The typed, frozen profile: built once from the schema-valid data with its defaults filled in, and
the numbers every later stage derives from it (world size, group size, GPUs per pod, highest group
index), computed here and nowhere else.

Fields are the schema's, in snake_case (`node.gpuProduct` is `profile.node.gpu_product`); a field
the profile leaves out and the schema gives no default is None (a mapping: empty, a list: empty).
Mappings are FrozenDicts and lists tuples, so nothing downstream can change the profile it was given.
tests/test_profile.py proves every schema field has its attribute.

No `from __future__ import annotations`: build() reads the records' evaluated annotations.
"""

import re
import types
import typing
from typing import Any

from lwsgen.records import Record


class FrozenDict(dict):
    """A dict that refuses changes (a dict subclass, so json and the templates take it as it is)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a profile is frozen")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self):  # pickle (batch workers) rebuilds it whole, never item by item
        return FrozenDict, (dict(self),)


Map = FrozenDict  # a mapping whose keys are data (labels, env names, resource names)


class TokenSecret(Record):
    name: str
    key: str


class ModelSource(Record):
    repo: str
    revision: str
    allow_patterns: tuple
    file: str | None
    image: str | None
    download_gbps: float


class Model(Record):
    path: str  # where the engine reads the weights; derived from model.source when it is set
    served_name: str | None
    token_secret: TokenSecret | None
    extra_args: tuple
    engine_models: tuple
    llm_api_options: Map
    family: str | None
    params: float | None
    dtype: str | None
    load_timeout_seconds: int | None  # None: derived (check/budget.py)
    size_gb: float | None
    start_seconds: int
    source: ModelSource | None
    attention_heads: int | None
    kv_heads: int | None
    layers: int | None


class Parallelism(Record):
    tensor: int
    pipeline: int
    data: int
    expert: bool
    all_to_all: str


class Node(Record):
    gpus: int
    gpu_resource: str
    gpu_product: str | None
    gpu_product_unlisted: bool
    instance_type: str | None
    efa: int
    rdma_resource: Map
    networks: tuple
    cpu: str | int | None
    memory: str | int | None
    ephemeral_storage: str | int | None
    shm_size: str | int | None
    node_selector: Map
    tolerations: tuple

    @property
    def needs_ipc_lock(self) -> bool:
        """RDMA (EFA or InfiniBand) pins memory, which needs CAP_IPC_LOCK."""
        return bool(self.efa or self.rdma_resource)


class ClaimSpec(Record):
    size: str | int
    storage_class_name: str | None
    access_modes: tuple


class LocalCache(Record):
    volume: str
    storage_class_name: str | None
    size: str | int
    read_gbps: float


class Storage(Record):
    claim_name: str
    mount_path: str
    read_only: bool
    read_gbps: float
    create: ClaimSpec | None
    local_cache: LocalCache | None


class Autoscaling(Record):
    enabled: bool
    engine: str
    min_replicas: int
    max_replicas: int
    metric: str
    target: float
    scale_down_stabilization_seconds: int
    scale_up_period_seconds: int
    prometheus_address: str
    idle_replicas: int | None
    activation_target: float | None
    behavior: Map  # scaleUp / scaleDown: Kubernetes HPAScalingRules, replacing lwsgen's for that direction

    @property
    def to_zero(self) -> bool:
        """Some time with no group at all: minReplicas 0, or KEDA's idle count."""
        return self.enabled and (self.min_replicas == 0 or self.idle_replicas == 0)


class ExtraPort(Record):
    name: str
    port: int
    target_port: str | int | None
    protocol: str


class Service(Record):
    type: str
    annotations: Map
    port: int | None
    external_traffic_policy: str | None
    extra_ports: tuple[ExtraPort, ...]
    load_balancer_source_ranges: tuple
    allowed_sources: tuple
    allowed_namespaces: tuple
    api_key_secret: TokenSecret | None


class ParentRef(Record):
    name: str
    namespace: str | None
    section_name: str | None


class PathMatch(Record):
    type: str
    value: str


class Scorers(Record):
    queue: float
    kv_cache: float
    prefix_cache: float


class EndpointPicker(Record):
    image: str
    replicas: int
    cpu: str | int
    memory: str | int
    scorers: Scorers


class Gateway(Record):
    enabled: bool
    parent_refs: tuple
    hostnames: tuple
    path: PathMatch
    request_timeout: str
    proxy_namespaces: tuple
    proxy_cidrs: tuple
    failure_mode: str
    endpoint_picker: EndpointPicker


class Alerts(Record):
    enabled: bool
    kv_cache_usage: float
    gpu_busy_percent: float
    hold_for: str
    runbook_url: str


class Dashboard(Record):
    enabled: bool
    labels: Map
    annotations: Map


class Monitoring(Record):
    enabled: bool
    prometheus_labels: Map
    interval: str
    namespace: str
    alerts: Alerts
    dashboard: Dashboard


class NetworkTopology(Record):
    mode: str | None
    highest_tier_allowed: int | None


class Scheduling(Record):
    scheduler: str
    queue: str
    priority_class_name: str
    exclusive_topology: str
    required_topology: str
    queue_capacity: Map
    pod_group_annotations: Map
    network_topology: NetworkTopology | None


# The oldest LeaderWorkerSet release that honours each feature.
MIN_LWS = {
    "RecreateGroupAfterStart": (0, 9),
    "partition": (0, 7),
    "volcano": (0, 7),
    "LWS_WORKER_INDEX": (0, 6),
}


class Lws(Record):
    version: str
    restart_policy: str
    startup_policy: str
    max_unavailable: int | str | None
    max_surge: int | str | None
    partition: int | None

    @property
    def version_tuple(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    def supports(self, feature: str) -> bool:
        return self.version_tuple >= MIN_LWS[feature]


class Launch(Record):
    rendezvous_timeout_seconds: int
    mode: str | None  # None: the runtime's default for its engine version
    kubectl_image: str


class NcclTest(Record):
    enabled: bool
    launcher: str
    image: str
    min_bus_bandwidth_gbps: float
    max_bytes: str
    timeout_seconds: int
    all_reduce_perf: str
    mpirun: str
    env: Map
    hugepages_2mi: str | int | None


class Security(Record):
    network_policy: bool
    run_as_user: int | None
    add_capabilities: tuple
    allow_host_network: bool
    allow_host_ipc: bool
    allow_privileged: bool
    allow_host_path: bool
    allow_node_volumes: bool


class ArgoCD(Record):
    sync_waves: bool


class GitOps(Record):
    argocd: ArgoCD


class RoleSettings(Record):
    """leader: / worker: over the pod fields of both roles (None: the shared value)."""

    env: Map
    args: tuple
    resources: Map
    pod_annotations: Map
    pod_labels: Map
    affinity: Any
    topology_spread_constraints: Any
    volumes: tuple
    volume_mounts: tuple
    init_containers: tuple
    containers: tuple
    dns_config: Any


class DisaggregatedPlacement(Record):
    type: str
    topology_key: str | None


class Router(Record):
    image: str
    replicas: int
    cpu: str | int
    memory: str | int


class Disaggregation(Record):
    slices: int
    placement: DisaggregatedPlacement
    transfer_backend: str | None  # None: the engine's default
    ib_devices: tuple
    router: Router
    sidecar_image: str


class Patch(Record):
    target: Map
    patch: Map | None
    json_patch: Any


class Profile(Record):
    name: str
    namespace: str
    runtime: str
    platform: str  # lws, kserve (LLMInferenceService) or kserve-isvc (InferenceService + ServingRuntime)
    image: str
    runtime_version: str | None
    allow_latest_image: bool
    image_pull_secrets: tuple
    kubernetes_version: str
    model: Model
    parallelism: Parallelism
    node: Node
    storage: Storage | None
    env: Map
    replicas: int
    autoscaling: Autoscaling
    service: Service
    gateway: Gateway
    monitoring: Monitoring
    scheduling: Scheduling
    lws: Lws
    launch: Launch
    nccl_test: NcclTest
    security: Security
    gitops: GitOps
    labels: Map
    annotations: Map
    pod_annotations: Map
    pod_labels: Map
    affinity: Map
    topology_spread_constraints: tuple
    volumes: tuple
    volume_mounts: tuple
    init_containers: tuple
    containers: tuple
    dns_config: Map
    leader: RoleSettings
    worker: RoleSettings
    # role name -> that role's whole Profile (check/roles.py); empty: one LeaderWorkerSet
    roles: Map
    disaggregation: Disaggregation
    patches: tuple[Patch, ...]
    templates: str | None

    @property
    def world_size(self) -> int:
        """GPUs of one group: data x tensor x pipeline."""
        par = self.parallelism
        return par.data * par.tensor * par.pipeline

    @property
    def group_size(self) -> int:
        """Pods of one group: one per node's worth of GPUs, at least one."""
        return max(self.world_size // self.node.gpus, 1)

    @property
    def gpus_per_pod(self) -> int:
        return min(self.node.gpus, self.world_size)

    @property
    def groups_at_most(self) -> int:
        """The most groups that can exist: maxReplicas under autoscaling, else replicas."""
        return self.autoscaling.max_replicas if self.autoscaling.enabled else self.replicas

    @property
    def highest_group_index(self) -> int:
        return max(self.groups_at_most - 1, 0)

    @property
    def served_name(self) -> str:
        """The model clients request: model.servedName, else what the engine itself would serve (vLLM's
        and SGLang's served_model_name defaults to the model as given, vllm/config/model.py@v0.33.0
        and sglang srt/server_args.py@v0.5.23): the Hub id (model.source.repo, or model.path when it is
        one), else model.path."""
        if self.model.served_name:
            return self.model.served_name
        return self.model.source.repo if self.model.source is not None else self.model.path

    @property
    def fixed_replicas(self) -> int | None:
        """The LWS replica count lwsgen writes; None when an autoscaler owns it."""
        return None if self.autoscaling.enabled else self.replicas


# Schema keys that the camelCase -> snake_case rule does not spell as the attribute.
KEYS = {
    "min_bus_bandwidth_gbps": "minBusBandwidthGBps",
    "hugepages_2mi": "hugepages2Mi",
    "allow_host_ipc": "allowHostIPC",
    "proxy_cidrs": "proxyCIDRs",
    "size_gb": "sizeGB",
    "read_gbps": "readGBps",
    "download_gbps": "downloadGBps",
    "runbook_url": "runbookURL",
}


def schema_key(attribute: str) -> str:
    if attribute in KEYS:
        return KEYS[attribute]
    head, *rest = attribute.split("_")
    return head + "".join(part.capitalize() for part in rest)


def attribute_name(key: str) -> str:
    inverse = {v: k for k, v in KEYS.items()}
    return inverse.get(key) or re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenDict({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen profile value as plain, mutable data (dicts and lists)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [thaw(v) for v in value]
    return value


def _record_type(annotation: Any) -> type | None:
    """The record class an annotation names (directly or as `X | None`), if any."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for option in options:
        if isinstance(option, type) and issubclass(option, tuple) and hasattr(option, "_fields"):
            return option
    return None


def build(cls: type, data: dict[str, Any]) -> Any:
    values = {}
    for attribute, annotation in cls.__annotations__.items():
        value = data.get(schema_key(attribute))
        record = _record_type(annotation)
        if record is not None:
            values[attribute] = None if value is None else build(record, value)
        elif annotation is Map:
            values[attribute] = _freeze(value or {})
        elif typing.get_origin(annotation) is tuple and _record_type(typing.get_args(annotation)[0]):
            values[attribute] = tuple(build(typing.get_args(annotation)[0], item) for item in value or [])
        elif annotation is tuple:
            values[attribute] = _freeze(value or [])
        else:
            values[attribute] = _freeze(value)
    return cls(**values)


def from_data(data: dict[str, Any]) -> Profile:
    """The typed profile of schema-valid data with its defaults filled in."""
    return build(Profile, data)


def kept_capabilities(profile: Profile, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Kept capabilities: IPC_LOCK where RDMA must pin memory, then what the profile and the caller add."""
    keep = ["IPC_LOCK"] if profile.node.needs_ipc_lock else []
    keep += [c for c in (*profile.security.add_capabilities, *extra) if c not in keep]
    return tuple(keep)
