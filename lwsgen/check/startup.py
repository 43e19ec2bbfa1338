"""The startup budget: the leader's startup probe covers the rendezvous (the launch script waits for
the group before the engine listens) and the model load (derive/pods.py), and the rendezvous bound
must stay below the load budget. A hub model with no storage is downloaded whole by every pod at
start, inside that budget, and again after every group restart: said out loud."""

from __future__ import annotations

from lwsgen import registry
from lwsgen.check import budget
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE


@registry.rule("rendezvous-over-load", scope=PROFILE, severity=ERROR)
def check(profile: Profile, src: Source) -> list[Problem]:
    """The rendezvous timeout is below the time the group has to load the model, or a slow load would
    be mistaken for a failed group."""
    plan = budget.budget(profile)
    rendezvous, load = plan.rendezvous, plan.load
    if rendezvous < load:
        return []
    return [
        src.problem(
            ("launch", "rendezvousTimeoutSeconds"),
            (
                f"{rendezvous} s is not below the load budget ({load} s, {plan.load_from}): waiting for the group "
                "may not take longer than loading the model; lower it, or raise model.loadTimeoutSeconds"
            ),
            "rendezvous-over-load",
        )
    ]


@registry.rule("download-per-pod", scope=PROFILE, severity=WARNING)
def download_warnings(profile: Profile, src: Source) -> list[Problem]:
    """A hub id as model.path with no storage: every pod downloads the weights itself, each time it starts."""
    path = profile.model.path
    if not budget.downloads_per_pod(profile):
        return []
    pods = profile.group_size * max(profile.groups_at_most, 1)
    size = budget.size(profile)[0]
    amount = (
        f"about {size:,.0f} GB each, {size * pods:,.0f} GB for the {pods} pods there can be"
        if size
        else f"{pods} pods there can be"
    )
    message = (
        f"{path!r} is a hub id and the profile has no storage: every pod downloads the whole model at start "
        f"({amount}) within the startup budget, and a group restart downloads it again; download it once "
        "into a ReadWriteMany claim: set model.source (and storage, storage.create)"
    )
    return [src.problem(("model", "path"), message, "download-per-pod")]
