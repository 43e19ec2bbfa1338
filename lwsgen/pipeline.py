"""The stages in order, for one profile: load -> check -> derive -> render -> parse back -> validate.
Writing (output/write.py) is the caller's, once every profile has passed."""

from pathlib import Path

from lwsgen.check import check
from lwsgen.check.profile import Profile
from lwsgen.derive import derive
from lwsgen.load import load
from lwsgen.load.source import dotted, load_documents
from lwsgen.output import locate, overrides, parse, relations, validate
from lwsgen.problems import Problem, ProblemsError
from lwsgen.records import Record
from lwsgen.render import render


class Rendered(Record):
    """A profile's output directory, in memory: file name -> text."""

    source: str  # the profile file, as named
    profile: Profile
    files: dict[str, str]
    warnings: tuple[Problem, ...]
    name_at: tuple[str, int, int] = ("", 1, 1)  # where `name` is set: the profile, or the base that set it

    @property
    def name(self) -> str:
        return self.profile.name


def load_profile(path: Path, display: str | None = None):
    """Stages 1-2: the typed profile, the loaded source and the warnings; raises ProblemsError."""
    src = load(path, display)
    profile, warnings = check(src)
    return profile, src, warnings


def _output_problems(
    out_dir: str, files: dict[str, str], parsed: dict[str, tuple], version: str, src, origins: overrides.Origins
) -> list[Problem]:
    found: dict[str, list[tuple[int, locate.OutputError]]] = {}
    for name, docs in parsed.items():
        for index, doc in enumerate(docs):
            found.setdefault(name, []).extend((index, error) for error in validate.schema_errors(doc, version, name))
    for name, index, error in relations.cross_object_errors(parsed):
        found.setdefault(name, []).append((index, error))
    problems = []
    for name, errors in sorted(found.items()):
        hatched = [(index, error) for index, error in errors if (name, index) in origins]
        for index, error in hatched:  # an escape hatch made it: said at the hatch, in the profile
            hatch, where = origins[(name, index)], dotted(error.path)
            problems.append(
                src.problem(hatch.path, f"{hatch.label}: {name} {where}: {error.message}", "invalid-output")
            )
        errors = [(index, error) for index, error in errors if (name, index) not in origins]
        if errors and origins:  # an object no hatch touched disagrees with one a hatch did: said at the hatches
            hatch = list(origins.values())[-1]
            for _, error in errors:
                message = f"{hatch.label}: {name} {dotted(error.path)}: {error.message}"
                problems.append(src.problem(hatch.path, message, "invalid-output"))
        elif errors:
            documents = load_documents(files[name], f"{out_dir}/{name}")
            problems += locate.problems(documents, errors, f" (rendered from {src.file})", "invalid-output")
    return problems


def _hatched(profile: Profile, src, path: Path, deployment_for) -> tuple[list, list[Problem], overrides.Origins]:
    """The output files with the profile's templates and patches applied (output/overrides.py)."""
    directory = overrides.templates_dir(profile, src, path)
    replaced = added = ()
    if directory is not None:
        emitted = set(deployment_for(()).objects)
        replaced, added = overrides.template_keys(src, directory, emitted)
    deployment = deployment_for(added)
    builtin = render(deployment, keys=tuple(k for k in deployment.objects if k not in added))
    problems, origins = [], {}
    output = parse.build(builtin)
    if directory is not None:
        user = overrides.render_templates(deployment, directory, (*replaced, *added), src)
        files = overrides.parse_templates({**builtin, **user}, src)
        problems, origins = overrides.template_problems(profile, src, output, files, (*replaced, *added))
        output = files
    if profile.patches:
        output, more, patched = overrides.apply_patches(profile, src, output)
        problems += more + overrides.duplicates(src, ("patches",), output)
        origins.update(patched)
    return output, problems, origins


def render_profile(path: Path, out_root: str = "out", display: str | None = None) -> Rendered:
    """Stages 1-6 for one profile; raises ProblemsError, writes nothing."""
    profile, src, warnings = load_profile(path, display)
    if profile.templates is None and not profile.patches:
        output, problems, origins = parse.build(render(derive(profile, src.file))), [], {}
    else:
        output, problems, origins = _hatched(profile, src, path, lambda added: derive(profile, src.file, added))
    if problems:
        raise ProblemsError(problems)
    parsed = {f.name: f.objects for f in output}
    files = {f.name: parse.dump(f.objects, f.header) for f in output}
    out_dir = f"{out_root}/{profile.name}"
    problems = _output_problems(out_dir, files, parsed, profile.kubernetes_version, src, origins)
    if problems:
        raise ProblemsError(problems)
    name_at = (src.file_of(("name",)), *src.position(("name",)))
    return Rendered(src.file, profile, files, tuple(warnings), name_at)
