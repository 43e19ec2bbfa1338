"""The stages in order, for one profile: load -> check -> derive -> render -> parse back -> validate."""

from pathlib import Path
from typing import NamedTuple

from lwsgen import checks, inherit, objects, relations, schema, source, validate
from lwsgen.derive import derive
from lwsgen.model import Deployment
from lwsgen.problems import Problem, ProblemsError
from lwsgen.render import render


class Rendered(NamedTuple):
    """A profile's output directory, in memory: file name -> text."""

    profile: str
    deployment: Deployment
    files: dict[str, str]
    warnings: tuple[Problem, ...]


def load_profile(path: Path, display: str | None = None) -> tuple[dict, source.Source, list[Problem]]:
    """Stages 1-2: the profile with defaults filled in, its source positions, and warnings."""
    src = inherit.load(path, display)
    problems = schema.check_schema(src)
    if problems:
        raise ProblemsError(problems)
    profile = schema.with_defaults(src.data)
    problems = checks.check_rules(profile, src)
    if problems:
        raise ProblemsError(problems)
    if profile["kubernetesVersion"] not in validate.available_versions():
        raise ProblemsError([src.problem(("kubernetesVersion",), (
            f"no bundled Kubernetes schemas for {profile['kubernetesVersion']}; available: {', '.join(validate.available_versions())}"), "unknown-version")])
    return profile, src, checks.warnings(profile, src)


def _output_problems(out_dir: str, files: dict[str, str], parsed: dict[str, tuple], version: str, profile_file: str) -> list[Problem]:
    found: dict[tuple[str, int], list[tuple[tuple, str]]] = {}
    for name, docs in parsed.items():
        for index, doc in enumerate(docs):
            errors = list(validate.schema_errors(doc, version, name))
            if errors:
                found.setdefault((name, index), []).extend(errors)
    for name, index, path, message in relations.cross_object_errors(parsed):
        found.setdefault((name, index), []).append((path, message))
    problems = []
    for (name, index), errors in sorted(found.items()):
        located = source.load_documents(files[name], f"{out_dir}/{name}")[index]
        problems += [located.problem(path, f"{message} (rendered from {profile_file})", "invalid-output", key=message.startswith("unknown field"))
                     for path, message in errors]
    return problems


def render_profile(path: Path, out_root: str = "out", display: str | None = None) -> Rendered:
    """Stages 1-6 for one profile; raises ProblemsError, writes nothing."""
    profile, src, warnings = load_profile(path, display)
    deployment = derive(profile, src.file)
    rendered = render(deployment)
    output = objects.build(deployment, rendered)
    parsed = {f.name: f.objects for f in output}
    files = {f.name: objects.dump(f.objects, f.header) for f in output}
    problems = _output_problems(f"{out_root}/{deployment.name}", files, parsed, profile["kubernetesVersion"], src.file)
    if problems:
        raise ProblemsError(problems)
    return Rendered(src.file, deployment, files, tuple(warnings))
