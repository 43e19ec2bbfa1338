"""The derived deployment: every number, name and object part, decided before any template runs.

Records across lwsgen are typing.NamedTuples with evaluated annotations (no `from __future__ import
annotations` in their modules): string annotations make NamedTuple compile a ForwardRef per field,
which doubled what building the records costs at every start.
"""

from typing import Any, NamedTuple


class PodTemplate(NamedTuple):
    """One pod template of the LeaderWorkerSet; None means the field is not written."""

    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler_name: str | None
    security_context: dict[str, Any]
    service_account: str | None
    automount_token: bool
    init_containers: list[dict[str, Any]] | None
    containers: list[dict[str, Any]]
    volumes: list[dict[str, Any]]
    node_selector: dict[str, str] | None
    affinity: dict[str, Any] | None
    tolerations: list[dict[str, Any]]
    priority_class: str | None
    image_pull_secrets: list[dict[str, str]] | None


class Deployment(NamedTuple):
    """Everything the templates place, for one profile."""

    source: str
    name: str
    namespace: str
    runtime: str
    world_size: int
    tensor: int
    pipeline: int
    group_size: int
    gpus_per_pod: int
    names: dict[str, str]
    meta: dict[str, dict[str, Any]]  # object key -> metadata mapping
    replicas: int | None
    startup_policy: str
    restart_policy: str
    rollout: dict[str, Any]
    leader: PodTemplate
    worker: PodTemplate
    leader_selector: dict[str, str]
    service: dict[str, Any]
    scripts: dict[str, str]
    role_rules: list[dict[str, list[str]]]
    podmonitor: dict[str, Any] | None
    rule_groups: list[dict[str, Any]] | None
    hpa: dict[str, Any] | None
    scaledobject: dict[str, Any] | None
    adapter_rules: dict[str, Any] | None
    volcano_queue: dict[str, Any] | None
    networkpolicy: dict[str, Any]
    # The NCCL preflight: a ConfigMap of scripts, then the objects of the test (one-off, applied by hand).
    nccl_test: dict[str, Any] | None
    eksctl: dict[str, Any] | None
    # Keys to render; each names a template (<key>.yaml.j2) and an output file (<key>.yaml).
    objects: tuple[str, ...]
    # Rendered files that are not cluster objects of this namespace, kept out of kustomization.yaml.
    extra_files: tuple[str, ...] = ()
