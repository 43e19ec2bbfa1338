"""What an escape hatch may not do, checked on each object a patch or a user template produced (the
rules of scope hatch, lwsgen/registry.py), named for what they guard: frozen.py (values lwsgen derives,
each named with the profile field that sets it), addsonly.py (a hatch adds, never takes away),
podsecurity.py (host access and privilege beyond security.*) and addedkinds.py (what an object a
template adds may not be). Applying the hatches is output/hatches/."""

from __future__ import annotations

from typing import Any

from lwsgen import registry
from lwsgen.jsondata import not_json
from lwsgen.load.source import Source, dotted
from lwsgen.output.guards import addedkinds, frozen, podsecurity
from lwsgen.output.guards.podsecurity import pod_specs
from lwsgen.output.kindrules import server_errors
from lwsgen.output.validate import schema_errors
from lwsgen.problems import WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.records import Record
from lwsgen.registry import HATCH


class Change(Record):
    """What one hatch did to one object."""

    profile: Profile
    src: Source
    at: tuple  # the hatch in the profile (patches[i], templates)
    label: str  # how a problem names it: "patch 2", "<templates>/service.yaml.j2"
    file: str  # the output file the object is in
    before: dict | None  # lwsgen's object; None: the hatch added it
    after: Any
    devices: frozenset  # the device resources the node gives (frozen.devices)
    selectors: tuple = ()  # an added object: the selectors of lwsgen's objects (addedkinds.selectors_of)
    accounts: frozenset = frozenset()  # an added object: lwsgen's ServiceAccounts


def identity(obj: Any) -> tuple[Any, Any]:
    if not isinstance(obj, dict):
        return None, None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    kind, name = obj.get("kind"), meta.get("name")
    return (kind if isinstance(kind, str) else None), (name if isinstance(name, str) else None)


# What well_formed says: the object is not kept (the rules after it did not read it).
SHAPE_CODES = ("bad-template", "bad-value", "invalid-output")


@registry.rule(*SHAPE_CODES, scope=HATCH, gate=True)
def well_formed(change: Change) -> list[Problem]:
    """What a hatch produced is an object of JSON's data that its strict schema takes; the other hatch
    rules read objects of the right shape, so they wait for this one."""
    src, at, label, obj = change.src, change.at, change.label, change.after
    if not isinstance(obj, dict):
        return [src.problem(at, f"{label} writes a {type(obj).__name__}, not an object", "bad-template")]
    if not_json(obj) is not None:
        message = (
            f"{label}: {change.file} holds a value YAML reads as neither text, number, boolean, list nor mapping, "
            "or an integer beyond int64 (quote it)"
        )
        return [src.problem(at, message, "bad-value")]
    kind, name = identity(obj)
    return [
        src.problem(at, f"{label}: {kind} {name} {dotted(error.path)}: {error.message}", "invalid-output")
        for error in schema_errors(obj, change.profile.kubernetes_version, change.file, api_rules=False)
    ]


@registry.rule("invalid-output", scope=HATCH)
def kubernetes_accepts(change: Change) -> list[Problem]:
    """What a hatch produced passes the API server's own rules beyond its schema (names, ports,
    mounts, a kind's required fields: output/apirules.py). Not a gate: the rules of what a hatch may
    not change still say which profile field to change instead."""
    kind, name = identity(change.after)
    return [
        change.src.problem(
            change.at, f"{change.label}: {kind} {name} {dotted(error.path)}: {error.message}", "invalid-output"
        )
        for error in server_errors(change.after, change.profile.kubernetes_version)
    ]


@registry.rule("derived", scope=HATCH)
def derived_values_kept(change: Change) -> list[Problem]:
    """A hatch changes none of the values lwsgen derives in its objects (frozen.py) and takes nothing
    away (addsonly.py); the message names the profile field to change instead."""
    if change.before is None:
        return []
    kind, name = identity(change.before)
    return [
        change.src.problem(
            change.at,
            f"{change.label} changes {kind} {name} {dotted(path)}; lwsgen derives it from {field}: change that instead",
            "derived",
        )
        for path, field in frozen.changes(change.before, change.after, set(change.devices))
    ]


@registry.rule("host-access", scope=HATCH)
def no_new_holes(change: Change) -> list[Problem]:
    """A pod a hatch produced gets no host access, privilege, node volume or token beyond what the
    profile's security.* allows and lwsgen's own object already had (podsecurity.py)."""
    profile, before, obj = change.profile, change.before, change.after
    kind, name = identity(obj)
    derived = set(podsecurity.holes(profile, before, before)) if before is not None else set()  # lwsgen's own
    return [
        change.src.problem(
            change.at, f"{change.label}: {kind} {name} {dotted(hole.path)}: {hole.message}", "host-access"
        )
        for hole in podsecurity.holes(profile, obj, before)
        if hole not in derived
    ]


@registry.rule("shares-token", scope=HATCH, severity=WARNING)
def token_not_shared(change: Change) -> list[Problem]:
    """A container a hatch adds beside the launcher's ServiceAccount token (the MPI leader: pods/exec on
    the group) gets the token too, as a profile's sidecar there does (check/podhatches.py warns of those)."""
    if change.before is None:
        return []
    out = []
    for path, spec in pod_specs(change.before):
        theirs = frozen.spec_at(change.after, path)
        if spec.get("automountServiceAccountToken") is True and theirs is not None:
            added = len(theirs.get("containers") or []) + len(theirs.get("initContainers") or [])
            if added > len(spec.get("containers") or []) + len(spec.get("initContainers") or []):
                message = (
                    f"{change.label}: {dotted(path)} mounts its launcher's ServiceAccount token (pods/exec on the "
                    "group) into every container: the container this adds can exec into the workers"
                )
                out.append(change.src.problem(change.at, message, "shares-token")._replace(severity=WARNING))
    return out


@registry.rule("refused", scope=HATCH)
def added_kind_allowed(change: Change) -> list[Problem]:
    """An object a template adds grants no access, fences nothing, opens no way to lwsgen's pods and
    stays in the profile's namespace (addedkinds.py)."""
    if change.before is not None:
        return []
    obj = change.after
    why = addedkinds.refusal(change.profile, obj, list(change.selectors), set(change.accounts))
    if why is None:
        return []
    return [change.src.problem(change.at, f"{change.label}: {obj.get('kind')} {identity(obj)[1]}: {why}", "refused")]


def guard(change: Change) -> list[Problem]:
    """Every hatch rule's problems for one change (the shape first: nothing else when it is wrong)."""
    return registry.run(HATCH, None, change)
