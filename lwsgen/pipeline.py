"""The stages in order, for one profile: load -> check -> derive -> render -> parse back -> validate.
Writing (output/write.py) is the caller's, once every profile has passed."""

from pathlib import Path

from lwsgen import bounds
from lwsgen.check import check, editor
from lwsgen.derive import derive
from lwsgen.derive.kinds import listed
from lwsgen.load import load
from lwsgen.load.given import NOTHING, STDIN, Given
from lwsgen.load.source import dotted, load_documents
from lwsgen.output import hatches, locate, parse, relations, validate
from lwsgen.output.hatches import patches, templates
from lwsgen.output.rendered import Rendered
from lwsgen.problems import Finding, Problem, ProblemsError
from lwsgen.profile import Profile
from lwsgen.render import render


def load_profile(path: Path, display: str | None = None, given: Given = NOTHING):
    """Stages 1-2: the typed profile, the loaded source and the warnings; raises ProblemsError."""
    src = load(path, display, given)
    profile, warnings = check(src)
    if str(path) != STDIN:
        warnings = [*warnings, *editor.warnings(path, display or str(path))]
    return profile, src, warnings


def _output_problems(
    out_dir: str,
    files: dict[str, str],
    parsed: dict[str, tuple],
    version: str,
    src,
    origins: hatches.Origins,
    src_profile: Profile | None = None,
) -> list[Problem]:
    found: dict[str, list[tuple[int, Finding]]] = {}
    for name, docs in parsed.items():
        for index, doc in enumerate(docs):
            found.setdefault(name, []).extend((index, error) for error in validate.schema_errors(doc, version, name))
    for name, index, error in relations.cross_object_errors(parsed):
        found.setdefault(name, []).append((index, error))
    problems = []
    for name, errors in sorted(found.items()):
        placed = []
        for index, error in errors:  # what a pod field of the profile put there: said at that field
            at = hatches.field_origin(src_profile, parsed[name][index], tuple(error.path)) if src_profile else None
            if at is not None:
                problems.append(src.problem(at, error.message, "invalid-output"))
                placed.append((index, error))
        errors = [e for e in errors if e not in placed]
        hatched = [(index, error) for index, error in errors if (name, index) in origins]
        for index, error in hatched:  # an escape hatch made it: said at the hatch, in the profile
            hatch, where = origins[(name, index)], dotted(error.path)
            problems.append(
                src.problem(hatch.path, f"{hatch.label}: {name} {where}: {error.message}", "invalid-output")
            )
        errors = [(index, error) for index, error in errors if (name, index) not in origins]
        if errors and origins:  # an object no hatch touched disagrees with one a hatch did: said at the hatches
            field = ("patches",) if src.data.get("patches") else ("templates",)
            for _, error in errors:
                message = f"after the {field[0]}, {name} {dotted(error.path)}: {error.message}"
                problems.append(src.problem(field, message, "invalid-output"))
        elif errors:
            documents = load_documents(files[name], f"{out_dir}/{name}")
            problems += locate.problems(documents, errors, f" (rendered from {src.file})", "invalid-output")
    return list(dict.fromkeys(problems))  # a shared pod field's problem once, not once per role


def _hatched(profile: Profile, src, path: Path, deployment_for) -> tuple[list, list[Problem], hatches.Origins]:
    """The output files with the profile's templates and patches applied (output/hatches/)."""
    directory = templates.templates_dir(profile, src, path)
    replaced, added = templates.template_keys(directory) if directory is not None else ((), ())
    deployment = deployment_for(added)
    if directory is not None:  # lwsgen's kinds: what this profile emits besides the added ones
        emitted = {key for key in deployment.objects if key not in added}
        templates.check_keys(src, directory, (*replaced, *added), emitted)
    builtin = render(deployment, keys=tuple(k for k in deployment.objects if k not in added))
    problems, origins = [], {}
    output = parse.build(builtin)
    if directory is not None:
        user = templates.render_templates(deployment, directory, (*replaced, *added), src)
        files = templates.parse_templates({**builtin, **user}, src, (*replaced, *added))
        problems, origins = templates.template_problems(profile, src, output, files, (*replaced, *added))
        output = files
    if any(p.is_error for p in problems):  # patches apply to objects of the right shape only
        return output, problems, origins
    if profile.patches:
        output, more, patched = patches.apply_patches(profile, src, output)
        problems += more + hatches.duplicates(src, ("patches",), output)
        origins.update(patched)
    return output, problems, origins


