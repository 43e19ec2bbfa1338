"""Strict validation against an upstream CRD for the conformance tests: lwsgen.output.crd (what
`lwsgen validate --crd` uses), with the top-level metadata checked against the strict ObjectMeta."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

from lwsgen.output import crd, validate


@cache
def _crds(crds: Path) -> dict:
    return crd.load([str(crds)])


def errors(obj: dict[str, Any], crds: Path, kubernetes_version: str = "1.33") -> list[str]:
    """Every way obj breaks the CRD of its kind found in crds/ (schema and CEL), plus strict ObjectMeta."""
    key = (obj["apiVersion"], obj["kind"])
    found_crd = _crds(crds).get(key)
    if found_crd is None:
        raise LookupError(f"no CRD in {crds} defines {key}")
    found = [f"{list(e.path)}: {e.message}" for e in found_crd.errors(obj)]
    meta_schema = {"$ref": f"{validate.K8S_DEFINITIONS}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    meta_validator = jsonschema_rs.validator_for(meta_schema, registry=validate._registry(kubernetes_version))
    return found + [
        f"metadata{list(e.instance_path)}: {e.message}" for e in meta_validator.iter_errors(obj["metadata"])
    ]
