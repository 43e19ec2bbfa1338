"""Run a launch script from the package with fake tools on PATH that record how they were called."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lwsgen import resources

RECORDER = """#!/bin/bash
printf '%s\\n' "$0 $*" >> "$CALLS"
{body}
"""


def fake(bin_dir: Path, name: str, body: str = "exit 0") -> None:
    path = bin_dir / name
    path.write_text(RECORDER.format(body=body))
    path.chmod(0o755)


def run(script: str, tmp_path: Path, env: dict[str, str], args: tuple[str, ...] = (), timeout: int = 20):
    """Run a packaged script; returns (completed process, calls recorded by the fakes)."""
    bin_dir = tmp_path / "bin"
    script_path = tmp_path / script
    script_path.write_text(resources.script(script))
    (tmp_path / "lib.sh").write_text(resources.script("lib.sh"))
    calls = tmp_path / "calls"
    calls.touch()
    full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "LWSGEN_POLL_SECONDS": "0", **env}
    proc = subprocess.run(
        ["/bin/bash", str(script_path), *args], env=full_env, capture_output=True, text=True, timeout=timeout
    )
    return proc, calls.read_text().splitlines()


def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir(exist_ok=True)
    return path


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def plain(value: str) -> str:
    return os.path.basename(value)
