"""Package data (schemas, templates, scripts), read once per process.

templates/ and schemas/ live at the repository top; a wheel installs them inside the package
(lwsgen/templates, lwsgen/schemas: pyproject.toml maps them there, no symlinks). So the data is
found beside the modules when installed, and beside the package in a checkout (editable install).
Plain paths, not importlib.resources, whose first use costs ~3 ms of imports in a cold render.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent


@cache
def package_dir(name: str) -> Path:
    """The templates or schemas directory: inside the installed package, else the checkout's."""
    installed = PACKAGE / name
    return installed if installed.is_dir() else PACKAGE.parent / name


@cache
def schema_bytes(name: str) -> bytes:
    """A JSON schema shipped in schemas/, as it is on disk."""
    return (package_dir("schemas") / name).read_bytes()


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON schema shipped in schemas/, parsed once."""
    return json.loads(schema_bytes(name))


@cache
def script(name: str) -> str:
    """A launch script shipped in templates/scripts/ (static text, never templated)."""
    return (package_dir("templates") / "scripts" / name).read_text(encoding="utf-8")


def kubernetes_schema_root() -> Path:
    """kubernetes-validate's kubernetes-json-schema directory (found without importing that package)."""
    import importlib.util

    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kubernetes-validate is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "kubernetes-json-schema"


@lru_cache(maxsize=4)
def kubernetes_definitions(version: str) -> dict:
    """Kubernetes' OpenAPI definitions of one version (X.Y), by name (io.k8s.api.core.v1.PodSpec, ...)."""
    path = kubernetes_schema_root() / f"v{version}.0-local-strict" / "_definitions.json"
    return json.loads(path.read_text(encoding="utf-8"))["$defs"]
