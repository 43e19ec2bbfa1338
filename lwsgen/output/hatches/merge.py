"""The profile's `patches:` on the generated objects: a strategic-merge patch (as kubectl and
kustomize apply one to a Kubernetes object) or RFC 6902 operations (the jsonpatch library).

Strategic merge, after apimachinery's strategicpatch: mappings merge key by key, a null value
removes its key, `$patch: replace` replaces a mapping and `$patch: delete` removes it (or, in a
list, the element with its merge key); lists whose Kubernetes field has a merge key merge element
by element on it (containers, initContainers, volumes, env, imagePullSecrets by name, volumeMounts
by mountPath, container ports by containerPort, Service ports by port, topologySpreadConstraints by
topologyKey, ...), the patch's elements first in its order and then the original's others (the
order kustomize gives), other lists are replaced. The same keys apply inside a LeaderWorkerSet's pod
templates (they are PodTemplateSpecs; kustomize merges them through the same keys). The directives
this does not implement ($setElementOrder, $deleteFromPrimitiveList, $retainKeys) are refused."""

from __future__ import annotations

import copy
from typing import Any

# Kubernetes patchMergeKey by field name (k8s.io/api core/v1 types.go).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "ownerReferences": "uid",
}
DIRECTIVE = "$patch"
UNSUPPORTED = ("$setElementOrder/", "$deleteFromPrimitiveList/", "$retainKeys")


class PatchError(Exception):
    """A patch that cannot apply; path: where in the patch (or operation index)."""

    def __init__(self, path: tuple, message: str):
        super().__init__(message)
        self.path, self.message = path, message


def _merge_key(field: str, items: list) -> tuple[str, ...] | None:
    """The fields an element is known by: Kubernetes' patchMergeKey, with the list-map keys kustomize
    also uses for ports (and protocol) and topology spread (and whenUnsatisfiable)."""
    if field == "ports":  # a container's ports merge on containerPort, a Service's on port
        sample = next((item for item in items if isinstance(item, dict)), {})
        return ("containerPort", "protocol") if "containerPort" in sample else ("port", "protocol")
    if field == "topologySpreadConstraints":
        return ("topologyKey", "whenUnsatisfiable")
    return (MERGE_KEYS[field],) if field in MERGE_KEYS else None


DEFAULTS = {"protocol": "TCP"}


def _identity(item: dict, keys: tuple[str, ...]) -> tuple:
    return tuple(item.get(k, DEFAULTS.get(k)) for k in keys)


def merge(original: Any, patch: Any, at: tuple = ()) -> Any:
    """original with the strategic-merge patch applied (original is not changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(original, dict):
        original = {}  # a new mapping: the patch's own directives and nulls still apply
    for key in patch:
        if isinstance(key, str) and key.startswith(UNSUPPORTED):
            raise PatchError((*at, key), f"{key.split('/')[0]} is not supported; write the list as it should be")
    directive = patch.get(DIRECTIVE)
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != DIRECTIVE}
    if directive is not None and directive != "merge":
        raise PatchError(
            (*at, DIRECTIVE), f"{DIRECTIVE}: {directive!r} here; allowed: replace, merge (delete in lists)"
        )
    result = copy.deepcopy(original)
    for key, value in patch.items():
        if key == DIRECTIVE:
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and value.get(DIRECTIVE) == "delete":
            result.pop(key, None)
        elif isinstance(value, list):  # into an absent list too: its directives still apply
            result[key] = _merge_list(
                key, result.get(key) if isinstance(result.get(key), list) else [], value, (*at, key)
            )
        else:
            result[key] = merge(result.get(key), value, (*at, key))
    return result


def _merge_list(field: str, original: list, patch: list, at: tuple) -> list:
    if any(isinstance(item, dict) and item.get(DIRECTIVE) == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get(DIRECTIVE) == "replace")]
    keys = _merge_key(field, original + patch)
    if keys is None:
        return copy.deepcopy(patch)
    key = keys[0]
    # The patch's elements first, in its order, then the original's others (as kustomize orders them).
    by_key = {_identity(old, keys): old for old in original if isinstance(old, dict)}
    merged, named = [], set()
    for index, item in enumerate(patch):
        if not isinstance(item, dict) or key not in item:
            raise PatchError((*at, index), f"each element of {field} needs its merge key {key!r}")
        if any(not isinstance(v, (str, int)) or isinstance(v, bool) for v in _identity(item, keys) if v is not None):
            raise PatchError((*at, index, key), f"the merge key {key!r} must be a string or a number")
        named.add(_identity(item, keys))
        if item.get(DIRECTIVE) != "delete":
            merged.append(merge(by_key.get(_identity(item, keys), {}), item, (*at, index)))
    rest = [copy.deepcopy(o) for o in original if not (isinstance(o, dict) and _identity(o, keys) in named)]
    return merged + rest


def json_patch(original: dict, operations: list) -> dict:
    """original with the RFC 6902 operations applied, one at a time (an error names its operation)."""
    import jsonpatch
    import jsonpointer

    result = original
    for index, operation in enumerate(operations):
        try:
            result = jsonpatch.JsonPatch([operation]).apply(result)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
            raise PatchError((index,), f"{operation.get('op')} {operation.get('path')}: {err}") from None
        if not isinstance(result, dict):
            raise PatchError(
                (index,),
                f"{operation.get('op')} {operation.get('path')}: leaves no object, but a {type(result).__name__}",
            )
    return result
