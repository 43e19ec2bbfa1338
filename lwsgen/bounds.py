"""What one input may cost, stated once: every reader of files a user wrote (a profile, its bases,
templates, an output directory under `validate`) enforces these at load, before any work grows
with them. docs/security.md lists them (tests/test_bounds.py holds the two equal).

Each bound is far beyond any real deployment and far below what would exhaust this process:
"""

from __future__ import annotations

import os
from pathlib import Path

# --- YAML a user wrote: a profile, a base, a template's output, a file of an output directory ---
MAX_PROFILE_BYTES = 1 << 20  # a profile or base file
MAX_NODES = 50_000  # YAML nodes of one profile document, aliases expanded (an alias bomb)
MAX_DEPTH = 64  # nested mappings and lists; the deepest Kubernetes object lwsgen writes is ~20
MAX_EXPANDED_BYTES = 4 << 20  # characters of all scalars of a document, aliases expanded
MAX_EXTENDS = 32  # bases in one extends chain
MAX_DIGITS = 19  # an integer within int64 (9223372036854775807) has at most 19 digits

# --- paths a profile names (extends, templates) or a command is given ---
MAX_PATH = 1024  # characters; Linux' PATH_MAX is 4096, a repository path is far shorter
MAX_NAME = 255  # bytes of one path component (NAME_MAX of Linux file systems)

# --- what a profile may ask for: pods and objects a real LeaderWorkerSet holds ---
# Kubernetes' scalability limits ("Considerations for large clusters", kubernetes.io/docs/setup/
# best-practices/cluster-large): at most 5,000 nodes. A deployment whose groups (replicas, or
# maxReplicas) need more nodes of node.gpus GPUs than that cannot be placed anywhere.
MAX_CLUSTER_NODES = 5_000
MAX_OBJECTS = 1_000  # objects in one profile's output, templates and patches included
MAX_OBJECT_BYTES = 1_572_864  # one object, as JSON: etcd's default --max-request-bytes (1.5 MiB)
MAX_OUTPUT_BYTES = 32 << 20  # one profile's output directory

MAX_TEMPLATE_BYTES = 4 << 20  # text one of the profile's templates writes

# --- one command ---
MAX_FILES = 20_000  # files read by one command (profiles, bases, output files, templates)
TEMPLATE_CPU_SECONDS = 2  # the CPU time the profile's own templates may take, together
TEMPLATE_MEMORY = 1 << 30  # address space the process rendering them may grow by (bytes)

# Characters a path or name cannot hold: NUL (the kernel's string end) and control characters.
_CONTROL = {*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)}


def path_problem(value: str) -> str | None:
    """What makes a relative path a profile names unusable, or None: NUL and control characters,
    a path over MAX_PATH characters or a component over MAX_NAME bytes."""
    bad = next((ch for ch in value if ord(ch) in _CONTROL), None)
    if bad is not None:
        return f"contains the character U+{ord(bad):04X}, which no path may hold"
    if len(value) > MAX_PATH:
        return f"is {len(value)} characters long; a path is at most {MAX_PATH}"
    longest = max((part for part in value.split("/")), key=lambda p: len(p.encode("utf-8", "surrogatepass")))
    if len(longest.encode("utf-8", "surrogatepass")) > MAX_NAME:
        return f"has a component of {len(longest.encode('utf-8', 'surrogatepass'))} bytes; at most {MAX_NAME}"
    return None


def resolved(path: Path) -> Path | None:
    """path with every link followed, or None when links loop or the path cannot be resolved
    (too long, a NUL): callers say so as a problem, never an exception."""
    try:
        return Path(os.path.realpath(path, strict=False)) if _no_loop(path) else None
    except (OSError, ValueError, RuntimeError):
        return None


def _no_loop(path: Path) -> bool:
    """False when following path's links loops (os.path.realpath stops silently there)."""
    try:
        os.stat(path)
    except OSError as err:
        import errno

        return err.errno not in (errno.ELOOP, errno.ENAMETOOLONG)
    return True
