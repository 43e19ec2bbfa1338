"""kustomize-openapi.yaml: the OpenAPI schema kustomize needs to merge strategic-merge patches on
the custom kinds lwsgen emits (containers, env, volumes, ports, ... by name).

kustomize knows merge keys only for the kinds of its built-in schema; on a LeaderWorkerSet it
replaced a patched container list whole (a patch adding one env var left `{name, env}`). The
kustomization's `openapi: {path: ...}` gives it a schema, which then REPLACES the built-in one for
the whole build, overlays included (sigs.k8s.io/kustomize/kyaml/openapi/openapi.go, SetSchema and
initSchema: a custom schema is parsed instead of the built-in). So the file carries, besides the
LeaderWorkerSet, DisaggregatedSet and PrometheusRule, the core kinds' definitions too, taken from
Kubernetes' own OpenAPI for the profile's version (kubernetes-validate's _definitions.json) and
pruned to what merging reads: type, properties, items, $ref and the x-kubernetes-patch-* /
list-type / list-map-keys markers, only along paths that lead to one (~15 KB).

Merge keys of the custom kinds, from their CRDs: DisaggregatedSet spec.roles is a map list keyed
by name (disaggregatedset.x-k8s.io_disaggregatedsets.yaml, LWS v0.10.0), each role's spec a
LeaderWorkerSet's; PrometheusRule spec.groups are keyed by name (prometheus-operator v0.86, groups
must have unique names). The pod templates are core PodTemplateSpecs.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from lwsgen.kubeschemas import available_versions
from lwsgen.records import Record
from lwsgen.resources import kubernetes_definitions, schema

FILE = "kustomize-openapi.yaml"
_KEPT = {
    "type",
    "items",
    "properties",
    "additionalProperties",
    "$ref",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-group-version-kind",
}
_MARKERS = ("x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy")
# The core kinds lwsgen emits whose lists a patch may merge (the others have none).
CORE_ROOTS = (
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.networking.v1.NetworkPolicy",
    "io.k8s.api.rbac.v1.Role",
    "io.k8s.api.rbac.v1.RoleBinding",
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
)
MERGE_KEYS = "kustomize-merge-keys.json"  # schemas/: the custom kinds' definitions (data, not code)


class PatchSchema(Record):
    """The values templates/kustomize-openapi.yaml.j2 places."""

    definitions: dict[str, Any]


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class _Pruner:
    def __init__(self, definitions: dict[str, Any]):
        self.definitions = definitions
        self.memo: dict[str, bool] = {}

    def matters(self, node: Any, seen: frozenset = frozenset()) -> bool:
        """Whether a patch merges anything below node (a list with a merge key or strategy)."""
        if not isinstance(node, dict):
            return False
        if any(marker in node for marker in _MARKERS) or node.get("x-kubernetes-list-type") == "map":
            return True
        if "$ref" in node:
            name = _name(node["$ref"])
            if name in seen:
                return False
            if name not in self.memo:
                self.memo[name] = self.matters(self.definitions[name], seen | {name})
            return self.memo[name]
        children = [*(node.get("properties") or {}).values(), node.get("items"), node.get("additionalProperties")]
        return any(self.matters(child, seen) for child in children)

    def prune(self, node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in _KEPT:
                continue
            if key == "$ref":
                out[key] = f"#/definitions/{_name(value)}"
            elif key == "properties":
                kept = {name: self.prune(sub) for name, sub in value.items() if self.matters(sub)}
                if kept:
                    out[key] = kept
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.prune(value)
            elif key != "additionalProperties":
                out[key] = value
        return out


CORE_FILE = "kustomize-openapi-core.json"  # schemas/: _pruned for every bundled version (make docs)


def pruned_by_version() -> dict[str, dict[str, Any]]:
    """What schemas/kustomize-openapi-core.json holds: the pruned core definitions by version."""

    return {version: _pruned(version) for version in available_versions()}


@lru_cache(maxsize=4)
def core_definitions(kubernetes_version: str) -> dict[str, Any]:
    """The pruned core definitions of one Kubernetes version: read from the committed file (pruning
    costs ~18 ms, which a cold render cannot spare), pruned only for a version it lacks."""

    shipped = schema(CORE_FILE).get(kubernetes_version)
    return shipped if shipped is not None else _pruned(kubernetes_version)


def _pruned(kubernetes_version: str) -> dict[str, Any]:
    pruner = _Pruner(kubernetes_definitions(kubernetes_version))
    found: dict[str, Any] = {}
    pending = list(CORE_ROOTS)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found[name] = pruner.prune(pruner.definitions[name])
        pending += re.findall(r'"#/definitions/([^"]+)"', json.dumps(found[name]))
    return dict(sorted(found.items()))


LWS, SET = "io.x-k8s.leaderworkerset.v1.LeaderWorkerSet", "io.x-k8s.disaggregatedset.v1.DisaggregatedSet"


def build(ctx: Any, _kind: Any) -> PatchSchema:
    """The core definitions, and the custom kinds' for the workload this output has (an LWS, or a
    set with roles)."""

    workload = SET if ctx.roles is not None else LWS
    kinds = schema(MERGE_KEYS)["definitions"]
    custom = {name: definition for name, definition in kinds.items() if name not in (LWS, SET) or name == workload}
    return PatchSchema({**core_definitions(ctx.profile.kubernetes_version), **custom})
