"""Kubernetes API rules the OpenAPI schemas do not encode, checked on every object in render and
validate: object names (DNS-1123 subdomain; a Service's a DNS-1035 label), container names
(DNS-1123 labels, unique in a pod), port names (IANA service names: at most 15 characters,
lower-case letters, digits and '-', a letter among them, no '-' at either end or twice in a row;
unique in a container) and numbers (1-65535), env var names, ConfigMap and Secret data keys,
Service ports (validateServicePort: named when several, names unique, port/protocol unique), label
keys and values and annotation keys (qualified names) with the 256 KiB annotation total, on every
object and pod template. The rules follow
k8s.io/apimachinery/pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain,
IsDNS1035Label, IsValidPortName, IsValidPortNum, IsEnvVarName, IsConfigMapKey, IsQualifiedName,
IsValidLabelValue), k8s.io/apimachinery/pkg/api/validation/objectmeta.go (ValidateAnnotations,
TotalAnnotationSizeLimitB) and the pod rules of
k8s.io/kubernetes/pkg/apis/core/validation/validation.go (validateContainers: duplicate names,
validateContainerPorts; validateVolumeMounts: a mount names a volume of its pod, at a path of its
own, with a relative subPath); the rules of one
kind are in kindrules.py, whose server_errors gives both."""

import re
from collections.abc import Iterator
from typing import Any

from lwsgen.problems import Finding

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
ANNOTATIONS_LIMIT = 256 * 1024  # bytes of keys plus values (TotalAnnotationSizeLimitB)
DATA_FIELDS = {"ConfigMap": ("data", "binaryData"), "Secret": ("data", "stringData")}


def port_name_problem(name: str) -> str | None:
    if not 1 <= len(name) <= 15:
        return "must be 1 to 15 characters (an IANA service name)"
    if not _PORT_NAME_CHARS.fullmatch(name):
        return "may hold only lower-case letters, digits and '-'"
    if not re.search(r"[a-z]", name):
        return "must contain at least one letter"
    if name.startswith("-") or name.endswith("-") or "--" in name:
        return "may not begin or end with '-' or hold '--'"
    return None


def qualified_name_problem(key: str) -> str | None:
    """IsQualifiedName: an optional DNS-1123 subdomain prefix and '/', then a name of at most 63
    characters of letters, digits, '-', '_' and '.', alphanumeric at both ends."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or "/" in prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "its prefix before '/' must be a DNS-1123 subdomain (lower-case, at most 253 characters)"
    if len(name) > 63 or not QUALIFIED_NAME_PART.fullmatch(name):
        return "its name must be 1 to 63 letters, digits, '-', '_' or '.', beginning and ending alphanumeric"
    return None


def label_value_problem(value: str) -> str | None:
    """IsValidLabelValue: empty, or at most 63 characters shaped like a qualified name's name part."""
    if value == "" or (len(value) <= 63 and QUALIFIED_NAME_PART.fullmatch(value)):
        return None
    return "a label value must be empty or 1 to 63 letters, digits, '-', '_' or '.', beginning and ending alphanumeric"


def _at_least(version: str, minimum: tuple[int, int]) -> bool:
    return tuple(int(part) for part in version.split(".")[:2]) >= minimum


# Feature gates on by default from these releases (k8s.io/kubernetes v1.36.3 pkg/features/kube_features.go):
RELAXED_ENV_NAMES = (1, 32)  # RelaxedEnvironmentVariableValidation: beta, on (GA and locked in 1.34)
RELAXED_SERVICE_NAMES = (1, 36)  # RelaxedServiceNameValidation: beta, on; a Service name is a DNS-1123 label


def env_name_problem(name: str, version: str) -> str | None:
    """IsEnvVarName before 1.32; IsRelaxedEnvVarName (printable ASCII but '=') from it."""
    if _at_least(version, RELAXED_ENV_NAMES):
        if name and all(" " <= c <= "~" and c != "=" for c in name):
            return None
        return "is not an env var name (printable ASCII characters other than '=')"
    if ENV_VAR_NAME.fullmatch(name):
        return None
    return "is not an env var name (letters, digits, '-', '_', '.', not a digit first)"


def name_problem(kind: str, name: str, version: str = "1.33") -> str | None:
    if kind == "Service" and _at_least(version, RELAXED_SERVICE_NAMES):
        if len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
            return "a Service name must be a DNS-1123 label (lower-case letters, digits, '-', at most 63)"
        return None
    if kind == "Service":
        if len(name) > 63 or not DNS1035_LABEL.fullmatch(name):
            return (
                "a Service name must be a DNS-1035 label (lower-case letters, digits, '-', a letter first, at most 63)"
            )
        return None
    if len(name) > 253 or not DNS1123_SUBDOMAIN.fullmatch(name):
        return "must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253)"
    return None


