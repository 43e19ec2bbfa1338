"""scheduling.exclusiveTopology on the real LWS webhook and scheduler: with two topology domains of
a group's size each, every group lands whole in one domain and no two groups share one (the LWS pod
webhook's exclusive-topology affinity, pkg/webhooks/pod_webhook.go v0.10.0), the placement the
profile asks for."""

from __future__ import annotations

import pytest

import fastyaml
from tests.cluster import nodes as fake_nodes
from tests.cluster.api import load_all, wait_for
from tests.cluster.checks import pods_of
from tests.cluster.deploy import REPO, Example, on_own_nodes
from tests.conftest import PROFILES

pytestmark = pytest.mark.cluster

EXAMPLE = "vllm-qwen3-235b-a22b"
NAMESPACE = "topology"
BLOCK = "network.example.com/block"


def test_exclusive_topology_puts_each_group_in_its_own_domain(cluster, tmp_path):
    api = cluster.admin
    data = fastyaml.load((PROFILES / f"{EXAMPLE}.yaml").read_text())
    data |= {"name": "topology", "namespace": NAMESPACE, "replicas": 2}
    data.setdefault("scheduling", {})["exclusiveTopology"] = BLOCK
    profile_path = tmp_path / "topology.yaml"
    profile_path.write_text(fastyaml.dump(data))
    example = Example("topology", profile_path, REPO / "out" / EXAMPLE)
    [lws] = [o for o in load_all(example.rendered.files["leaderworkerset.yaml"]) if o["kind"] == "LeaderWorkerSet"]
    assert lws["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == BLOCK
    size = example.profile.group_size
    shape = fake_nodes.node_type(example.profile)
    made = [*fake_nodes.nodes("topology-a", shape, size), *fake_nodes.nodes("topology-b", shape, size)]
    for index, node in enumerate(made):
        node["metadata"]["labels"][BLOCK] = "a" if index < size else "b"
    on_own_nodes(api, example, NAMESPACE, lws, made)
    api.apply(lws, NAMESPACE)

    def placed():
        pods = pods_of(api, NAMESPACE, "topology")
        return pods if len(pods) == 2 * size and all(p["spec"].get("nodeName") for p in pods) else None

    pods = wait_for("every pod of both groups placed", placed, attempts=480)
    block_of = {n["metadata"]["name"]: n["metadata"]["labels"][BLOCK] for n in made}
    groups: dict[str, set[str]] = {}
    for pod in pods:
        group = pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
        groups.setdefault(group, set()).add(block_of[pod["spec"]["nodeName"]])
    assert sorted(groups) == ["0", "1"], groups
    assert all(len(blocks) == 1 for blocks in groups.values()), f"a group spans domains: {groups}"
    assert groups["0"] != groups["1"], f"two groups share a domain: {groups}"
