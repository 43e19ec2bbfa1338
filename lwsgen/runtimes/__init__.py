"""The runtime registry: every runtime is a module that ends with `RUNTIME = Runtime(...)`, the typed
contract of runtimes/base.py (its name, engine version table, capabilities and parts, and what it
adds to the checks); everything it is given is the typed Profile (profile.py)."""

from __future__ import annotations

from lwsgen.runtimes import aphrodite, llamacpp, sglang, triton_trtllm, trtllm_serve, versions, vllm
from lwsgen.runtimes.base import Capabilities, Runtime

REGISTRY: dict[str, Runtime] = {
    module.RUNTIME.name: module.RUNTIME for module in (triton_trtllm, vllm, aphrodite, sglang, llamacpp, trtllm_serve)
}


def known() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> Runtime | None:
    return REGISTRY.get(name)


def engine_version(profile) -> versions.EngineVersion:
    return versions.of(profile, REGISTRY[profile.runtime].engine)


def capabilities(profile) -> Capabilities:
    """The runtime's facts for the engine version the profile runs."""
    return REGISTRY[profile.runtime].capabilities(engine_version(profile), profile)


def newest_capabilities(name: str) -> Capabilities:
    """The runtime's facts at the newest engine version lwsgen checked (docs, cross-runtime lists)."""
    plugin = REGISTRY[name]
    return plugin.capabilities(versions.EngineVersion(plugin.engine, plugin.engine.checked, "assumed"), None)


def served_name(profile) -> str:
    """The model clients request: model.servedName, else the runtime's default (the entry model of a
    Triton repository), else what the engine serves by default (Profile.served_name: the model id)."""
    default = REGISTRY[profile.runtime].default_served_name
    return profile.model.served_name or default or profile.served_name
