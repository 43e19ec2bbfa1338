"""Prefill/decode disaggregation in check: each role of `roles` is a whole profile of its own (the
shared fields with the role's over them, named <name>-<role>), checked by every rule a profile is,
with each problem said at the role's field where the role set it (RoleSource)."""

from __future__ import annotations

import copy
from typing import Any

from lwsgen.load.source import PathKey, Source

ROLES = ("prefill", "decode", "encode")  # the DisaggregatedSet's role order
WHOLE = ("parallelism", "replicas")  # a role's value replaces the shared one
MERGED = ("node", "autoscaling", "env")  # a role's keys go over the shared ones


def role_names(data: dict[str, Any]) -> tuple[str, ...]:
    return tuple(role for role in ROLES if role in (data.get("roles") or {}))


def role_data(data: dict[str, Any], role: str) -> tuple[dict[str, Any], dict[PathKey, PathKey]]:
    """The role's profile data, and where each of its fields that the role set stands in the file."""
    over = data["roles"][role]
    merged = {k: copy.deepcopy(v) for k, v in data.items() if k != "roles"}
    merged["name"] = f"{data['name']}-{role}"
    model = merged["model"] = dict(merged.get("model") or {})
    model.setdefault("servedName", data["name"])  # one model name behind the router, whatever the role
    moved: dict[PathKey, PathKey] = {}
    for key in WHOLE:
        if key in over:
            merged[key] = copy.deepcopy(over[key])
            moved[(key,)] = ("roles", role, key)
    for key in MERGED:
        if key in over:
            merged[key] = {**(merged.get(key) or {}), **copy.deepcopy(over[key])}
            moved.update({(key, sub): ("roles", role, key, sub) for sub in over[key]})
    if "extraArgs" in over:
        shared = list(model.get("extraArgs") or [])
        model["extraArgs"] = shared + list(over["extraArgs"])
        moved.update(
            {
                ("model", "extraArgs", len(shared) + i): ("roles", role, "extraArgs", i)
                for i in range(len(over["extraArgs"]))
            }
        )
    return merged, moved


class RoleSource(Source):
    """The profile file as one role sees it: the role's fields where it set them, the shared ones
    elsewhere; positions and problem paths are the file's own."""

    __slots__ = ("shared", "moved")
    in_set = True  # what rules.check_name_budget asks: the set's name rule judges a role's names

    def __init__(self, src: Source, role: str):
        data, moved = role_data(src.data, role)
        self.shared, self.moved = src, moved
        back = {to: frm for frm, to in moved.items()}
        super().__init__(src.file, data, self._view(src.values_at, back), self._view(src.keys_at, back), {})

    def _view(self, table: dict, back: dict) -> dict:
        """table (path -> position) keyed by the role profile's paths."""
        whole = [key for key in self.moved if len(key) == 1]
        view = {p: at for p, at in table.items() if p[:1] != ("roles",) and not any(p[:1] == k for k in whole)}
        for path, at in table.items():
            prefix = next((path[:n] for n in range(len(path), 2, -1) if path[:n] in back), None)
            if prefix is not None:
                view[(*back[prefix], *path[len(prefix) :])] = at
        return view

    def source_path(self, path: PathKey) -> PathKey:
        path = tuple(path)
        for n in range(len(path), 0, -1):
            if path[:n] in self.moved:
                return (*self.moved[path[:n]], *path[n:])
        return path

    def file_of(self, path: PathKey) -> str:
        return self.shared.file_of(self.source_path(path))

    def position(self, path: PathKey, *, key: bool = False) -> tuple[int, int]:
        return self.shared.position(self.source_path(path), key=key)

    def problem(self, path: PathKey, message: str, code: str, *, key: bool = False):
        return self.shared.problem(self.source_path(path), message, code, key=key)
