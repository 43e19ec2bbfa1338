"""Stage 1, load: bytes -> UTF-8 -> YAML (libyaml) -> data with a position for every node
(source.py), with the bases a profile `extends` merged under it (inherit.py)."""

from pathlib import Path

from lwsgen.load.inherit import load as load_profile_source
from lwsgen.load.source import Source


def load(path: Path, display: str | None = None) -> Source:
    """A profile as data with positions; raises ProblemsError on unreadable or malformed input."""
    return load_profile_source(path, display)
