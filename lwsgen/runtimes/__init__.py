"""The runtime registry: every runtime is a module with NAME, CAPABILITIES and parts(context),
and optionally check(profile) for rules of its own. A render imports only its own runtime's module."""

from __future__ import annotations

import importlib
from types import ModuleType

# runtime name (the profile's `runtime`) -> its module in this package
MODULES = {
    "triton-trtllm": "triton_trtllm",
    "vllm": "vllm",
    "aphrodite": "aphrodite",
    "sglang": "sglang",
    "llamacpp": "llamacpp",
    "trtllm-serve": "trtllm_serve",
}


def known() -> list[str]:
    return sorted(MODULES)


def get(name: str) -> ModuleType | None:
    module = MODULES.get(name)
    return importlib.import_module(f"{__name__}.{module}") if module else None


def checks(plugin: ModuleType, profile: dict) -> list[tuple[tuple, str, str]]:
    """(path, message, code) for the runtime's own rules, if it has any."""
    check = getattr(plugin, "check", None)
    return check(profile) if check else []
