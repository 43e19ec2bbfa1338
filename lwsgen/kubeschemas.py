"""The Kubernetes schemas lwsgen validates against (the strict JSON schemas kubernetes-validate bundles,
read as files): which versions there are, one definition strict and self-contained, and an error of
jsonschema-rs as a Finding. Below every stage: the profile checks validate escape hatches with it, the
output stage every core object (output/validate.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from lwsgen import resources
from lwsgen.problems import Finding

_REF = re.compile(r'"\$ref":\s*"[^"#]*#/\$defs/([^"]+)"')
_REF_PREFIX = re.compile(r'("\$ref":\s*")[^"#]*#/\$defs/')


@lru_cache(maxsize=1)
def _k8s_schema_root() -> Path:
    return resources.kubernetes_schema_root()


@cache
def available_versions() -> tuple[str, ...]:
    found = []
    for entry in _k8s_schema_root().iterdir():
        match = re.fullmatch(r"v(\d+)\.(\d+)\.\d+-local-strict", entry.name)
        if match:
            found.append((int(match[1]), int(match[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def schema_dir(version: str) -> Path:
    return _k8s_schema_root() / f"v{version}.0-local-strict"


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


def self_contained(root: dict[str, Any], definitions: dict[str, Any]) -> str:
    """root as JSON text with every Kubernetes definition it reaches in its own $defs, and each
    reference into the definitions file rewritten to point there."""
    reached = _closure(definitions, set(_REF.findall(json.dumps(root))))
    own = root.get("$defs", {})
    if own.keys() & reached.keys():
        raise RuntimeError(f"schema $defs shadow Kubernetes definitions: {sorted(own.keys() & reached.keys())}")
    text = json.dumps({**_without_descriptions(root), "$defs": {**own, **reached}}, sort_keys=True)
    return _REF_PREFIX.sub(r"\1#/$defs/", text)


def located(err) -> Finding:
    """An error at its path; an unknown field is reported at its own key."""
    path = tuple(err.instance_path)
    if err.kind.name == "additionalProperties":
        unexpected = err.kind.unexpected
        more = f" (and {len(unexpected) - 1} more here)" if len(unexpected) > 1 else ""
        return Finding(path + (unexpected[0],), f"unknown field {unexpected[0]!r}{more}", at_key=True)
    return Finding(path, err.message)


@cache
def _definition_validator(version: str, definition: str):
    """One Kubernetes definition (io.k8s.api.core.v1.Affinity, ...), strict, compiled once: what
    the profile's escape hatches take."""
    import jsonschema_rs

    definitions = json.loads((schema_dir(version) / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    return jsonschema_rs.validator_for(self_contained({"$ref": f"#/$defs/{definition}"}, definitions))


def definition_errors(value: Any, definition: str, version: str) -> Iterator[Finding]:
    yield from (located(err) for err in _definition_validator(version, definition).iter_errors(value))
