"""The two escape hatches that reach the generated objects themselves, between parse back and
validate: the profile's `patches:` (here; output/patch.py applies one) and its `templates:`
(output/usertemplates.py). What they produce is checked against its strict schema first, then for
what it may not change or open (output/protected.py, output/kept.py); every problem, and every
error in an object they touched, is said at the hatch in the profile."""

from __future__ import annotations

from typing import Any

from lwsgen.check.pods import settings
from lwsgen.jsondata import not_json
from lwsgen.load.source import Source, dotted
from lwsgen.output import patch, podholes, protected
from lwsgen.output.parse import OutputFile
from lwsgen.output.podholes import pod_specs
from lwsgen.output.validate import schema_errors
from lwsgen.problems import WARNING, Problem, ProblemsError
from lwsgen.profile import Profile, thaw
from lwsgen.records import Record

TEMPLATES = ("templates",)


class Hatch(Record):
    """Which hatch last produced an object: where it is in the profile, and how to say it."""

    path: tuple
    label: str


Origins = dict[tuple[str, int], Hatch]


def identity(obj: Any) -> tuple[Any, Any]:
    if not isinstance(obj, dict):
        return None, None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    kind, name = obj.get("kind"), meta.get("name")
    return (kind if isinstance(kind, str) else None), (name if isinstance(name, str) else None)


def _plain(value: Any) -> bool:
    """YAML that is JSON's data (lwsgen/jsondata.py): what every object lwsgen writes is made of."""
    return not_json(value) is None


def malformed(profile: Profile, src: Source, at: tuple, label: str, file: str, obj: Any) -> list[Problem]:
    """What a hatch produced checked first against its strict schema: the rules after it read
    objects of the right shape."""

    if not isinstance(obj, dict):
        return [src.problem(at, f"{label} writes a {type(obj).__name__}, not an object", "bad-template")]
    if not _plain(obj):
        message = (
            f"{label}: {file} holds a value YAML reads as neither text, number, boolean, list nor mapping, or an "
            "integer beyond int64 (quote it)"
        )
        return [src.problem(at, message, "bad-value")]
    kind, name = identity(obj)
    return [
        src.problem(at, f"{label}: {kind} {name} {_say(error.path)}: {error.message}", "invalid-output")
        for error in schema_errors(obj, profile.kubernetes_version, file)
    ]


def _say(path: tuple) -> str:
    return dotted(path)


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


def changed(src: Source, at: tuple, label: str, before: dict, after: dict, found: set[str]) -> list[Problem]:
    kind, name = identity(before)
    return [
        src.problem(
            at,
            f"{label} changes {kind} {name} {_say(path)}; lwsgen derives it from {field}: change that instead",
            "derived",
        )
        for path, field in protected.changes(before, after, found)
    ]


def opened(profile: Profile, src: Source, at: tuple, label: str, obj: dict, before: dict | None) -> list[Problem]:
    kind, name = identity(obj)
    derived = set(podholes.holes(profile, before, before)) if before is not None else set()  # lwsgen's own
    return [
        src.problem(at, f"{label}: {kind} {name} {_say(path)}: {why}", "host-access")
        for path, why in podholes.holes(profile, obj, before)
        if (path, why) not in derived
    ]


def token_sharers(src: Source, at: tuple, label: str, before: dict, after: dict) -> list[Problem]:
    """A warning for each pod template holding its launcher's ServiceAccount token (the MPI
    leader: pods/exec on the group) that the hatch gave another container: it gets the token too,
    as a profile's sidecar there does (check/pods.py warns of those)."""

    out = []
    for path, spec in pod_specs(before):
        theirs = protected.spec_at(after, path)
        if spec.get("automountServiceAccountToken") is True and theirs is not None:
            added = len(theirs.get("containers") or []) + len(theirs.get("initContainers") or [])
            if added > len(spec.get("containers") or []) + len(spec.get("initContainers") or []):
                message = (
                    f"{label}: {_say(path)} mounts its launcher's ServiceAccount token (pods/exec on the group) into "
                    "every container: the container this adds can exec into the workers"
                )
                out.append(src.problem(at, message, "shares-token")._replace(severity=WARNING))
    return out


def _target(src: Source, index: int, target: dict, files: list[OutputFile]) -> tuple[int, int]:
    at = ("patches", index, "target")
    kind, name = target.get("kind"), target.get("name")
    matches = [
        (f, i)
        for f, output in enumerate(files)
        for i, obj in enumerate(output.objects)
        if obj.get("kind") == kind and (name is None or identity(obj)[1] == name)
    ]
    if len(matches) == 1:
        return matches[0]
    same_kind = sorted(str(identity(o)[1]) for f in files for o in f.objects if o.get("kind") == kind)
    if not matches and not same_kind:
        kinds = sorted({str(o.get("kind")) for f in files for o in f.objects if o.get("kind")})
        message = f"no {kind} in the output; its kinds: {', '.join(kinds)}"
    elif not matches:
        message = f"no {kind} named {name!r}; the {kind}s: {', '.join(same_kind)}"
    else:
        message = f"{len(matches)} objects of kind {kind} ({', '.join(same_kind)}); name the one to patch"
    raise ProblemsError([src.problem(at, message, "no-target")])


def apply_patches(
    profile: Profile, src: Source, files: list[OutputFile]
) -> tuple[list[OutputFile], list[Problem], Origins]:
    """The profile's patches applied in order, each positioned where a problem with it is reported."""
    found = protected.devices(profile)
    files, problems, origins = list(files), [], {}
    for index, entry in enumerate(profile.patches):
        try:
            f, i = _target(src, index, entry.target, files)
        except ProblemsError as err:
            problems += err.problems
            continue
        before = files[f].objects[i]
        try:
            if entry.patch is not None:
                after = patch.merge(before, thaw(entry.patch))
            else:
                after = patch.json_patch(before, thaw(entry.json_patch))
        except patch.PatchError as err:
            field = ("patch",) if entry.patch is not None else ("jsonPatch",)
            problems.append(src.problem(("patches", index, *field, *err.path), err.message, "bad-patch"))
            continue
        label = f"patch {index + 1}"
        shape = malformed(profile, src, ("patches", index), label, files[f].name, after)
        if shape:
            problems += shape
            continue
        problems += changed(src, ("patches", index), label, before, after, found)
        problems += opened(profile, src, ("patches", index), label, after, before)
        problems += token_sharers(src, ("patches", index), label, before, after)
        objects = list(files[f].objects)
        objects[i] = after
        files[f] = files[f]._replace(objects=tuple(objects))
        origins[(files[f].name, i)] = Hatch(("patches", index), label)
    return files, problems, origins


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
