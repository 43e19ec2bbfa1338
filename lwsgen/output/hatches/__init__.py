"""Applying the escape hatches that reach the generated objects, between parse back and validate:
the profile's `patches:` (patches.py; merge.py applies one) and its `templates:` (templates.py). What
they may not change, add or open is output/guards/'s rules; every problem, and every error in an
object they touched, is said at the hatch in the profile (Origins: which hatch made which object)."""

from __future__ import annotations

from lwsgen.check.pods import settings
from lwsgen.load.source import Source
from lwsgen.output.guards import identity
from lwsgen.output.parse import OutputFile
from lwsgen.problems import Problem
from lwsgen.profile import Profile
from lwsgen.records import Record

TEMPLATES = ("templates",)


class Hatch(Record):
    """Which hatch last produced an object: where it is in the profile, and how to say it."""

    path: tuple
    label: str


Origins = dict[tuple[str, int], Hatch]


def duplicates(src: Source, at: tuple, files: list[OutputFile]) -> list[Problem]:
    """Two objects of one kind and name: kustomize refuses the set, and a stream applies both."""
    seen: dict[tuple, str] = {}
    out = []
    for output in files:
        for obj in output.objects:
            key = identity(obj)
            if None in key:
                continue  # a configuration fragment, not an object
            if key in seen:
                message = f"{key[0]} {key[1]} is in both {seen[key]} and {output.name}"
                out.append(src.problem(at, message, "duplicate"))
            seen.setdefault(key, output.name)
    return out


SIDE_OF = {"leaderTemplate": "leader", "workerTemplate": "worker"}
HATCH_LISTS = {"containers": "containers", "initContainers": "init_containers", "volumes": "volumes"}


def field_origin(profile: Profile, obj: dict, path: tuple) -> tuple | None:
    """Where in the profile a pod hatch set what an output error points at (a sidecar, an init
    container or a volume of the profile, in a LeaderWorkerSet's template), as a profile path."""

    if obj.get("kind") != "LeaderWorkerSet" or len(path) < 6 or path[:2] != ("spec", "leaderWorkerTemplate"):
        return None
    side, group, index = SIDE_OF.get(path[2]), path[4], path[5]
    if side is None or path[3] != "spec" or group not in HATCH_LISTS or not isinstance(index, int):
        return None
    items = obj["spec"]["leaderWorkerTemplate"][path[2]]["spec"].get(group) or []
    name = items[index].get("name") if index < len(items) and isinstance(items[index], dict) else None
    entries = getattr(settings(profile, side), HATCH_LISTS[group])
    entry = next((e for e in entries if e.value.get("name") == name), None)
    return None if entry is None else (*entry.path, *path[6:])
