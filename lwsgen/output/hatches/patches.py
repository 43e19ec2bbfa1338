"""The profile's `patches:` applied in order to the objects they target (merge.py applies one), each
change held to output/guards/ and said at its patch."""

from __future__ import annotations

from lwsgen.load.source import Source
from lwsgen.output import guards
from lwsgen.output.guards import Change, frozen, identity
from lwsgen.output.hatches import Hatch, Origins, merge
from lwsgen.output.parse import OutputFile
from lwsgen.problems import Problem, ProblemsError
from lwsgen.profile import Profile, thaw


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
    found = frozenset(frozen.devices(profile))
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
                after = merge.merge(before, thaw(entry.patch))
            else:
                after = merge.json_patch(before, thaw(entry.json_patch))
        except merge.PatchError as err:
            field = ("patch",) if entry.patch is not None else ("jsonPatch",)
            problems.append(src.problem(("patches", index, *field, *err.path), err.message, "bad-patch"))
            continue
        label = f"patch {index + 1}"
        said = guards.guard(Change(profile, src, ("patches", index), label, files[f].name, before, after, found))
        problems += said
        if any(p.code in guards.SHAPE_CODES for p in said):  # not kept: the later rules did not read it
            continue
        objects = list(files[f].objects)
        objects[i] = after
        files[f] = files[f]._replace(objects=tuple(objects))
        origins[(files[f].name, i)] = Hatch(("patches", index), label)
    return files, problems, origins
