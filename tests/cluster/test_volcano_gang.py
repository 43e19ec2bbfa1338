"""Issue #35 req 3 for the volcano-gang variant (tests/cases/valid/volcano-gang): applied to a control plane
whose LWS controller is set up as docs/scheduling.md tells users (gangSchedulingManagement.schedulerProvider:
volcano), the real controller makes one PodGroup per group as lwsgen's docs say it does: named by the
set, the group and its revision, minMember the group size (the LeaderCreated startup policy), the queue
from the set's scheduling.volcano.sh/queue-name annotation, the set's volcano.sh/* annotations copied,
and each pod pointed at its group's PodGroup (scheduling.k8s.io/group-name), bound for the volcano
scheduler.

Found here: with exclusive topology the controller makes a group's workers only once its leader has a
node, while the group's PodGroup asks Volcano for all of them at once (minMember), and Volcano's gang
plugin schedules none of a PodGroup's pods until that many exist (volcano v1.15.1
pkg/scheduler/plugins/gang/gang.go): no group starts. lwsgen rendered that combination (the variant
had it); it now refuses it (gang-never-starts). The second test shows the controller's half.

Not checked: Volcano's own scheduling of those PodGroups. The Go module proxy serves volcano.sh/volcano
only up to v1.10.0 and answers 403 for every later release, so no Volcano scheduler runs here, and
kube-scheduler leaves pods of another schedulerName alone (they stay Pending)."""

from __future__ import annotations

import time

import pytest

from tests.cluster import checks
from tests.cluster.api import wait_for
from tests.cluster.controlplane import ControlPlane
from tests.cluster.deploy import REPO, apply_all, provide, rendered_in

pytestmark = pytest.mark.cluster

CASE = REPO / "tests" / "cases" / "valid" / "volcano-gang"
NAMESPACE = "v-volcano-gang"
PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
GROUP_NAME = "scheduling.k8s.io/group-name"  # volcano.sh/apis v1.12.1 scheduling/v1beta1 KubeGroupNameAnnotationKey
QUEUE_NAME = "scheduling.volcano.sh/queue-name"  # its QueueNameAnnotationKey
REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"  # lws v0.10.0 RevisionKey
EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"  # its ExclusiveKeyAnnotationKey


def _volcano(annotations: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in annotations.items() if k.startswith("volcano.sh/")}


@pytest.fixture(scope="module")
def volcano_plane(tmp_path_factory):
    """A control plane of its own: the provider makes a PodGroup for every group of every set, which
    the other tests' sets must not get."""
    plane = ControlPlane(tmp_path_factory.mktemp("volcano-plane"), kserve=False, gang="volcano")
    try:
        yield plane.start()
    finally:
        plane.stop()


def test_the_lws_controller_makes_the_podgroups_lwsgen_describes(volcano_plane, tmp_path):
    api = volcano_plane.admin
    example = rendered_in(CASE / "profile.yaml", NAMESPACE, tmp_path, "volcano-gang")
    objects = example.objects()
    problems: list[str] = []
    provide(api, example, objects)
    problems += apply_all(api, example, objects)  # the Queue (volcano-queue.yaml) and the rest, strictly
    [(applied, lws)] = checks.sets_made(api, NAMESPACE, objects, problems)
    checks.webhook_defaults(applied, lws, problems)
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    pods = checks.group_pods(api, lws, lws["spec"]["replicas"], problems)
    assert problems == [] and pods

    annotations = applied["metadata"]["annotations"]
    inherited = _volcano(annotations)
    assert inherited == {"volcano.sh/sla-waiting-time": "10m"}, annotations
    for pod in pods:
        assert {pod["spec"]["schedulerName"]} == {"volcano"}
        assert not pod["spec"].get("nodeName"), "kube-scheduler placed a pod meant for Volcano"
    for group in range(lws["spec"]["replicas"]):
        [leader] = [p for p in pods if p["metadata"]["name"] == f"{lws['metadata']['name']}-{group}"]
        expected = f"{lws['metadata']['name']}-{group}-{leader['metadata']['labels'][REVISION]}"
        members = [p for p in pods if p["metadata"]["labels"][checks.GROUP] == str(group)]
        assert {p["metadata"]["annotations"].get(GROUP_NAME) for p in members} == {expected}
        podgroup = wait_for(f"PodGroup {expected}", lambda n=expected: api.find(*PODGROUP, n, NAMESPACE))
        assert podgroup["spec"]["minMember"] == size  # LeaderCreated: the whole group at once
        assert podgroup["spec"]["queue"] == annotations[QUEUE_NAME] == "inference"
        assert _volcano(podgroup["metadata"]["annotations"]) == inherited


def test_an_exclusive_group_under_volcano_gets_no_workers_while_its_leader_waits(volcano_plane, tmp_path):
    """The variant's set with the exclusive-topology annotation added (what lwsgen now refuses): the
    leader and its PodGroup (minMember 2) are made, the workers' StatefulSet is not: it waits for a
    leader Volcano will not place alone."""
    api = volcano_plane.admin
    example = rendered_in(CASE / "profile.yaml", f"{NAMESPACE}-x", tmp_path, "volcano-exclusive")
    objects = [o for o in example.objects() if o["kind"] in ("LeaderWorkerSet", "Queue")]
    provide(api, example, objects)
    [lws] = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    lws["metadata"]["annotations"][EXCLUSIVE] = "topology.k8s.aws/network-node-layer-3"
    assert apply_all(api, example, objects) == []
    name, namespace = lws["metadata"]["name"], example.namespace
    leader = wait_for("the leader pod", lambda: api.find("v1", "Pod", f"{name}-0", namespace))
    podgroup = f"{name}-0-{leader['metadata']['labels'][REVISION]}"
    made = wait_for(f"PodGroup {podgroup}", lambda: api.find(*PODGROUP, podgroup, namespace))
    assert made["spec"]["minMember"] == lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    # the controller made the PodGroup in the reconcile that would have made the workers: a budget of
    # polls more, and still none (the leader has no node: no Volcano runs, and it would not place it)
    for _ in range(6):
        assert api.find("apps/v1", "StatefulSet", f"{name}-0", namespace) is None
        assert not api.get("v1", "Pod", f"{name}-0", namespace)["spec"].get("nodeName")
        time.sleep(0.5)