def _pod_templates(obj: dict[str, Any]) -> Iterator[tuple[tuple, Any]]:
    """(path, template) of every pod template: a LeaderWorkerSet's two, each DisaggregatedSet role's
    two, a Job's, a Deployment's, an MPIJob's replicas'."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "LeaderWorkerSet":
        for side in ("leaderTemplate", "workerTemplate"):
            if side in spec.get("leaderWorkerTemplate", {}):
                yield ("spec", "leaderWorkerTemplate", side), spec["leaderWorkerTemplate"][side]
    elif kind == "DisaggregatedSet":
        for r, role in enumerate(spec.get("roles") or []):
            template = ((role or {}).get("spec") or {}).get("leaderWorkerTemplate") or {}
            for side in ("leaderTemplate", "workerTemplate"):
                if side in template:
                    yield ("spec", "roles", r, "spec", "leaderWorkerTemplate", side), template[side]
    elif kind in ("Job", "Deployment"):
        yield ("spec", "template"), spec.get("template", {})
    elif kind == "MPIJob":
        for role, replica in spec.get("mpiReplicaSpecs", {}).items():
            yield ("spec", "mpiReplicaSpecs", role, "template"), replica.get("template", {})


def _pod_specs(obj: dict[str, Any]) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(path, pod spec) of KServe's kinds, whose pods are written as specs with no template around
    them: an LLMInferenceService's template and worker, a ServingRuntime's head and workerSpec (its
    containers and volumes; an InferenceService's pod fields are merged with them by KServe)."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "LLMInferenceService":
        for side in ("template", "worker"):
            if isinstance(spec.get(side), dict):
                yield ("spec", side), spec[side]
    elif kind == "ServingRuntime":
        yield ("spec",), {k: spec[k] for k in ("containers", "volumes") if k in spec}
        if isinstance(spec.get("workerSpec"), dict):
            yield ("spec", "workerSpec"), spec["workerSpec"]


def _labels_and_annotations(at: tuple, metadata: Any) -> Iterator[Finding]:
    if not isinstance(metadata, dict):
        return
    labels, annotations = metadata.get("labels"), metadata.get("annotations")
    for key, value in (labels or {}).items() if isinstance(labels, dict) else ():
        why = qualified_name_problem(str(key))
        if why:
            yield Finding((*at, "labels", key), f"label key {key!r}: {why}")
        elif isinstance(value, str) and (why := label_value_problem(value)):
            yield Finding((*at, "labels", key), f"{value!r}: {why}")
    if not isinstance(annotations, dict):
        return
    for key in annotations:
        why = qualified_name_problem(str(key).lower())
        if why:
            yield Finding((*at, "annotations", key), f"annotation key {key!r}: {why}")
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_LIMIT:
        yield Finding(
            (*at, "annotations"),
            f"annotations total {size} bytes; the API server allows {ANNOTATIONS_LIMIT} (256 KiB) of keys and values",
        )


MOUNT_PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")


def _mounts(at: tuple, mounts: list, volumes: set) -> Iterator[Finding]:
    """validateVolumeMounts: each names a volume of the pod at a path of its own in the container;
    subPath and subPathExpr (not both) are relative and never step up ('..')."""
    paths: set[str] = set()
    for m, mount in enumerate(m for m in mounts if isinstance(m, dict)):
        here = (*at, "volumeMounts", m)
        if mount.get("name") not in volumes:
            yield Finding((*here, "name"), f"{mount.get('name')!r} is not a volume of this pod")
        path = mount.get("mountPath")
        if not path:
            yield Finding((*here, "mountPath"), "is required: where in the container the volume is mounted")
        elif path in paths:
            yield Finding((*here, "mountPath"), f"{path!r} must be unique: another mount of this container uses it")
        paths.add(path)
        if mount.get("subPath") and mount.get("subPathExpr"):
            yield Finding((*here, "subPathExpr"), "subPathExpr and subPath are mutually exclusive")
        for key in ("subPath", "subPathExpr"):
            sub = str(mount.get(key) or "")
            if sub.startswith("/") or ".." in sub.split("/"):  # the nodes' separator: Linux
                yield Finding((*here, key), f"{sub!r} must be a relative path without '..'")
        propagation = mount.get("mountPropagation")
        if propagation is not None and propagation not in MOUNT_PROPAGATIONS:
            yield Finding(
                (*here, "mountPropagation"), f"{propagation!r} is not one of: {', '.join(MOUNT_PROPAGATIONS)}"
            )


def _containers(at: tuple, pod: dict[str, Any], version: str) -> Iterator[Finding]:
    if not isinstance(pod, dict) or not pod.get("containers"):
        yield Finding((*at, "containers"), "is required: a pod template needs at least one container")
        return
    seen: set[str] = set()
    volumes = {v.get("name") for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for group in ("initContainers", "containers"):
        for c, container in enumerate(pod.get(group) or []):
            here = (*at, group, c)
            if not isinstance(container, dict):  # null or a scalar: the API server refuses it too
                yield Finding(here, "a container is a mapping (name, image, ...)")
                continue
            yield from _mounts(here, container.get("volumeMounts") or [], volumes)
            name = str(container.get("name", ""))
            if len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
                yield Finding((*here, "name"), f"container name {name!r} must be a DNS-1123 label")
            elif name in seen:
                yield Finding((*here, "name"), f"container name {name!r} is used twice in this pod")
            seen.add(name)
            ports: set[str] = set()
            for p, port in enumerate(container.get("ports") or []):
                if not isinstance(port, dict):
                    yield Finding((*here, "ports", p), "a port is a mapping (name, containerPort, ...)")
                    continue
                port_name = port.get("name")
                if port_name is not None:
                    why = port_name_problem(str(port_name))
                    if why:
                        yield Finding((*here, "ports", p, "name"), f"port name {port_name!r} {why}")
                    elif port_name in ports:
                        yield Finding((*here, "ports", p, "name"), f"port name {port_name!r} is used twice")
                    ports.add(port_name)
                number = port.get("containerPort")
                if isinstance(number, int) and not 1 <= number <= 65535:
                    yield Finding((*here, "ports", p, "containerPort"), f"{number} is not a port (1-65535)")
            for e, env in enumerate(container.get("env") or []):
                if not isinstance(env, dict):
                    yield Finding((*here, "env", e), "an env entry is a mapping (name, value or valueFrom)")
                    continue
                why = env_name_problem(str(env.get("name", "")), version)
                if why:
                    yield Finding((*here, "env", e, "name"), f"{env.get('name')!r} {why}")


# Kinds the API server (or their controller) rejects without a spec, though OpenAPI marks none required
SPEC_REQUIRED = frozenset(
    ("Service", "NetworkPolicy", "HorizontalPodAutoscaler", "LeaderWorkerSet", "PodMonitor", "PrometheusRule")
    + ("ScaledObject", "Job", "MPIJob", "Deployment", "PersistentVolumeClaim")
)


def _required(obj: dict[str, Any]) -> Iterator[Finding]:
    """What the API server requires but the schemas leave optional: a name (an applied object
    cannot use generateName) and a spec; a pod template's containers are checked in _containers."""
    metadata = obj.get("metadata")
    if "kind" not in obj:
        return  # a prometheus-adapter rules fragment, not an object
    if obj["kind"] != "Kustomization" and not (isinstance(metadata, dict) and metadata.get("name")):
        yield Finding(("metadata", "name"), "is required (kubectl apply and GitOps syncs cannot use generateName)")
    if obj.get("kind") in SPEC_REQUIRED and not isinstance(obj.get("spec"), dict):
        yield Finding(("spec",), f"is required for a {obj['kind']}")


