"""Cross-object rules for a DisaggregatedSet: what selects its pods does so by set and role (the
labels its controller puts on every role's pod templates, derive/naming.SET_NAME_LABEL, ROLE_LABEL),
names a set and role that exist, and ports their leaders have; each role's LeaderWorkerSet spec is
held to the rules of a LeaderWorkerSet (as_leaderworkersets)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwsgen.naming import ROLE_LABEL, SET_NAME_LABEL, WORKER_INDEX_LABEL
from lwsgen.problems import Finding

KIND = "DisaggregatedSet"
SCALER_KIND, API_VERSION = "DisaggregatedSetRoleScaler", "disaggregatedset.x-k8s.io/v1"


def selects_set(selector: dict[str, Any]) -> bool:
    return isinstance(selector, dict) and SET_NAME_LABEL in selector


def sets_of(objects_by_file: dict[str, tuple]) -> dict[str, dict[str, Any]]:
    return {
        (o.get("metadata") or {}).get("name"): o
        for docs in objects_by_file.values()
        for o in docs
        if isinstance(o, dict) and o.get("kind") == KIND
    }


def _roles(ds: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r.get("name"): r for r in (ds.get("spec") or {}).get("roles") or [] if isinstance(r, dict)}


def as_leaderworkersets(ds: dict[str, Any]) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(path of the role, the role as a LeaderWorkerSet named <set>-<role>: its scaler's name)."""
    name, meta = (ds.get("metadata") or {}).get("name"), ds.get("metadata") or {}
    for index, role in enumerate((ds.get("spec") or {}).get("roles") or []):
        if isinstance(role, dict) and isinstance(role.get("spec"), dict):
            lws_meta = {**(role.get("metadata") or {}), "name": f"{name}-{role.get('name')}"}
            lws_meta["namespace"] = meta.get("namespace")
            yield ("spec", "roles", index), {"kind": "LeaderWorkerSet", "metadata": lws_meta, "spec": role["spec"]}


def _leader_ports(role: dict[str, Any]) -> set[Any]:
    lwt = (role.get("spec") or {}).get("leaderWorkerTemplate") or {}
    template = lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}
    spec = template.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return {v for c in containers for p in c.get("ports") or [] for v in (p.get("name"), p.get("containerPort"))}


def selector_errors(
    selector: dict[str, Any], sets: dict[str, dict], at: tuple, ports: list[tuple[tuple, Any]], every_pod: bool = False
) -> Iterator[Finding]:
    """A selector of a set's pods: the set and role exist, leaders only (unless every_pod), and each
    port is one every selected role's leader has."""
    ds = sets.get(selector.get(SET_NAME_LABEL))
    roles = _roles(ds) if ds else {}
    role = selector.get(ROLE_LABEL)
    if ds is None or (role is not None and role not in roles):
        yield Finding(
            at, f"must select {SET_NAME_LABEL}=<a DisaggregatedSet in this set> and {ROLE_LABEL}=<one of its roles>"
        )
        return
    if not every_pod and selector.get(WORKER_INDEX_LABEL) != "0":
        yield Finding(at, f'must select the leaders ({WORKER_INDEX_LABEL}="0"): only they serve')
        return
    chosen = [roles[role]] if role is not None else list(roles.values())
    for path, port in ports:
        missing = [r.get("name") for r in chosen if port not in _leader_ports(r)]
        if missing:
            yield Finding(path, f"{port!r} is not a port of the {', '.join(missing)} leaders")


def scaler_errors(ref: dict[str, Any], sets: dict[str, dict]) -> Iterator[Finding]:
    """A role's scaler <set>-<role>, which the controller makes for a role with scaling mode External."""
    external = {
        f"{name}-{role_name}"
        for name, ds in sets.items()
        for role_name, role in _roles(ds).items()
        if (role.get("scaling") or {}).get("mode") == "External"
    }
    if ref.get("apiVersion") != API_VERSION or ref.get("name") not in external:
        yield Finding(
            ("spec", "scaleTargetRef"),
            f"must target the {SCALER_KIND} of a role with scaling mode External in this set, named <set>-<role> "
            f"by the controller (scaler_manager.go@v0.10.0 ScalerName): {', '.join(sorted(external)) or 'none'}, "
            f"not {ref.get('name')!r} (a kustomize namePrefix/nameSuffix renames the set, not this reference; "
            "render the profile with the new name)",
        )
