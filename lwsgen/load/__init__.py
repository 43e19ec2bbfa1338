"""Stage 1, load: bytes -> UTF-8 -> YAML (libyaml) -> data with a position for every node
(source.py), with the bases a profile `extends` merged under it (inherit.py) and what the command
line adds (given.py: --set over it, --default under it, standard input, --root)."""

from pathlib import Path

from lwsgen.load.given import NOTHING, STDIN, Given, sources
from lwsgen.load.inherit import load as load_profile_source
from lwsgen.load.inherit import overlaid
from lwsgen.load.source import Source, decode


def load(path: Path, display: str | None = None, given: Given = NOTHING) -> Source:
    """A profile as data with positions; raises ProblemsError on unreadable or malformed input."""
    text = decode(given.stdin, display or STDIN) if str(path) == STDIN and given.stdin is not None else None
    src = load_profile_source(path, display, root=given.root, text=text)
    if given.sets or given.defaults:
        over, under = sources(given)
        for default in under:
            src = overlaid(src, default)
        for assignment in over:
            src = overlaid(src, assignment)
    return src
