"""Stage 6, validate: every emitted object against a strict schema (cross-object rules: relations.py).
Which schema validates what comes from the table of output kinds (derive/kinds.py).

Core kinds use the strict Kubernetes schemas that kubernetes-validate bundles (as JSON files, read
without importing that package); custom kinds use the project's schemas in schemas/. Each schema
is compiled once per process with jsonschema-rs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from lwsgen import resources
from lwsgen.derive import kinds
from lwsgen.files import cache_dir, read_cached, store_cached
from lwsgen.kubeschemas import located, schema_dir, self_contained
from lwsgen.output.kindrules import required_only_in_openapi, server_errors
from lwsgen.problems import Finding

K8S_DEFINITIONS = "https://kubernetes.io/api/_definitions.json"
# (apiVersion, kind) -> project schema file, for kinds Kubernetes does not define.
PROJECT_SCHEMAS = kinds.project_schemas()
# Files that are not Kubernetes objects, by file name.
FILE_SCHEMAS = kinds.fragment_schemas()


class UnknownKind(Exception):
    pass


# Core kinds lwsgen emits: their schemas, and the project's, reach only a few of the ~700
# Kubernetes definitions. Render compiles each from a self-contained schema text (its own
# definitions inlined), which jsonschema-rs parses itself: no registry, no Python-side JSON.
EMITTED_CORE = kinds.core_kinds()
# Bump when the layout of the cached schema texts changes.
STRICT_CACHE_FORMAT = 1


def _strict_sources(version: str) -> dict[str, dict[str, Any]]:
    """Cache key -> root schema, for every kind and file lwsgen emits."""
    roots = {
        f"{a} {k}": json.loads((schema_dir(version) / _k8s_file(a, k)).read_text(encoding="utf-8"))
        for a, k in EMITTED_CORE
    }
    roots.update({f"{a} {k}": embedded(resources.schema(name)) for (a, k), name in PROJECT_SCHEMAS.items()})
    roots.update({name: resources.schema(name) for name in FILE_SCHEMAS.values()})
    return roots


def embedded(root: dict[str, Any]) -> dict[str, Any]:
    """root with each `{"$ref": "<project schema>.json#/properties/<key>"}` replaced by that part of
    the other schema, whose $defs join root's (the DisaggregatedSet's roles are LeaderWorkerSet specs)."""
    defs = dict(root.get("$defs", {}))

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.endswith(tuple(f"#/properties/{k}" for k in ("spec",))) and not ref.startswith(("#", "http")):
                other = resources.schema(ref.split("#", 1)[0])
                defs.update(other.get("$defs", {}))
                return walk(other["properties"][ref.rsplit("/", 1)[1]])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk(root)
    return {**out, "$defs": defs} if defs else out


def strict_file_name(version: str) -> str:
    """Named by what the texts are built from, by content: the Kubernetes definitions that
    kubernetes-validate bundles and the project's schemas. The same name in the package (built
    with the wheel) or in the cache directory (built on first use) holds the same texts."""
    import zlib

    definitions = (schema_dir(version) / "_definitions.json").read_bytes()
    project = b"".join(
        resources.schema_bytes(name) for name in sorted({*PROJECT_SCHEMAS.values(), *FILE_SCHEMAS.values()})
    )
    key = f"{STRICT_CACHE_FORMAT}-{len(definitions)}-{zlib.crc32(definitions):08x}-{zlib.crc32(project):08x}"
    return f"strict-{version}-{key}.json"


SHIPPED_STRICT = "strict"  # schemas/strict/ in an installed package, made when the wheel is built


def build_strict_texts(version: str) -> dict[str, str]:
    definitions = json.loads((schema_dir(version) / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    return {key: self_contained(root, definitions) for key, root in _strict_sources(version).items()}


# Cached texts kept per Kubernetes version: enough for a few lwsgen installs used side by side
# (a pre-commit environment and a checkout, say) without rebuilding each other's on every run.
KEPT_PER_VERSION = 4


def _store(path: Path, texts: dict[str, str]) -> None:
    """Cache the texts; of this version's, the newest few are kept (k8s-*: the definitions bundles
    lwsgen cached before it cached whole schemas)."""
    version = path.name.split("-")[1]
    store_cached(path, json.dumps(texts), {f"strict-{version}-*.json": KEPT_PER_VERSION, f"k8s-{version}-*.json": 0})


def _read_texts(path: Path) -> dict[str, str] | None:
    try:
        return _json_texts(path.read_bytes())
    except OSError:
        return None  # absent: built


def _json_texts(data: bytes | None) -> dict[str, str] | None:
    try:
        return None if data is None else json.loads(data)
    except ValueError:
        return None  # damaged: rebuilt


@cache
def strict_texts(version: str) -> dict[str, str]:
    """Self-contained strict schema texts of what lwsgen emits ("apiVersion kind", or a file
    schema's name -> JSON text): shipped in the package, else from the cache, else built once and
    cached."""
    name = strict_file_name(version)
    texts = _read_texts(resources.package_dir("schemas") / SHIPPED_STRICT / name)
    if texts is not None:
        return texts
    cache = cache_dir()
    path = None if cache is None else cache / name
    texts = _json_texts(read_cached(path))  # the schemas decide what passes: only this user's
    if texts is None:
        texts = build_strict_texts(version)
        if path is not None:
            _store(path, texts)
    return texts


@cache
def _registry(version: str):
    """All ~700 Kubernetes definitions, for kinds lwsgen does not emit (`lwsgen validate`)."""
    import jsonschema_rs

    definitions = json.loads((schema_dir(version) / "_definitions.json").read_text(encoding="utf-8"))
    return jsonschema_rs.Registry([(K8S_DEFINITIONS, definitions)])


def _k8s_file(api_version: str, kind: str) -> str:
    # kubernetes-validate names files <kind>-<group without domain>-<version>.json, e.g. role-rbac-v1.json
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?")


@cache
def validator(version: str, api_version: str, kind: str):
    """A compiled strict validator for one apiVersion/kind at one Kubernetes version."""
    import jsonschema_rs

    text = strict_texts(version).get(f"{api_version} {kind}")
    if text is not None:
        return jsonschema_rs.validator_for(text)
    # a file name made of the document's own words: only what Kubernetes' names can be, never a path
    if not (_KIND.fullmatch(str(kind)) and _API_VERSION.fullmatch(str(api_version))):
        raise UnknownKind(f"no schema for {api_version} {kind}")
    path = schema_dir(version) / _k8s_file(api_version, kind)
    if not path.is_file():
        raise UnknownKind(f"no schema for {api_version} {kind}")
    return jsonschema_rs.validator_for(json.loads(path.read_text(encoding="utf-8")), registry=_registry(version))


@cache
def _file_validator(version: str, schema_file: str):
    import jsonschema_rs

    return jsonschema_rs.validator_for(strict_texts(version)[schema_file])


def has_schema(obj: dict[str, Any], version: str, file: str = "") -> bool:
    if file in FILE_SCHEMAS:
        return True
    try:
        validator(version, obj.get("apiVersion"), obj.get("kind"))
    except (UnknownKind, TypeError, AttributeError):
        return False
    return True


def schema_errors(obj: dict[str, Any], version: str, file: str = "", api_rules: bool = True) -> Iterator[Finding]:
    """Every way obj breaks its strict schema, then (api_rules) the API server's rules the schema
    does not say, on an object of the right shape."""
    if file in FILE_SCHEMAS:
        yield from (located(err) for err in _file_validator(version, FILE_SCHEMAS[file]).iter_errors(obj))
        return
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        yield Finding((), "apiVersion and kind must be strings")
        return
    try:
        compiled = validator(version, api_version, kind)
    except UnknownKind as err:
        yield Finding(("kind",), str(err))
        return
    found = [located(err) for err in compiled.iter_errors(obj)]
    found = [f for f in found if not required_only_in_openapi(kind, tuple(f.path), f.message)]
    yield from found
    if api_rules and not found:  # Kubernetes' API rules read an object of the right shape
        yield from server_errors(obj, version)
