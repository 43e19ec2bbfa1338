"""The two escape hatches that reach the generated objects themselves, between parse back and
validate: the profile's `templates:` (a directory whose <kind>.yaml.j2 replaces lwsgen's template
or adds a kind) and its `patches:` (output/patch.py). Whatever they produce is validated like the
rest; what they may not change or open (output/protected.py), and every error in an object they
touched, is a problem at the hatch in the profile: the `templates` field or the patch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lwsgen.check.profile import Profile, thaw
from lwsgen.load.source import Source
from lwsgen.output import patch, protected
from lwsgen.output.parse import OutputFile
from lwsgen.problems import Problem, ProblemsError
from lwsgen.records import Record

TEMPLATES = ("templates",)
NOT_REPLACEABLE = ("kustomization",)  # built from the other files


class Hatch(Record):
    """Which hatch last produced an object: where it is in the profile, and how to say it."""

    path: tuple
    label: str


Origins = dict[tuple[str, int], Hatch]


def templates_dir(profile: Profile, src: Source, profile_path: Path) -> Path | None:
    """The `templates:` directory, resolved from the profile file that sets it and confined to that
    profile's directory or git work tree (as `extends` is); raises ProblemsError."""
    from lwsgen.load.inherit import work_tree

    if profile.templates is None:
        return None
    setter = src.file_of(TEMPLATES)
    base = profile_path if setter == src.file else Path(setter)
    directory = (base.parent / profile.templates).resolve()
    roots = [base.resolve().parent, *filter(None, [work_tree(base)])]
    if os.path.isabs(profile.templates) or not any(directory.is_relative_to(root) for root in roots):
        message = "must be a relative path inside this profile's directory or its git work tree"
        raise ProblemsError([src.problem(TEMPLATES, message, "templates-outside")])
    if not directory.is_dir():
        raise ProblemsError(
            [src.problem(TEMPLATES, f"no directory {profile.templates!r} beside the profile", "missing")]
        )
    return directory


