"""Scheduling rules: refuse what a cluster would not do (Volcano gang scheduling, Kueue, exclusive
topology, and what the target LeaderWorkerSet version can honour), and warn where it is costly.

Facts relied on (LWS >= 0.7 with `gangSchedulingManagement.schedulerProvider: volcano`): the LWS
controller creates one Volcano PodGroup per group, takes the queue from the LWS annotation
`scheduling.volcano.sh/queue-name` and copies every `volcano.sh/*` LWS annotation onto the PodGroup,
but never sets the PodGroup's `spec.networkTopology` (lws v0.10.0 pkg/schedulerprovider/volcano_provider.go).
Its minMember is the group size (1 under lws.startupPolicy LeaderReady), and Volcano's gang
plugin schedules none of a PodGroup's pods while fewer than minMember exist (volcano v1.15.1
pkg/scheduler/plugins/gang/gang.go, validJobFn); with the exclusive-topology annotation the LWS
controller creates a group's workers only once its leader has a node (lws v0.10.0
pkg/controllers/pod_controller.go). Together: the leader waits for its workers and the workers for
their leader, and no group starts (make test-cluster shows the controller's half on the real one).
"""

from lwsgen import registry
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import MIN_LWS, Profile
from lwsgen.registry import PROFILE


def _too_old(profile: Profile, src: Source, path: tuple, feature: str, what: str) -> Problem:
    need = ".".join(map(str, MIN_LWS[feature]))
    return src.problem(
        path, f"{what} needs LeaderWorkerSet {need} or newer; lws.version is {profile.lws.version}", "lws-too-old"
    )


def _version_problems(profile: Profile, src: Source) -> list[Problem]:
    lws, problems = profile.lws, []
    if lws.restart_policy == "RecreateGroupAfterStart" and not lws.supports("RecreateGroupAfterStart"):
        problems.append(
            _too_old(
                profile,
                src,
                ("lws", "restartPolicy"),
                "RecreateGroupAfterStart",
                "restartPolicy RecreateGroupAfterStart",
            )
        )
    if lws.partition is not None and not lws.supports("partition"):
        problems.append(_too_old(profile, src, ("lws", "partition"), "partition", "a rolling-update partition"))
    if profile.scheduling.scheduler == "volcano" and not lws.supports("volcano"):
        problems.append(_too_old(profile, src, ("scheduling", "scheduler"), "volcano", "gang scheduling with Volcano"))
    return problems


def _scheduler_problems(profile: Profile, src: Source) -> list[Problem]:
    sched = profile.scheduling
    scheduler, problems = sched.scheduler, []
    if sched.queue and scheduler == "default":
        problems.append(
            src.problem(
                ("scheduling", "queue"),
                "a queue needs scheduler volcano or kueue; the default scheduler has none",
                "not-applicable",
            )
        )
    if scheduler == "kueue" and not sched.queue:
        problems.append(
            src.problem(
                ("scheduling", "scheduler"),
                "Kueue admits workloads from a LocalQueue: set scheduling.queue",
                "missing-queue",
            )
        )
    if sched.required_topology and scheduler != "kueue":
        problems.append(
            src.problem(
                ("scheduling", "requiredTopology"),
                (
                    f"requiredTopology is Kueue topology-aware scheduling, not available with scheduler {scheduler}; "
                    "use scheduling.exclusiveTopology for one group per topology domain"
                ),
                "not-applicable",
            )
        )
    volcano_only = (
        (("queueCapacity", sched.queue_capacity), "the Volcano Queue"),
        (("podGroupAnnotations", sched.pod_group_annotations), "PodGroup annotations"),
        (("networkTopology", _topology_intent(profile)), "HyperNode network topology"),
    )
    for (field_name, value), what in volcano_only:
        if value and scheduler != "volcano":
            problems.append(
                src.problem(
                    ("scheduling", field_name),
                    f"{what}: only with scheduler volcano, not {scheduler}",
                    "not-applicable",
                )
            )
    if sched.queue_capacity and not sched.queue:
        problems.append(
            src.problem(
                ("scheduling", "queueCapacity"), "name the queue in scheduling.queue to emit it", "missing-queue"
            )
        )
    if _topology_intent(profile) and scheduler == "volcano":
        problems.append(
            src.problem(
                ("scheduling", "networkTopology"),
                (
                    "LeaderWorkerSet-created PodGroups do not carry Volcano networkTopology today, so it would be "
                    "dropped; remove it (for one group per topology domain use scheduling.exclusiveTopology with "
                    "scheduler default or kueue)"
                ),
                "not-honoured",
            )
        )
    gang = profile.group_size if profile.lws.startup_policy != "LeaderReady" else 1  # the PodGroup's minMember
    if sched.exclusive_topology and scheduler == "volcano" and gang > 1:
        problems.append(
            src.problem(
                ("scheduling", "exclusiveTopology"),
                (
                    "with scheduler volcano no group would ever start: the LeaderWorkerSet controller creates an "
                    "exclusive group's workers only once its leader is scheduled, and Volcano schedules none of a "
                    f"group's pods until all {profile.group_size} exist; remove exclusiveTopology, or place groups "
                    "with scheduler default or kueue"
                ),
                "gang-never-starts",
            )
        )
    return problems


def _topology_intent(profile: Profile) -> bool:
    topology = profile.scheduling.network_topology
    return topology is not None and any(value is not None for value in topology)


@registry.rule(
    "lws-too-old", "missing-queue", "not-applicable", "not-honoured", "gang-never-starts", scope=PROFILE, severity=ERROR
)
def check(profile: Profile, src: Source) -> list[Problem]:
    """The gang scheduler chosen is one the LeaderWorkerSet version supports, with its queue named, and
    the scheduling fields given apply to it."""
    return _version_problems(profile, src) + _scheduler_problems(profile, src)


@registry.rule("costly", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """Scheduling that costs whole nodes: a rollout's surge groups."""
    out = []
    if profile.lws.max_surge not in (0, "0%", None):
        group = profile.group_size
        out.append(
            src.problem(
                ("lws", "maxSurge"),
                (
                    f"each surge group needs a whole extra set of {group} node{'s' if group > 1 else ''} "
                    "free during a rollout"
                ),
                "costly",
            )
        )
    return out
