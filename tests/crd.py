"""Strict validation against an upstream CRD, as an API server with fieldValidation=Strict would do.

openAPIV3Schema -> JSON Schema: unknown fields rejected wherever the CRD lists properties (unless
x-kubernetes-preserve-unknown-fields), x-kubernetes-int-or-string and nullable honoured. The top-level
metadata (which CRDs leave open) is checked against the strict Kubernetes ObjectMeta instead.
CEL rules (x-kubernetes-validations) are not evaluated. Go's case-insensitive flag `(?i)`, which
ECMA regular expressions lack, is spelled out as character classes.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml

from lwsgen.output import validate


def _case_insensitive(pattern: str) -> str:
    """Rewrite a Go pattern with a leading (?i) flag as an ECMA one: every letter as [xX]."""
    body = pattern.replace("(?i)", "", 1)
    return re.sub(r"[A-Za-z]", lambda m: f"[{m.group().lower()}{m.group().upper()}]", body)


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _convert(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if isinstance(out.get("pattern"), str) and "(?i)" in out["pattern"]:
        out["pattern"] = _case_insensitive(out["pattern"])
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    is_object = node.get("type") == "object"
    if is_object and not node.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in node:
        out["additionalProperties"] = False
    return out


@cache
def crd_validators(path: Path) -> dict[tuple[str, str], Any]:
    """(apiVersion, kind) -> strict validator for every served version of the CRD."""
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    found = {}
    for version in crd["spec"]["versions"]:
        schema = _convert(version["schema"]["openAPIV3Schema"])
        schema["properties"]["metadata"] = {"type": "object"}
        found[(f"{group}/{version['name']}", kind)] = jsonschema_rs.Draft4Validator(schema)
    return found


def errors(obj: dict[str, Any], crds: Path, kubernetes_version: str = "1.33") -> list[str]:
    """Every way obj breaks the CRD of its kind found in crds/, plus strict ObjectMeta."""
    key = (obj["apiVersion"], obj["kind"])
    for path in sorted(crds.glob("*.yaml")):
        validators = crd_validators(path)
        if key in validators:
            found = [f"{list(e.instance_path)}: {e.message}" for e in validators[key].iter_errors(obj)]
            meta_schema = {"$ref": f"{validate.K8S_DEFINITIONS}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
            meta_validator = jsonschema_rs.validator_for(meta_schema, registry=validate._registry(kubernetes_version))
            found += [
                f"metadata{list(e.instance_path)}: {e.message}" for e in meta_validator.iter_errors(obj["metadata"])
            ]
            return found
    raise LookupError(f"no CRD in {crds} defines {key}")