def template_keys(src: Source, directory: Path, emitted: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(lwsgen's kinds replaced, kinds added) by the directory's <key>.yaml.j2 files; `_*` files are
    macros to import, not kinds."""
    import re

    from lwsgen.derive.kinds import BY_KEY
    from lwsgen.render import user_templates

    keys = [key for key in user_templates(directory) if not key.startswith("_")]
    problems = []
    for key in keys:
        if key in NOT_REPLACEABLE:
            problems.append(src.problem(TEMPLATES, f"{key}.yaml.j2: lwsgen builds {key}.yaml from the files", "taken"))
        elif key in BY_KEY and key not in emitted:
            message = f"{key}.yaml.j2 replaces lwsgen's {key}, which this profile does not emit ({BY_KEY[key].when})"
            problems.append(src.problem(TEMPLATES, message, "not-emitted"))
        elif key not in BY_KEY and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", key):
            message = f"{key}.yaml.j2: a kind's name is lower-case letters, digits and '-' (its file is {key}.yaml)"
            problems.append(src.problem(TEMPLATES, message, "bad-name"))
    if problems:
        raise ProblemsError(problems)
    if not keys:
        raise ProblemsError([src.problem(TEMPLATES, f"no <kind>.yaml.j2 in {directory}", "missing")])
    return tuple(k for k in keys if k in BY_KEY), tuple(k for k in keys if k not in BY_KEY)


def render_templates(deployment, directory: Path, keys: tuple[str, ...], src: Source) -> dict[str, str]:
    """The directory's templates rendered; a template that fails is a problem at `templates`."""
    import jinja2
    from jinja2.sandbox import SecurityError

    from lwsgen.render import render, unquoted_blocks

    for key in keys:
        found = unquoted_blocks(directory, key)
        if found:
            message = f"{key}.yaml.j2:{found}: a filter block writes its text without the q filter; use {{{{ x | q }}}}"
            raise ProblemsError([src.problem(TEMPLATES, message, "unquoted")])

    rendered = {}
    for key in keys:
        try:
            rendered.update(render(deployment, directory, (key,)))
        except jinja2.TemplateError as err:
            line = f":{err.lineno}" if getattr(err, "lineno", None) else ""
            message = f"{key}.yaml.j2{line}: {type(err).__name__}: {err.message or err}"
            raise ProblemsError([src.problem(TEMPLATES, message, "bad-template")]) from None
        except TypeError as err:  # finalize: a value placed without the q filter
            raise ProblemsError([src.problem(TEMPLATES, f"{key}.yaml.j2: {err}", "unquoted")]) from None
        except SecurityError as err:  # the sandbox: what a template may not reach
            raise ProblemsError([src.problem(TEMPLATES, f"{key}.yaml.j2: {err}", "unsafe")]) from None
    return rendered


def parse_templates(rendered: dict[str, str], src: Source):
    """The templates' text parsed back; YAML that is not objects is a problem at `templates`."""
    import yaml

    from lwsgen.output import parse

    try:
        return parse.build(rendered)
    except yaml.YAMLError as err:
        raise ProblemsError(
            [src.problem(TEMPLATES, f"a template writes YAML that does not parse: {err}", "bad-template")]
        ) from None


def _identity(obj: Any) -> tuple[Any, Any]:
    if not isinstance(obj, dict):
        return None, None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return obj.get("kind"), meta.get("name")


# Kinds an added template may not write: access (RBAC), fencing (NetworkPolicy) and what is not
# namespaced, so outside the profile's namespace (by Kubernetes' own scope of each kind).
REFUSED_KINDS = {
    "Role": "RBAC is lwsgen's to derive (the runtime's launcher)",
    "RoleBinding": "RBAC is lwsgen's to derive (the runtime's launcher)",
    "NetworkPolicy": "policies add up: a second one would admit what lwsgen's fences (service.allowedSources)",
}
CLUSTER_SCOPED = {
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
    "RuntimeClass",
    "IngressClass",
    "CustomResourceDefinition",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "CertificateSigningRequest",
    "FlowSchema",
    "PriorityLevelConfiguration",
    "ClusterTrustBundle",
    "DeviceClass",
    "ServiceCIDR",
    "IPAddress",
    "ResourceSlice",
    "VolumeAttributesClass",
}


def _added_object(profile: Profile, obj: dict) -> str | None:
    """Why an object of an added kind may not be written, if it may not."""
    from lwsgen.derive.naming import LWS_NAME_LABEL

    kind, meta = obj.get("kind"), obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if kind in REFUSED_KINDS:
        return f"a {kind}: {REFUSED_KINDS[kind]}"
    if kind in CLUSTER_SCOPED or str(kind).startswith("Cluster"):
        return f"a {kind} is cluster-scoped: a profile writes only into its namespace"
    if meta.get("namespace") != profile.namespace:
        return f"metadata.namespace must be the profile's namespace {profile.namespace!r} (place meta(v.meta))"
    selector = (obj.get("spec") or {}).get("selector") if isinstance(obj.get("spec"), dict) else None
    if kind == "Service" and isinstance(selector, dict) and selector.get(LWS_NAME_LABEL) == profile.name:
        return "a Service of this LWS's pods would expose them past lwsgen's; use service.extraPorts"
    return None


def _say(path: tuple) -> str:
    from lwsgen.load.source import dotted

    return dotted(path)


def template_problems(
    profile: Profile, src: Source, builtin: list[OutputFile], files: list[OutputFile], keys: tuple[str, ...]
) -> tuple[list[Problem], Origins]:
    """A replacing template must keep every object of lwsgen's and every value it derives."""
    from lwsgen.derive.kinds import file_of

    found = protected.devices(profile)
    before = {f.name: f for f in builtin}
    problems, origins = [], {}
    for output in files:
        key = output.name[: -len(".yaml")]
        if key not in keys:
            continue
        label = f"templates/{key}.yaml.j2"
        ours = {_identity(o): o for o in (before[output.name].objects if output.name in before else ())}
        theirs = {_identity(o): o for o in output.objects}
        for identity in ours.keys() - theirs.keys():
            message = f"{label} leaves out {identity[0]} {identity[1]} of {file_of(key)}; lwsgen derives it"
            problems.append(src.problem(TEMPLATES, message, "derived"))
        for index, obj in enumerate(output.objects):
            origins[(output.name, index)] = Hatch(TEMPLATES, label)
            if not isinstance(obj, dict):
                problems.append(
                    src.problem(TEMPLATES, f"{label} writes a {type(obj).__name__}, not an object", "bad-template")
                )
                continue
            if _identity(obj) in ours:
                problems += _changed(src, TEMPLATES, label, ours[_identity(obj)], obj, found)
            elif (why := _added_object(profile, obj)) is not None:
                problems.append(
                    src.problem(TEMPLATES, f"{label}: {obj.get('kind')} {_identity(obj)[1]}: {why}", "refused")
                )
            problems += _holes(profile, src, TEMPLATES, label, obj, ours.get(_identity(obj)))
    return problems + duplicates(src, TEMPLATES, files), origins


def duplicates(src: Source, at: tuple, files: list[OutputFile]) -> list[Problem]:
    """Two objects of one kind and name: kustomize refuses the set, and a stream applies both."""
    seen: dict[tuple, str] = {}
    out = []
    for output in files:
        for obj in output.objects:
            identity = _identity(obj)
            if None in identity:
                continue  # a configuration fragment, not an object
            if identity in seen:
                message = f"{identity[0]} {identity[1]} is in both {seen[identity]} and {output.name}"
                out.append(src.problem(at, message, "duplicate"))
            seen.setdefault(identity, output.name)
    return out


def _changed(src: Source, at: tuple, label: str, before: dict, after: dict, found: set[str]) -> list[Problem]:
    kind, name = _identity(before)
    return [
        src.problem(
            at,
            f"{label} changes {kind} {name} {_say(path)}; lwsgen derives it from {field}: change that instead",
            "derived",
        )
        for path, field in protected.changes(before, after, found)
    ]


def _holes(profile: Profile, src: Source, at: tuple, label: str, obj: dict, before: dict | None) -> list[Problem]:
    kind, name = _identity(obj)
    derived = set(protected.holes(profile, before, before)) if before is not None else set()  # lwsgen's own
    return [
        src.problem(at, f"{label}: {kind} {name} {_say(path)}: {why}", "host-access")
        for path, why in protected.holes(profile, obj, before)
        if (path, why) not in derived
    ]


def _target(src: Source, index: int, target: dict, files: list[OutputFile]) -> tuple[int, int]:
    at = ("patches", index, "target")
    kind, name = target.get("kind"), target.get("name")
    matches = [
        (f, i)
        for f, output in enumerate(files)
        for i, obj in enumerate(output.objects)
        if obj.get("kind") == kind and (name is None or _identity(obj)[1] == name)
    ]
    if len(matches) == 1:
        return matches[0]
    same_kind = sorted(str(_identity(o)[1]) for f in files for o in f.objects if o.get("kind") == kind)
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
        problems += _changed(src, ("patches", index), label, before, after, found)
        problems += _holes(profile, src, ("patches", index), label, after, before)
        objects = list(files[f].objects)
        objects[i] = after
        files[f] = files[f]._replace(objects=tuple(objects))
        origins[(files[f].name, i)] = Hatch(("patches", index), label)
    return files, problems, origins