def api_errors(obj: dict[str, Any], version: str = "1.33") -> Iterator[Finding]:
    """Every way obj breaks a Kubernetes API rule that its schema does not say, at the Kubernetes
    version (minor) whose default feature gates the cluster runs."""
    yield from _required(obj)
    name = obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    if isinstance(name, str) and obj.get("kind"):
        why = name_problem(obj["kind"], name, version)
        if why:
            yield Finding(("metadata", "name"), f"{name!r}: {why}")
    yield from _labels_and_annotations(("metadata",), obj.get("metadata"))
    for at, template in _pod_templates(obj):  # labels and annotations live in pod templates too
        template = template if isinstance(template, dict) else {}
        yield from _labels_and_annotations((*at, "metadata"), template.get("metadata"))
        yield from _containers((*at, "spec"), template.get("spec", {}), version)
    for at, pod_spec in _pod_specs(obj):
        yield from _containers(at, pod_spec, version)
    for field in DATA_FIELDS.get(obj.get("kind"), ()):
        for key in obj.get(field) or {}:
            why = config_map_key_problem(str(key))
            if why:
                yield Finding((field, key), f"{key!r}: {why}")
    if obj.get("kind") == "Service" and isinstance(obj.get("spec"), dict):
        yield from _service_ports(obj["spec"].get("ports") or [])


def _service_ports(ports: list) -> Iterator[Finding]:
    """validateServicePort and ValidateService: with several ports each needs a name, a DNS-1123
    label used once; a port number is used once per protocol."""
    names: set[str] = set()
    numbers: set[tuple] = set()
    for index, port in enumerate(p for p in ports if isinstance(p, dict)):
        name = port.get("name")
        if not name and len(ports) > 1:
            yield Finding(("spec", "ports", index, "name"), "is required when a Service has several ports")
        elif name and not DNS1123_LABEL.fullmatch(str(name)):
            yield Finding(("spec", "ports", index, "name"), f"{name!r} is not a DNS-1123 label")
        elif name in names:
            yield Finding(("spec", "ports", index, "name"), f"{name!r} is used by another port of this Service")
        names.add(name)
        number = (port.get("port"), port.get("protocol", "TCP"))
        if number in numbers:
            yield Finding(("spec", "ports", index, "port"), f"{number[0]}/{number[1]} is used by another port")
        numbers.add(number)


def config_map_key_problem(key: str) -> str | None:
    """A key becomes a file name when the data is mounted, hence no '/' and no '..' prefix."""
    if len(key) > 253:
        return "a data key is at most 253 characters"
    if not CONFIG_MAP_KEY.fullmatch(key):
        return "a data key may hold only letters, digits, '-', '_' and '.'"
    if key == "." or key.startswith(".."):
        return "a data key must not be '.' or start with '..'"
    return None
