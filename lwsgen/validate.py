"""Stage 6, validate: every emitted object against a strict schema (cross-object rules: relations.py).

Core kinds use the strict Kubernetes schemas that kubernetes-validate bundles (as JSON files, read
without importing that package); custom kinds use the project's schemas in schemas/. Each schema
is compiled once per process with jsonschema-rs.
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from lwsgen import resources

K8S_DEFINITIONS = "https://kubernetes.io/api/_definitions.json"
# (apiVersion, kind) -> project schema file, for kinds Kubernetes does not define.
PROJECT_SCHEMAS = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset.schema.json",
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"): "kustomization.schema.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): "podmonitor.schema.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule.schema.json",
    ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject.schema.json",
    ("scheduling.volcano.sh/v1beta1", "Queue"): "volcano-queue.schema.json",
    ("kubeflow.org/v2beta1", "MPIJob"): "mpijob.schema.json",
}
# Files that are not Kubernetes objects, by file name.
FILE_SCHEMAS = {"prometheus-adapter-rules.yaml": "prometheus-adapter-rules.schema.json",
                "eksctl-nodegroup.yaml": "eksctl-nodegroup.schema.json"}


class UnknownKind(Exception):
    pass


@lru_cache(maxsize=1)
def _k8s_schema_root() -> Path:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kubernetes-validate is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "kubernetes-json-schema"


@lru_cache(maxsize=None)
def available_versions() -> tuple[str, ...]:
    found = []
    for entry in _k8s_schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match:
            found.append((int(match[1]), int(match[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def _schema_dir(version: str) -> Path:
    return _k8s_schema_root() / f"v{version}.0-local-strict"


# Core kinds lwsgen emits: their schemas, and the project's, reach only a few of the ~700
# Kubernetes definitions, so render loads just those (a bundle cached per schema file).
EMITTED_CORE = (("v1", "Service"), ("v1", "ConfigMap"), ("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "Role"),
                ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("networking.k8s.io/v1", "NetworkPolicy"),
                ("autoscaling/v2", "HorizontalPodAutoscaler"), ("batch/v1", "Job"))
_REF = re.compile(r'"\$ref":\s*"[^"#]*#/\$defs/([^"]+)"')


def _without_descriptions(node: Any) -> Any:
    """Validation never reads descriptions; they are most of the definitions' bytes."""
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def _closure(definitions: dict[str, Any], roots: set[str]) -> dict[str, Any]:
    """The definitions reachable through $ref from the named roots, without their descriptions."""
    found: dict[str, Any] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in found or name not in definitions:
            continue
        found[name] = _without_descriptions(definitions[name])
        pending += _REF.findall(json.dumps(definitions[name]))
    return found


def _bundle_path(version: str) -> Path | None:
    import os

    source = _schema_dir(version) / "_definitions.json"
    stat = source.stat()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lwsgen" / f"k8s-{version}-{stat.st_size}-{int(stat.st_mtime)}.json"


def _emitted_definitions(version: str) -> dict[str, Any]:
    """The Kubernetes definitions lwsgen's own output needs, from the cache or computed once."""
    import os

    path = _bundle_path(version)
    if path.is_file() and not os.environ.get("LWSGEN_NO_CACHE"):
        return json.loads(path.read_text(encoding="utf-8"))
    full = json.loads((_schema_dir(version) / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    texts = [(_schema_dir(version) / _k8s_file(a, k)).read_text(encoding="utf-8") for a, k in EMITTED_CORE]
    texts += [json.dumps(resources.schema(name)) for name in (*PROJECT_SCHEMAS.values(), *FILE_SCHEMAS.values())]
    bundle = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": K8S_DEFINITIONS,
              "$defs": _closure(full, {ref for text in texts for ref in _REF.findall(text)})}
    if not os.environ.get("LWSGEN_NO_CACHE"):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(bundle), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # no cache directory: compute it again next time
    return bundle


@lru_cache(maxsize=None)
def _registry(version: str, full: bool = False):
    import jsonschema_rs

    if full:
        definitions = json.loads((_schema_dir(version) / "_definitions.json").read_text(encoding="utf-8"))
    else:
        definitions = _emitted_definitions(version)
    return jsonschema_rs.Registry([(K8S_DEFINITIONS, definitions)])


def _k8s_file(api_version: str, kind: str) -> str:
    # kubernetes-validate names files <kind>-<group without domain>-<version>.json, e.g. role-rbac-v1.json
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


@lru_cache(maxsize=None)
def validator(version: str, api_version: str, kind: str):
    """A compiled strict validator for one apiVersion/kind at one Kubernetes version."""
    import jsonschema_rs

    project = PROJECT_SCHEMAS.get((api_version, kind))
    if project:
        schema = resources.schema(project)
    else:
        path = _schema_dir(version) / _k8s_file(api_version, kind)
        if not path.is_file():
            raise UnknownKind(f"no schema for {api_version} {kind}")
        schema = json.loads(path.read_text(encoding="utf-8"))
    emitted = project is not None or (api_version, kind) in EMITTED_CORE
    return jsonschema_rs.validator_for(schema, registry=_registry(version, full=not emitted))


@lru_cache(maxsize=None)
def _file_validator(version: str, schema_file: str):
    import jsonschema_rs

    return jsonschema_rs.validator_for(resources.schema(schema_file), registry=_registry(version))


def _located(err) -> tuple[tuple, str]:
    """An error's path and message; an unknown field is reported at its own key."""
    path = tuple(err.instance_path)
    if err.kind.name == "additionalProperties":
        unexpected = err.kind.unexpected
        return path + (unexpected[0],), f"unknown field {unexpected[0]!r}" + (f" (and {len(unexpected) - 1} more here)" if len(unexpected) > 1 else "")
    return path, err.message


def has_schema(obj: dict[str, Any], version: str, file: str = "") -> bool:
    if file in FILE_SCHEMAS:
        return True
    try:
        validator(version, obj.get("apiVersion"), obj.get("kind"))
    except (UnknownKind, TypeError, AttributeError):
        return False
    return True


def schema_errors(obj: dict[str, Any], version: str, file: str = "") -> Iterator[tuple[tuple, str]]:
    """(path, message) for every way obj breaks its strict schema."""
    if file in FILE_SCHEMAS:
        yield from (_located(err) for err in _file_validator(version, FILE_SCHEMAS[file]).iter_errors(obj))
        return
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        yield (), "apiVersion and kind must be strings"
        return
    try:
        compiled = validator(version, api_version, kind)
    except UnknownKind as err:
        yield ("kind",), str(err)
        return
    yield from (_located(err) for err in compiled.iter_errors(obj))
