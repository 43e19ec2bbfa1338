"""Writing a file whole, and where lwsgen keeps what it caches between runs."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    # A temporary file renamed over the target: readers see the old file or the new one, never half.
    # No fsync: everything lwsgen writes can be regenerated, and fsync per file costs more than
    # rendering it.
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/lwsgen (~/.cache/lwsgen), or None when LWSGEN_NO_CACHE turns caching off."""
    if os.environ.get("LWSGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lwsgen"
