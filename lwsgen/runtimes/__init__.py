"""The runtime registry: every runtime is a module with NAME, ENGINE (its version table,
versions.py), capabilities(version, profile or None) and parts(profile), and optionally check(profile) for rules of
its own; parts and check take the typed Profile (check/profile.py)."""

from __future__ import annotations

from types import ModuleType

from lwsgen.runtimes import aphrodite, llamacpp, sglang, triton_trtllm, trtllm_serve, versions, vllm
from lwsgen.runtimes.base import Capabilities

REGISTRY: dict[str, ModuleType] = {
    module.NAME: module for module in (triton_trtllm, vllm, aphrodite, sglang, llamacpp, trtllm_serve)
}


def known() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> ModuleType | None:
    return REGISTRY.get(name)


def engine_version(profile) -> versions.EngineVersion:
    return versions.of(profile, REGISTRY[profile.runtime].ENGINE)


def capabilities(profile) -> Capabilities:
    """The runtime's facts for the engine version the profile runs."""
    return REGISTRY[profile.runtime].capabilities(engine_version(profile), profile)


def newest_capabilities(name: str) -> Capabilities:
    """The runtime's facts at the newest engine version lwsgen checked (docs, cross-runtime lists)."""
    plugin = REGISTRY[name]
    return plugin.capabilities(versions.EngineVersion(plugin.ENGINE, plugin.ENGINE.checked, "assumed"), None)


def served_name(profile) -> str:
    """The model clients request: model.servedName, else the runtime's default (the entry model of a
    Triton repository), else what the engine serves by default (Profile.served_name: the model id)."""
    default = getattr(REGISTRY[profile.runtime], "DEFAULT_SERVED_NAME", None)
    return profile.model.served_name or default or profile.served_name


def checks(plugin: ModuleType, profile) -> list[tuple[tuple, str, str]]:
    """(path, message, code) for the runtime's own rules, if it has any."""
    check = getattr(plugin, "check", None)
    return check(profile) if check else []


def warnings(profile) -> list[tuple[tuple, str, str]]:
    """(path, message, code) the runtime says of a valid profile, if it says anything."""
    warn = getattr(REGISTRY[profile.runtime], "warnings", None)
    return warn(profile) if warn else []
