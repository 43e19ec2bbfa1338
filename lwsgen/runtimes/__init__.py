"""The runtime registry: every runtime is a module with NAME, CAPABILITIES and parts(profile), and
optionally check(profile) for rules of its own; both take the typed Profile (check/profile.py)."""

from __future__ import annotations

from types import ModuleType

from lwsgen.runtimes import aphrodite, llamacpp, sglang, triton_trtllm, trtllm_serve, vllm

REGISTRY: dict[str, ModuleType] = {
    module.NAME: module for module in (triton_trtllm, vllm, aphrodite, sglang, llamacpp, trtllm_serve)
}


def known() -> list[str]:
    return sorted(REGISTRY)


def get(name: str) -> ModuleType | None:
    return REGISTRY.get(name)


def checks(plugin: ModuleType, profile) -> list[tuple[tuple, str, str]]:
    """(path, message, code) for the runtime's own rules, if it has any."""
    check = getattr(plugin, "check", None)
    return check(profile) if check else []
