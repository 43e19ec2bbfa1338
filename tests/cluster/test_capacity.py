"""A group that cannot fit stays Pending, for the reason `lwsgen explain` gives for its size: with
one node short of the groups' pods, the real scheduler leaves one pod Pending for want of the GPUs
each pod takes (explain: "<pods> pods x <gpus> GPUs per group"), and the set reports that group
not ready."""

from __future__ import annotations

import pytest

from lwsgen.commands import explain
from tests.cluster import nodes as fake_nodes
from tests.cluster.api import wait_for
from tests.cluster.checks import LWS, pods_of, unschedulable_reason
from tests.cluster.deploy import REPO, Example, on_own_nodes
from tests.conftest import PROFILES

pytestmark = pytest.mark.cluster

EXAMPLE = "vllm-llama31-405b"
NAMESPACE = "capacity"


def test_a_group_one_node_short_stays_pending_for_gpus(cluster):
    api = cluster.admin
    example = Example(EXAMPLE, PROFILES / f"{EXAMPLE}.yaml", REPO / "out" / EXAMPLE)
    profile = example.profile
    size = profile.group_size
    said = explain.text(example.rendered)
    assert f"{size} pods x {profile.gpus_per_pod} GPUs per group" in said
    lws = next(o for o in example.objects() if o["kind"] == "LeaderWorkerSet")
    lws["metadata"] = {"name": "capacity", "namespace": NAMESPACE}
    lws["spec"]["replicas"] = 2
    short = fake_nodes.nodes("capacity", fake_nodes.node_type(profile), 2 * size - 1)
    on_own_nodes(api, example, NAMESPACE, lws, short)
    api.apply(lws, NAMESPACE)

    def one_pending():
        """Every node taken and one pod left over: a worker, or the leader of the second group (then
        the LWS controller makes none of that group's workers while it waits)."""
        pods = pods_of(api, NAMESPACE, "capacity")
        pending = [p for p in pods if unschedulable_reason(api, p) != "no scheduling condition yet"]
        bound = [p for p in pods if p["spec"].get("nodeName")]
        return pending if len(bound) == 2 * size - 1 and len(pending) == 1 else None

    try:
        [pending] = wait_for("every pod but one placed, that one unschedulable", one_pending, attempts=240)
    except AssertionError:
        pods = pods_of(api, NAMESPACE, "capacity")
        seen = [(p["metadata"]["name"], p["spec"].get("nodeName"), unschedulable_reason(api, p)) for p in pods]
        raise AssertionError(seen) from None
    reason = unschedulable_reason(api, pending)
    assert f"Insufficient {profile.node.gpu_resource}" in reason, reason
    status = api.get(LWS, "LeaderWorkerSet", "capacity", NAMESPACE).get("status", {})
    assert status.get("readyReplicas", 0) < 2, status
