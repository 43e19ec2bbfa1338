"""Package data (schemas, templates, scripts), read once per process.

The data sits beside the modules (a wheel installs it as files; in a checkout lwsgen/templates and
lwsgen/schemas link to the repository's directories), so it is read with plain paths: the first
use of importlib.resources costs ~3 ms of imports in a cold render (measured in context).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent


def package_dir(name: str) -> Path:
    """lwsgen/<name> (templates or schemas)."""
    return PACKAGE / name


@lru_cache(maxsize=None)
def schema_bytes(name: str) -> bytes:
    """A JSON schema shipped in schemas/, as it is on disk."""
    return (PACKAGE / "schemas" / name).read_bytes()


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    """A JSON schema shipped in schemas/, parsed once."""
    return json.loads(schema_bytes(name))


@lru_cache(maxsize=None)
def script(name: str) -> str:
    """A launch script shipped in templates/scripts/ (static text, never templated)."""
    return (PACKAGE / "templates" / "scripts" / name).read_text(encoding="utf-8")
