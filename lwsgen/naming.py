"""Every object name and label set derived from a profile, decided in one place."""

import hashlib
import re
from collections.abc import Mapping

from lwsgen.records import Record

LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
# The runtime, on every object and pod lwsgen writes (KServe puts the service's name there on its pods)
RUNTIME_LABEL = "app.kubernetes.io/name"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
# What the DisaggregatedSet controller puts on each role's LeaderWorkerSet and both its pod templates,
# over the templates' own labels (kubernetes-sigs/lws v0.10.0 pkg/utils/disaggregatedset/utils.go
# GenerateLabels, lines 103-111; pkg/controllers/disaggregatedset/lws_manager.go lines 68-88).
SET_NAME_LABEL = "disaggregatedset.x-k8s.io/name"
ROLE_LABEL = "disaggregatedset.x-k8s.io/role"
SLICE_LABEL = "disaggregatedset.x-k8s.io/slice"
REVISION_LABEL = "disaggregatedset.x-k8s.io/revision"
# Its headless Service per role LeaderWorkerSet: <lws>-prv (pkg/controllers/disaggregatedset/service_manager.go).
ROLE_SERVICE_SUFFIX = "-prv"
REVISION_CHARS = 8  # the revision in a role LeaderWorkerSet's name: 8 hex digits of its template's hash
# The pod-template annotation that changes with the launch scripts, so the pods roll with them.
SCRIPTS_HASH_ANNOTATION = "lwsgen/launch-scripts-sha256"
# The engine version a profile's runtimeVersion declared, and the image it was declared for: `lwsgen
# validate` holds the engine flags to it while the pods still run that image (output/podneeds.py).
RUNTIME_VERSION_ANNOTATION = "lwsgen/runtime-version"
RUNTIME_VERSION_IMAGE_ANNOTATION = "lwsgen/runtime-version-image"

# Suffixes of derived object names: <name><suffix>.
SUFFIXES = {"service": "-leader", "launch": "-launch", "launcher": "-launcher", "epp": "-epp"}
# The NCCL preflight's objects; its pods' host names are checked on their own (check/nccl.py).
NCCL_SUFFIX = "-nccl-test"
NCCL_DIGITS = 8  # <name>-nccl-test-<8 hex digits of its pods> (derive/nccl.py)

# StatefulSet pods carry controller-revision-hash = "<statefulset>-<10 chars>", at most 63;
# worker StatefulSets are named "<name>-<group>".
_REVISION_LABEL_ROOM = 63 - len("-") - len("-") - 10
_DNS_LABEL = DNS_LABEL = 63


class Names(Record):
    lws: str
    service: str  # the leader Service (LWS owns a headless Service named <lws>)
    launch: str  # the launch scripts ConfigMap
    launcher: str  # the leader's ServiceAccount, Role and RoleBinding
    epp: str  # the endpoint picker's Deployment, Service, ServiceAccount, Role, RoleBinding, ConfigMap
    nccl_test: str


def name_budget(highest_group_index: int) -> int:
    """Longest profile name whose derived names and LWS pod labels all stay within limits."""
    by_revision_label = _REVISION_LABEL_ROOM - len(str(highest_group_index))
    by_suffix = _DNS_LABEL - max(len(s) for s in SUFFIXES.values())
    return min(by_revision_label, by_suffix)


def object_names(name: str) -> Names:
    return Names(name, **{key: name + suffix for key, suffix in SUFFIXES.items()}, nccl_test=name + NCCL_SUFFIX)


def labels(name: str, runtime: str, component: str, extra: dict[str, str]) -> dict[str, str]:
    """Labels of every object; extra (profile labels) never overrides ours and is never selected on."""
    ours = {
        RUNTIME_LABEL: runtime,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "lwsgen",
    }
    return {**extra, **ours}


def leader_selector(name: str) -> dict[str, str]:
    """Leaders of this LeaderWorkerSet only: what its Service and monitors select."""
    return {LWS_NAME_LABEL: name, WORKER_INDEX_LABEL: "0"}


def series_label(label: str) -> str:
    """A pod label as Prometheus names it on a scraped series (podTargetLabels): _ for every other character."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def child_lws_name(name: str, slice_index: int, role: str) -> str:
    """A role's LeaderWorkerSet as the DisaggregatedSet controller names it, with the revision as
    zeros (its length is what matters): utils.go GenerateName, "%s-%d-%s-%s" (line 93)."""
    return f"{name}-{slice_index}-{'0' * REVISION_CHARS}-{role}"


def role_pods(name: str, role: str) -> dict[str, str]:
    """Every pod of one role of DisaggregatedSet `name`, in every slice and revision."""
    return {SET_NAME_LABEL: name, ROLE_LABEL: role}


def role_leaders(name: str, role: str) -> dict[str, str]:
    return {**role_pods(name, role), WORKER_INDEX_LABEL: "0"}


def set_pods(name: str) -> dict[str, str]:
    """Every pod of DisaggregatedSet `name`."""
    return {SET_NAME_LABEL: name}


def set_leaders(name: str) -> dict[str, str]:
    return {SET_NAME_LABEL: name, WORKER_INDEX_LABEL: "0"}


def router_pods(name: str) -> dict[str, str]:
    """The SGLang router's pods of a disaggregated profile."""
    return {"app.kubernetes.io/instance": name, "app.kubernetes.io/component": "router"}


def endpoint_picker_pods(name: str) -> dict[str, str]:
    """The endpoint picker's pods (gateway.enabled): its Deployment, Service and NetworkPolicy select them."""
    return {"app.kubernetes.io/instance": name, "app.kubernetes.io/component": "endpoint-picker"}


def own_pods(name: str) -> dict[str, str]:
    """Every pod of this LeaderWorkerSet."""
    return {LWS_NAME_LABEL: name}


def scripts_digest(scripts: Mapping[str, str]) -> str:
    """sha256 over the launch scripts by name: the value of SCRIPTS_HASH_ANNOTATION."""
    digest = hashlib.sha256()
    for name in sorted(scripts):
        digest.update(name.encode() + b"\0" + scripts[name].encode() + b"\0")
    return digest.hexdigest()


# Environment variables in every pod of a group: LeaderWorkerSet's, lwsgen's own, and any LWSGEN_*. A
# profile's env may not name them (check/containers.py); no hatch may change them (output/guards/frozen.py,
# which adds each runtime's Runtime.reserved_env).
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")
OWN_ENV = ("HF_TOKEN", "GROUP_KEY", "POD_NAME", "POD_NAMESPACE")
OWN_ENV_PREFIX = "LWSGEN_"