def render_profile(path: Path, out_root: str = "out", display: str | None = None, given: Given = NOTHING) -> Rendered:
    """Stages 1-6 for one profile; raises ProblemsError, writes nothing."""
    profile, src, warnings = load_profile(path, display, given)
    if profile.templates is None and not profile.patches:
        output, problems, origins = parse.build(render(derive(profile, src.file))), [], {}
    else:
        output, problems, origins = _hatched(profile, src, path, lambda added: derive(profile, src.file, added))
    if any(p.is_error for p in problems):
        raise ProblemsError(problems)
    warnings = [*warnings, *problems]  # what a hatch did that is allowed but worth saying
    parsed = {f.name: f.objects for f in output}
    files = {f.name: parse.dump(f.objects, f.header) for f in output}
    problems = _size_problems(files, parsed, src)
    if problems:
        raise ProblemsError(problems)
    out_dir = f"{out_root}/{profile.name}"
    problems = _output_problems(out_dir, files, parsed, profile.kubernetes_version, src, origins, profile)
    if problems:
        raise ProblemsError(problems)
    name_at = (src.file_of(("name",)), *src.position(("name",)))
    recorded = "" if str(path) == STDIN else str(path.resolve())  # standard input has no file to record
    return Rendered(src.file, profile, files, tuple(warnings), name_at, recorded, _identities(parsed))


def _size_problems(files: dict[str, str], parsed: dict[str, tuple], src) -> list[Problem]:
    """What the API server would refuse for size (an object over etcd's request limit), and an
    output beyond any deployment's (lwsgen/bounds.py): said at the profile, before anything is written."""
    import json

    count = sum(len(docs) for docs in parsed.values())
    if count > bounds.MAX_OBJECTS:
        message = f"renders {count} objects; one profile's output holds at most {bounds.MAX_OBJECTS}: write fewer"
        return [src.problem((), message, "too-large")]
    total = sum(len(text) for text in files.values())
    if total > bounds.MAX_OUTPUT_BYTES:
        message = f"renders {total} bytes; one profile's output is at most {bounds.MAX_OUTPUT_BYTES}: write less"
        return [src.problem((), message, "too-large")]
    out = []
    for name, text in files.items():
        if len(text) <= bounds.MAX_OBJECT_BYTES:
            continue  # no object of it can be larger than the file
        for obj in parsed[name]:
            size = len(json.dumps(obj, separators=(",", ":")))
            if size > bounds.MAX_OBJECT_BYTES:
                message = (
                    f"{name}: {obj.get('kind')} {(obj.get('metadata') or {}).get('name')} is {size} bytes as JSON; "
                    f"the API server takes at most {bounds.MAX_OBJECT_BYTES} (etcd's request limit)"
                )
                out.append(src.problem((), message, "too-large"))
    return out


def _identities(parsed: dict[str, tuple]) -> tuple:
    """(namespace, kind, name, digest) of what the kustomization applies: two profiles
    may write the same object (a shared model claim), never two different ones (commands/render.py
    compares the digests when two names meet, without keeping the objects)."""

    return tuple(
        (
            (o.get("metadata") or {}).get("namespace"),
            o.get("kind"),
            (o.get("metadata") or {}).get("name"),
            _shared_digest(o),
        )
        for name, docs in sorted(parsed.items())
        if listed(name.removesuffix(".yaml"))
        for o in docs
        if isinstance(o, dict) and o.get("kind") != "Kustomization"
    )


def _shared_digest(obj: dict) -> str:
    """The object as two profiles may share it: their labels and annotations (which profile wrote
    it) aside, so two deployments may mount one model claim (storage.create on both)."""
    import hashlib
    import json

    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("labels", "annotations")}
    text = json.dumps({**obj, "metadata": meta}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
