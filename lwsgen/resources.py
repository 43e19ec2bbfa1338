"""Package data (schemas, templates, scripts), read once per process."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=None)
def package_dir(name: str):
    """A Traversable for lwsgen/<name> (templates/ or schemas/), from a checkout or a wheel."""
    return resources.files("lwsgen").joinpath(name)


@lru_cache(maxsize=None)
def schema_bytes(name: str) -> bytes:
    """A JSON schema shipped in schemas/, as it is on disk."""
    return package_dir("schemas").joinpath(name).read_bytes()


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    """A JSON schema shipped in schemas/, parsed once."""
    return json.loads(schema_bytes(name))


@lru_cache(maxsize=None)
def script(name: str) -> str:
    """A launch script shipped in templates/scripts/ (static text, never templated)."""
    return package_dir("templates").joinpath("scripts", name).read_text(encoding="utf-8")
