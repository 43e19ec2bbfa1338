"""What the pipeline hands the writer for one profile (pipeline.py makes it, write.py writes it)."""

from lwsgen.problems import Problem
from lwsgen.profile import Profile
from lwsgen.records import Record


class Rendered(Record):
    """A profile's output directory, in memory: file name -> text."""

    source: str  # the profile file, as named
    profile: Profile
    files: dict[str, str]
    warnings: tuple[Problem, ...]
    name_at: tuple[str, int, int] = ("", 1, 1)  # where `name` is set: the profile, or the base that set it
    path: str = ""  # the profile file, resolved: recorded in .lwsgen-files, so a deleted profile's output is found
    identities: tuple = ()  # (namespace, kind, name, digest) of every object its kustomization applies

    @property
    def name(self) -> str:
        return self.profile.name
