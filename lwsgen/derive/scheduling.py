"""Placement parts of the objects: the LWS annotations and labels, the pods' scheduler and
annotations, and the Volcano Queue, from the scheduling fields (checked in check/scheduling.py)."""

from lwsgen.profile import Profile
from lwsgen.records import Record

VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_GROUP = "kueue.x-k8s.io/podset-group-name"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"


class Queue(Record):
    """A Volcano Queue, emitted when its capacity is declared."""

    name: str
    weight: int
    reclaimable: bool
    capability: dict[str, str]


class Placement(Record):
    lws_annotations: dict[str, str]
    lws_labels: dict[str, str]
    scheduler_name: str | None
    pod_annotations: dict[str, str]
    queue: Queue | None = None


def placement(profile: Profile) -> Placement:
    sched = profile.scheduling
    annotations = {EXCLUSIVE_TOPOLOGY: sched.exclusive_topology} if sched.exclusive_topology else {}
    if sched.scheduler == "volcano":
        if sched.queue:
            annotations[VOLCANO_QUEUE_ANNOTATION] = sched.queue
        annotations.update(sched.pod_group_annotations)
        queue = None
        if sched.queue_capacity:
            queue = Queue(sched.queue, 1, True, {k: str(v) for k, v in sched.queue_capacity.items()})
        return Placement(annotations, {}, "volcano", {}, queue)
    if sched.scheduler == "kueue":
        pod = {KUEUE_TOPOLOGY: sched.required_topology, KUEUE_GROUP: profile.name} if sched.required_topology else {}
        return Placement(annotations, {KUEUE_QUEUE_LABEL: sched.queue}, None, pod)
    return Placement(annotations, {}, None, {})
