"""The values templates place: records named for what they mean, never for the Kubernetes keys
(those are written once, in templates/). None means 'not written'.

Records are lwsgen.records.Record (tuples with named fields, cheaper to declare than NamedTuple).
"""

from typing import Any

from lwsgen.records import Record
from lwsgen.runtimes.base import EnvVar, Port

__all__ = ["EnvVar", "Port"]  # plugin data (runtimes/base.py), placed by the same templates


class Several(Record):
    """Values of one kind for several objects in its file (one per role of a DisaggregatedSet)."""

    items: tuple


class Meta(Record):
    name: str
    namespace: str | None
    labels: dict[str, str]
    annotations: dict[str, str] | None


class EmptyDir(Record):
    medium: str | None = None
    size_limit: str | None = None


class ClaimSource(Record):
    claim_name: str
    read_only: bool


class ConfigMapSource(Record):
    name: str
    default_mode: int = 0o555


class Volume(Record):
    """A pod volume; exactly one of its sources is set (ephemeral: a generic ephemeral volume,
    derive/delivery.EphemeralClaim)."""

    name: str
    empty_dir: EmptyDir | None = None
    claim: ClaimSource | None = None
    config_map: ConfigMapSource | None = None
    ephemeral: Any = None


class Mount(Record):
    name: str
    path: str
    read_only: bool | None = None


class Probe(Record):
    """An HTTP GET probe, or a gRPC health probe when grpc_service is set (path None, port a number)."""

    path: str | None
    port: str | int
    period: int
    timeout: int
    failure_threshold: int
    grpc_service: str | None = None
    initial_delay: int | None = None
    scheme: str | None = None  # said where a merge could keep another's (KServe's presets: platforms.py)


class Resources(Record):
    """Requests and limits; lwsgen asks for exactly what it limits."""

    requests: dict[str, str]
    limits: dict[str, str]


class ContainerSecurity(Record):
    drop: tuple[str, ...]
    add: tuple[str, ...] | None
    run_as_non_root: bool | None
    run_as_user: int | None
    read_only_root: bool | None = None
    privileged: bool = False  # security.allowPrivileged; Kubernetes then requires privilege escalation allowed


class PodSecurity(Record):
    run_as_non_root: bool | None
    run_as_user: int | None
    run_as_group: int | None


class Container(Record):
    name: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...] | None
    env: tuple[EnvVar, ...]
    ports: tuple[Port, ...]
    resources: Resources
    mounts: tuple[Mount, ...]
    startup_probe: Probe | None
    readiness_probe: Probe | None
    security: ContainerSecurity
    liveness_probe: Probe | None = None
    extra_mounts: tuple[dict[str, Any], ...] = ()  # volumeMounts from the profile, as written
    restart_policy: str | None = None  # Always: an init container that keeps running (a native sidecar)


class Pod(Record):
    """A pod template: metadata and spec."""

    labels: dict[str, str]
    annotations: dict[str, str] | None
    scheduler_name: str | None
    service_account: str | None
    automount_token: bool
    security: PodSecurity
    priority_class: str | None
    image_pull_secrets: tuple[str, ...]
    node_selector: dict[str, str] | None
    affinity: Any  # derive/pods.Affinity: node.gpuProduct's required term within the profile's affinity
    tolerations: tuple[dict[str, Any], ...] | None
    subdomain: str | None
    restart_policy: str | None
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    volumes: tuple[Volume, ...]
    host_network: bool | None = None  # security.allowHostNetwork (with dns_policy ClusterFirstWithHostNet)
    host_ipc: bool | None = None
    dns_policy: str | None = None
    termination_grace: int | None = None  # seconds; None: Kubernetes' 30
    # The profile's pod hatches, as written (hardened where lwsgen hardens its own: derive/hatches.py).
    topology_spread: tuple[dict[str, Any], ...] | None = None
    dns_config: dict[str, Any] | None = None
    extra_init_containers: tuple[dict[str, Any], ...] = ()
    sidecars: tuple[dict[str, Any], ...] = ()
    extra_volumes: tuple[dict[str, Any], ...] = ()


class Deployment(Record):
    """Everything one profile renders to: the typed profile, and the values of each emitted kind."""

    profile: Any  # lwsgen.profile.Profile
    source: str
    objects: dict[str, Any]  # kind key -> the values its template places, in the table's order

    @property
    def name(self) -> str:
        return self.profile.name
