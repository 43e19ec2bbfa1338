"""The engine version a profile runs (runtimes/versions.py): said when lwsgen had to assume it or
the image is newer than the version table, and launch.mode only where the runtime has a choice."""

from __future__ import annotations

from lwsgen import registry, runtimes
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE
from lwsgen.runtimes import versions
from lwsgen.runtimes.versions import image_tag


@registry.rule("bad-version", "not-supported", scope=PROFILE, severity=ERROR)
def check(profile: Profile, src: Source) -> list[Problem]:
    """runtimeVersion is a version of the engine, and launch.mode is one the runtime has."""
    return _runtime_version(profile, src) + _launch_mode(profile, src)


def _runtime_version(profile: Profile, src: Source) -> list[Problem]:
    engine = runtimes.get(profile.runtime).engine
    if profile.runtime_version is None or versions.parses(versions.given(engine, profile.runtime_version)):
        return []
    message = (
        f"{profile.runtime_version!r} is not a {engine.title} version; write it as the engine does, e.g. "
        f"{engine.spell(engine.checked)}"
    )
    return [src.problem(("runtimeVersion",), message, "bad-version")]


def _launch_mode(profile: Profile, src: Source) -> list[Problem]:
    plugin = runtimes.get(profile.runtime)
    modes = plugin.launch_modes
    mode = profile.launch.mode
    if mode is None or mode in modes:
        return []
    takes = [n for n in runtimes.known() if mode in runtimes.get(n).launch_modes]
    return [
        src.problem(
            ("launch", "mode"),
            f"{profile.runtime} has one launch mode and no choice of it; launch.mode {mode} applies to: "
            + ", ".join(takes),
            "not-supported",
        )
    ]


@registry.rule("unknown-version", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """The engine version was assumed (the image tag does not tell it): the flags and features are
    those of lwsgen's default version."""
    version = runtimes.engine_version(profile)
    engine = version.engine
    if version.origin == "assumed" and profile.runtime_version is None:
        tag = image_tag(profile.image)
        told = f"the image tag {tag!r}" if tag else "the image reference (a digest, no tag)"
        return [
            src.problem(
                ("image",),
                (
                    f"{told} does not say which {engine.title} version it runs; assumed "
                    f"{engine.spell(engine.checked)}, the newest lwsgen checked, for its flags, probes and metric "
                    "names; set runtimeVersion to the version the image runs"
                ),
                "unknown-version",
            )
        ]
    named = f"{engine.title} {engine.spell(version.text)}"
    if version.older_than_checked:
        said = (
            f"{named} is older than any version lwsgen checked (from {engine.spell(engine.oldest)}); its flags, "
            "probes and metric names were not checked"
        )
    elif version.newer_than_checked:
        said = (
            f"{named} is newer than lwsgen's version table (checked up to {engine.spell(engine.checked)}); its "
            "flags, probes and metric names are assumed unchanged since then"
        )
    else:
        return []
    field = ("runtimeVersion",) if version.origin == "runtimeVersion" else ("image",)
    return [src.problem(field, said, "unknown-version")]
