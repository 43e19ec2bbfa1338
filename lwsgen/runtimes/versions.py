"""Engine versions: which version of the engine the image runs, and which of the engine's facts
(flags, launch modes, endpoints, metric names) apply to it.

Every runtime plugin has an Engine: how its image tags spell the version, the newest version its
table was checked against, and the table itself, one Since row per fact that changed, citing where
the change is written. The version comes from the profile's runtimeVersion or else the image tag;
when neither tells (a digest, a custom tag), the newest checked version is assumed and the check
stage says so (a warning; an error under --strict).

Versions compare as PEP 440 versions (packaging.version), which covers every engine's spelling:
0.8.5, 0.4.6.post1, 1.0.0rc4, llama.cpp's build b6123 (as 6123) and NGC's 24.07. A release
candidate of a cutover version (0.11.1rc1) is before it: whether it has the feature is not known.
"""

from __future__ import annotations

import functools
import re

from packaging.version import InvalidVersion, Version

from lwsgen.records import Record


class Since(Record):
    """From `version` on, the engine has `feature` (before it, it has not)."""

    feature: str
    version: str
    source: str  # release note, PR or file@tag where the change is written
    what: str  # one line for the docs


class Engine(Record):
    title: str  # the engine's own name, for messages
    tag: str  # regex over the image tag whose group 1 is the version
    checked: str  # the newest version this table was checked against, assumed when the tag does not tell
    oldest: str  # the oldest version it was checked against: older ones are said
    table: tuple[Since, ...]
    prefix: str = ""  # how the engine writes a version in messages (llama.cpp builds: "b")

    def since(self, feature: str) -> Since:
        for row in self.table:
            if row.feature == feature:
                return row
        raise KeyError(f"{self.title} has no row {feature!r}")

    def spell(self, version: str) -> str:
        return f"{self.prefix}{version}"


SAID = dict(  # how each origin of a version reads in a message
    runtimeVersion="from runtimeVersion",
    image="from the image tag",
    assumed="assumed: the newest version lwsgen checked",
)


class EngineVersion(Record):
    """The engine version a profile runs, and how lwsgen knows it."""

    engine: Engine
    text: str  # as the tag or runtimeVersion spells it (without the engine's prefix)
    origin: str  # "runtimeVersion", "image" or "assumed"

    @property
    def version(self) -> Version:
        return _parse(self.text)

    def has(self, feature: str) -> bool:
        return self.version >= _parse(self.engine.since(feature).version)

    def needs(self, feature: str, asked: str) -> str | None:
        """None when this version has `feature`; else the error sentence for asking `asked` of it."""
        if self.has(feature):
            return None
        row = self.engine.since(feature)
        return (
            f"{asked} needs {self.engine.title} {self.engine.spell(row.version)} or newer ({row.what}; {row.source}), "
            f"and this profile runs {self.engine.spell(self.text)} ({self.said()}); use an image of "
            f"{self.engine.spell(row.version)} or newer, or set runtimeVersion if the image is newer than its tag says"
        )

    def said(self) -> str:
        return SAID[self.origin]

    @property
    def newer_than_checked(self) -> bool:
        return self.version > _parse(self.engine.checked)

    @property
    def older_than_checked(self) -> bool:
        return self.version < _parse(self.engine.oldest)


@functools.lru_cache(maxsize=256)
def _parse(text: str) -> Version:
    return Version(text)


def parses(text: str) -> bool:
    try:
        _parse(text)
    except InvalidVersion:
        return False
    return True


def given(engine: Engine, runtime_version: str) -> str:
    """runtimeVersion as the table spells versions: without a leading v or the engine's prefix."""
    return runtime_version.removeprefix("v").removeprefix(engine.prefix)


def image_tag(image: str) -> str | None:
    """The tag of an image reference, if it has one (registry ports and digests are not tags)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def image_digest(image: str) -> str | None:
    """The digest an image reference pins, if any."""
    return image.split("@", 1)[1] if "@" in image else None


def from_tag(engine: Engine, image: str) -> str | None:
    tag = image_tag(image)
    match = re.search(engine.tag, tag) if tag else None
    if not match:
        return None
    text = match.group(1)
    return text if parses(text) else None


@functools.lru_cache(maxsize=256)
def resolve(engine: Engine, image: str, runtime_version: str | None) -> EngineVersion:
    stated = given(engine, runtime_version) if runtime_version else None
    if stated and parses(stated):
        return EngineVersion(engine, stated, "runtimeVersion")
    text = from_tag(engine, image)
    if text is not None:
        return EngineVersion(engine, text, "image")
    return EngineVersion(engine, engine.checked, "assumed")  # a runtimeVersion that does not parse is an error


def of(profile, engine: Engine) -> EngineVersion:
    """The engine version the profile runs."""
    return resolve(engine, profile.image, profile.runtime_version)
