"""The startup budget: the leader's startup probe covers the rendezvous (the launch script waits for
the group before the engine listens) and the model load (derive/pods.py), and the rendezvous bound
must stay below the load budget."""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.load.source import Source
from lwsgen.problems import Problem


def check(profile: Profile, src: Source) -> list[Problem]:
    rendezvous, load = profile.launch.rendezvous_timeout_seconds, profile.model.load_timeout_seconds
    if rendezvous < load:
        return []
    return [
        src.problem(
            ("launch", "rendezvousTimeoutSeconds"),
            (
                f"{rendezvous} s is not below model.loadTimeoutSeconds ({load} s): waiting for the group may not "
                "take longer than loading the model; lower it, or raise model.loadTimeoutSeconds"
            ),
            "rendezvous-over-load",
        )
    ]
