"""The values templates place: records named for what they mean, never for the Kubernetes keys
(those are written once, in templates/). None means 'not written'.

Records are typing.NamedTuples with evaluated annotations (no `from __future__ import annotations`
in this module): string annotations make NamedTuple compile a ForwardRef per field, which doubled
what building the records costs at every start.
"""

from typing import Any, NamedTuple

from lwsgen.runtimes.base import EnvVar, Port

__all__ = ["EnvVar", "Port"]  # plugin data (runtimes/base.py), placed by the same templates


class Meta(NamedTuple):
    name: str
    namespace: str | None
    labels: dict[str, str]
    annotations: dict[str, str] | None


class EmptyDir(NamedTuple):
    medium: str | None = None
    size_limit: str | None = None


class ClaimSource(NamedTuple):
    claim_name: str
    read_only: bool


class ConfigMapSource(NamedTuple):
    name: str
    default_mode: int = 0o555


class Volume(NamedTuple):
    """A pod volume; exactly one of its sources is set."""

    name: str
    empty_dir: EmptyDir | None = None
    claim: ClaimSource | None = None
    config_map: ConfigMapSource | None = None


class Mount(NamedTuple):
    name: str
    path: str
    read_only: bool | None = None


class Probe(NamedTuple):
    path: str
    port: str
    period: int
    timeout: int
    failure_threshold: int


class Resources(NamedTuple):
    """Requests and limits; lwsgen asks for exactly what it limits."""

    requests: dict[str, str]
    limits: dict[str, str]


class ContainerSecurity(NamedTuple):
    drop: tuple[str, ...]
    add: tuple[str, ...] | None
    run_as_non_root: bool | None
    run_as_user: int | None
    read_only_root: bool | None = None


class PodSecurity(NamedTuple):
    run_as_non_root: bool | None
    run_as_user: int | None
    run_as_group: int | None


class Container(NamedTuple):
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


class Pod(NamedTuple):
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
    gpu_product: str | None  # required node affinity on nvidia.com/gpu.product
    tolerations: tuple[dict[str, Any], ...] | None
    subdomain: str | None
    restart_policy: str | None
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    volumes: tuple[Volume, ...]


class Deployment(NamedTuple):
    """Everything one profile renders to: the typed profile, and the values of each emitted kind."""

    profile: Any  # check.profile.Profile
    source: str
    objects: dict[str, Any]  # kind key -> the values its template places, in the table's order

    @property
    def name(self) -> str:
        return self.profile.name
