"""The editor schema a profile file names in its yaml-language-server modeline: an overlay
(`extends:`) checked against the whole-profile schema shows false errors in the editor and in
check-jsonschema (fields its base provides "missing"), so lwsgen says which schema it needs."""

import re
from pathlib import Path

from lwsgen.problems import Problem

_MODELINE = re.compile(rb"^#\s*yaml-language-server:\s*\$schema=(\S+)", re.M)
_EXTENDS = re.compile(rb"^extends\s*:", re.M)
FULL, PARTIAL = "profile.schema.json", "profile-partial.schema.json"


def warnings(path: Path, display: str) -> list[Problem]:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return []
    match = _MODELINE.search(head)
    if match is None or not _EXTENDS.search(head) or not match.group(1).decode(errors="replace").endswith(FULL):
        return []
    line = head[: match.start()].count(b"\n") + 1
    message = (
        f"this overlay's editor schema is {FULL}, which requires what its base provides: editors and "
        f"check-jsonschema report false errors; name {PARTIAL} in the modeline instead"
    )
    return [Problem(display, line, 1, "", message, "editor-schema", severity="warning")]
