"""Where the pinned upstream modules' sources are (the Go module cache make cluster fills): the LWS
webhook configuration and RBAC, and kwok's stages, are read from them, not copied."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

VERSIONS = Path(__file__).resolve().parent / "gomod" / "versions.mk"


@functools.cache
def versions() -> dict[str, str]:
    return dict(re.findall(r"^([A-Z_]+) := (\S+)$", VERSIONS.read_text(), re.MULTILINE))


@functools.cache
def source(module: str, version_key: str) -> Path:
    version = versions()[version_key]
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True, check=True
    ).stdout
    return Path(json.loads(out)["Dir"])


def lws() -> Path:
    return source("sigs.k8s.io/lws", "LWS_VERSION")


def kwok() -> Path:
    return source("sigs.k8s.io/kwok", "KWOK_VERSION")
