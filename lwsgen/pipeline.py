"""The stages in order, for one profile: load -> check -> derive -> render -> parse back -> validate.
Writing (output/write.py) is the caller's, once every profile has passed."""

from pathlib import Path

from lwsgen.check import check
from lwsgen.check.profile import Profile
from lwsgen.derive import derive
from lwsgen.load import load
from lwsgen.load.source import load_documents
from lwsgen.output import locate, parse, relations, validate
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
    out_dir: str, files: dict[str, str], parsed: dict[str, tuple], version: str, profile_file: str
) -> list[Problem]:
    found: dict[str, list[tuple[int, locate.OutputError]]] = {}
    for name, docs in parsed.items():
        for index, doc in enumerate(docs):
            found.setdefault(name, []).extend((index, error) for error in validate.schema_errors(doc, version, name))
    for name, index, error in relations.cross_object_errors(parsed):
        found.setdefault(name, []).append((index, error))
    problems = []
    for name, errors in sorted(found.items()):
        if errors:
            documents = load_documents(files[name], f"{out_dir}/{name}")
            problems += locate.problems(documents, errors, f" (rendered from {profile_file})", "invalid-output")
    return problems


def render_profile(path: Path, out_root: str = "out", display: str | None = None) -> Rendered:
    """Stages 1-6 for one profile; raises ProblemsError, writes nothing."""
    profile, src, warnings = load_profile(path, display)
    deployment = derive(profile, src.file)
    output = parse.build(render(deployment))
    parsed = {f.name: f.objects for f in output}
    files = {f.name: parse.dump(f.objects, f.header) for f in output}
    problems = _output_problems(f"{out_root}/{profile.name}", files, parsed, profile.kubernetes_version, src.file)
    if problems:
        raise ProblemsError(problems)
    name_at = (src.file_of(("name",)), *src.position(("name",)))
    return Rendered(src.file, profile, files, tuple(warnings), name_at)
