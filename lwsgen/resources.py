"""Package data (schemas, templates, scripts), read once per process.

templates/ and schemas/ live at the repository top; a wheel installs them inside the package
(lwsgen/templates, lwsgen/schemas: pyproject.toml maps them there, no symlinks). So the data is
found beside the modules when installed, and beside the package in a checkout (editable install).
Plain paths, not importlib.resources, whose first use costs ~3 ms of imports in a cold render.
"""

from __future__ import annotations

import json
from functools import cache
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
