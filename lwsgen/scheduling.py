"""Scheduling and placement: Volcano gang scheduling, Kueue, exclusive topology, and what the
target LeaderWorkerSet version can honour. Rules here refuse what a cluster would not do; the
derived parts are data for the templates.

Facts relied on (LWS >= 0.7 with `gangSchedulingManagement.schedulerProvider: volcano`): the LWS
controller creates one Volcano PodGroup per group, takes the queue from the LWS annotation
`scheduling.volcano.sh/queue-name` and copies every `volcano.sh/*` LWS annotation onto the PodGroup,
but never sets the PodGroup's `spec.networkTopology`.
"""

from typing import Any, NamedTuple

from lwsgen.problems import Problem
from lwsgen.source import Source

VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_GROUP = "kueue.x-k8s.io/podset-group-name"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
# Where the HyperNode intent waits: the pod/PodGroup annotations proposed upstream (volcano PR 4583);
# LWS copies volcano.sh/* annotations onto the PodGroup, so they take effect once Volcano reads them.
NETWORK_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"

# The oldest LeaderWorkerSet release that honours each feature.
MIN_LWS = {
    "RecreateGroupAfterStart": (0, 9),
    "partition": (0, 7),
    "volcano": (0, 7),
    "LWS_WORKER_INDEX": (0, 6),
}


def lws_version(profile: dict[str, Any]) -> tuple[int, int]:
    major, minor = profile["lws"]["version"].split(".")[:2]
    return int(major), int(minor)


def supports(profile: dict[str, Any], feature: str) -> bool:
    return lws_version(profile) >= MIN_LWS[feature]


def _too_old(profile: dict[str, Any], src: Source, path: tuple, feature: str, what: str) -> Problem:
    need = ".".join(map(str, MIN_LWS[feature]))
    return src.problem(path, f"{what} needs LeaderWorkerSet {need} or newer; lws.version is {profile['lws']['version']}", "lws-too-old")


def _version_problems(profile: dict[str, Any], src: Source) -> list[Problem]:
    problems = []
    if profile["lws"]["restartPolicy"] == "RecreateGroupAfterStart" and not supports(profile, "RecreateGroupAfterStart"):
        problems.append(_too_old(profile, src, ("lws", "restartPolicy"), "RecreateGroupAfterStart", "restartPolicy RecreateGroupAfterStart"))
    if "partition" in profile["lws"] and not supports(profile, "partition"):
        problems.append(_too_old(profile, src, ("lws", "partition"), "partition", "a rolling-update partition"))
    if profile["scheduling"]["scheduler"] == "volcano" and not supports(profile, "volcano"):
        problems.append(_too_old(profile, src, ("scheduling", "scheduler"), "volcano", "gang scheduling with Volcano"))
    return problems


def _scheduler_problems(profile: dict[str, Any], src: Source) -> list[Problem]:
    sched = profile["scheduling"]
    scheduler, problems = sched["scheduler"], []
    if sched["queue"] and scheduler == "default":
        problems.append(src.problem(("scheduling", "queue"), "a queue needs scheduler volcano or kueue; the default scheduler has none", "not-applicable"))
    if scheduler == "kueue" and not sched["queue"]:
        problems.append(src.problem(("scheduling", "scheduler"), "Kueue admits workloads from a LocalQueue: set scheduling.queue", "missing-queue"))
    if sched["requiredTopology"] and scheduler != "kueue":
        problems.append(src.problem(("scheduling", "requiredTopology"), (
            f"requiredTopology is Kueue topology-aware scheduling, not available with scheduler {scheduler}; "
            "use scheduling.exclusiveTopology for one group per topology domain"), "not-applicable"))
    volcano_only = (("queueCapacity", "the Volcano Queue"), ("podGroupAnnotations", "PodGroup annotations"), ("networkTopology", "HyperNode network topology"))
    for field_name, what in volcano_only:
        if sched[field_name] and scheduler != "volcano":
            problems.append(src.problem(("scheduling", field_name), f"{what}: only with scheduler volcano, not {scheduler}", "not-applicable"))
    if sched["queueCapacity"] and not sched["queue"]:
        problems.append(src.problem(("scheduling", "queueCapacity"), "name the queue in scheduling.queue to emit it", "missing-queue"))
    if sched["networkTopology"] and scheduler == "volcano" and not sched["exclusiveTopology"]:
        problems.append(src.problem(("scheduling", "networkTopology"), (
            "LeaderWorkerSet-created PodGroups do not carry Volcano networkTopology today, so it would be dropped; "
            "name a node label key in scheduling.exclusiveTopology for the placement that works"), "not-honoured"))
    return problems


def check(profile: dict[str, Any], src: Source) -> list[Problem]:
    return _version_problems(profile, src) + _scheduler_problems(profile, src)


def warnings(profile: dict[str, Any], src: Source, group_size: int) -> list[Problem]:
    sched, out = profile["scheduling"], []
    if sched["networkTopology"] and sched["exclusiveTopology"] and sched["scheduler"] == "volcano":
        out.append(src.problem(("scheduling", "networkTopology"), (
            "networkTopology is not honoured by LeaderWorkerSet-created PodGroups today; groups are placed with "
            f"exclusive-topology on {sched['exclusiveTopology']} instead, and the intent is kept in the "
            f"{NETWORK_TOPOLOGY_MODE} and {NETWORK_TOPOLOGY_TIER} annotations for when Volcano reads them"), "not-honoured"))
    if profile["lws"]["maxSurge"] not in (0, "0%"):
        out.append(src.problem(("lws", "maxSurge"), (
            f"each surge group needs a whole extra set of {group_size} node{'s' if group_size > 1 else ''} "
            "free during a rollout"), "costly"))
    return out


class SchedulingParts(NamedTuple):
    lws_annotations: dict[str, str]
    lws_labels: dict[str, str]
    scheduler_name: str | None
    pod_annotations: dict[str, str]
    queue: dict[str, Any] | None = None  # a Volcano Queue spec, when its capacity is declared


def _network_topology(intent: dict[str, Any]) -> dict[str, str]:
    kept = {}
    if "mode" in intent:
        kept[NETWORK_TOPOLOGY_MODE] = intent["mode"]
    if "highestTierAllowed" in intent:
        kept[NETWORK_TOPOLOGY_TIER] = str(intent["highestTierAllowed"])
    return kept


def parts(profile: dict[str, Any]) -> SchedulingParts:
    sched = profile["scheduling"]
    annotations = {EXCLUSIVE_TOPOLOGY: sched["exclusiveTopology"]} if sched["exclusiveTopology"] else {}
    if sched["scheduler"] == "volcano":
        if sched["queue"]:
            annotations[VOLCANO_QUEUE_ANNOTATION] = sched["queue"]
        annotations.update(sched["podGroupAnnotations"])
        annotations.update(_network_topology(sched["networkTopology"]))
        queue = None
        if sched["queueCapacity"]:
            queue = {"weight": 1, "reclaimable": True, "capability": {k: str(v) for k, v in sched["queueCapacity"].items()}}
        return SchedulingParts(annotations, {}, "volcano", {}, queue)
    if sched["scheduler"] == "kueue":
        pod = {KUEUE_TOPOLOGY: sched["requiredTopology"], KUEUE_GROUP: profile["name"]} if sched["requiredTopology"] else {}
        return SchedulingParts(annotations, {KUEUE_QUEUE_LABEL: sched["queue"]}, None, pod)
    return SchedulingParts(annotations, {}, None, {})
