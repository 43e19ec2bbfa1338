"""Stage 7, write: rendered directories to OUT/<name>/ atomically; --check drift; --stdout stream."""

import fcntl
import hashlib
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lwsgen.files import atomic_write
from lwsgen.output.parse import KUSTOMIZATION
from lwsgen.pipeline import Rendered
from lwsgen.records import Record

# Lists the files lwsgen wrote into a directory, so a later render removes only its own files.
MANIFEST = ".lwsgen-files"


def lock_path(out_root: Path) -> Path:
    """The lock of one output root; kept in the temp directory so nothing lands in a GitOps repo."""
    digest = hashlib.sha256(str(out_root.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"lwsgen-{digest}.lock"


@contextmanager
def locked(out_root: Path) -> Iterator[None]:
    """Hold the output root's lock: two renders into one directory never interleave their writes."""
    with open(lock_path(out_root), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stderr.write(f"lwsgen: waiting for another render into {out_root}\n")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _with_manifest(result: Rendered) -> dict[str, str]:
    files = dict(result.files)
    files[MANIFEST] = "".join(f"{name}\n" for name in sorted(result.files))
    return files


def _owned(directory: Path) -> set[str]:
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return set()
    return {
        line.strip() for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip() and "/" not in line
    }


class WriteReport(Record):
    directory: Path
    changed: tuple[str, ...]
    removed: tuple[str, ...]


def write_one(out_root: Path, result: Rendered) -> WriteReport:
    directory = out_root / result.name
    directory.mkdir(parents=True, exist_ok=True)
    files = _with_manifest(result)
    stale = _owned(directory) - set(files)
    changed = []
    for name, text in files.items():
        path = directory / name
        if path.is_file() and path.read_bytes() == text.encode("utf-8"):
            continue  # unchanged files keep their mtime: GitOps tools and make see no change
        atomic_write(path, text)  # the output lock keeps two renders' temporary files apart
        changed.append(name)
    for name in sorted(stale):
        (directory / name).unlink(missing_ok=True)
    return WriteReport(directory, tuple(c for c in changed if c != MANIFEST), tuple(sorted(stale)))


def drift(out_root: Path, result: Rendered) -> list[str]:
    """Lines naming every missing, stale or extra file of OUT/<name>/."""
    directory = out_root / result.name
    files = _with_manifest(result)
    lines = []
    for name, text in sorted(files.items()):
        path = directory / name
        if not path.is_file():
            lines.append(f"{path}: missing")
        elif path.read_bytes() != text.encode("utf-8"):
            lines.append(f"{path}: stale (differs from what {result.source} renders)")
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.name not in files:
                lines.append(f"{path}: extra (not rendered from {result.source})")
    return lines


def stream(results: list[Rendered]) -> str:
    """Every object of every profile as one multi-document YAML stream (no kustomization)."""
    docs = []
    for result in results:
        for name in sorted(result.files):
            if name != KUSTOMIZATION:
                text = result.files[name]
                docs.append(text if not text.startswith("---\n") else text[4:])
    return "".join(f"---\n{doc}" for doc in docs)
