"""Fake GPU nodes shaped like a profile's node type, for kwok to keep Ready and the real scheduler to
fill. Built from the profile (not from lwsgen's output), so the scheduler checks that the output's
requests, node selectors, affinity and tolerations fit the node the profile describes: the labels GPU
feature discovery puts on such a node (nvidia.com/gpu.product, .count, .present), its topology
labels, the taints an operator puts on GPU nodes for the profile's tolerations, and allocatable
resources a little above what one pod may ask (a kubelet reserves some for the system)."""

from __future__ import annotations

import math

from lwsgen.quantity import parse as quantity
from tests.cluster.controlplane import KWOK_NODE

DEFAULT_PRODUCT = "NVIDIA-H100-80GB-HBM3"
SYSTEM_CPU, SYSTEM_MEMORY, SYSTEM_DISK = 4, 32 * 2**30, 100 * 2**30


def _above(value, reserve, default):
    return str(int(quantity(str(value))) + reserve + 1 if value is not None else default)


def _pod_needs(profile, resource: str) -> str | None:
    """The most one pod of the profile asks of the resource: its engine's (node.cpu/memory, or the
    leader's or worker's own resources) with every sidecar and init container's limit beside it."""
    base = getattr(profile.node, resource)
    if base is None:
        return None
    most = 0.0
    for role in (profile.leader, profile.worker):
        engine = quantity(str((role.resources or {}).get(resource, base)))
        added = [*profile.containers, *profile.init_containers, *role.containers, *role.init_containers]
        limits = (((c.get("resources") or {}).get("limits") or {}).get(resource) for c in added)
        most = max(most, engine + sum(quantity(str(v)) for v in limits if v is not None))
    return str(math.ceil(most))


def _required_labels(profile) -> dict[str, str]:
    """A label value each `In` expression of the profile's required node affinity accepts, as the
    cluster the profile is written for has on its GPU nodes."""
    labels = {}
    for affinity in (profile.affinity, profile.leader.affinity, profile.worker.affinity):
        required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        for term in (required or {}).get("nodeSelectorTerms", [])[:1]:
            for expression in term.get("matchExpressions", []):
                if expression.get("operator") == "In" and expression.get("values"):
                    labels[expression["key"]] = expression["values"][0]
    return labels


def node_type(profile) -> dict:
    """Labels, taints and allocatable of one node of the profile's node type."""
    node = profile.node
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        "node.kubernetes.io/instance-type": node.instance_type or "gpu-node",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(node.gpus),
        "nvidia.com/gpu.product": node.gpu_product or DEFAULT_PRODUCT,
        **dict(node.node_selector),
        **_required_labels(profile),
    }
    taints = [
        {"key": t["key"], "value": t.get("value", "true"), "effect": t["effect"]}
        for t in node.tolerations
        if t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute") and t.get("operator") != "Exists"
    ] + [
        {"key": t["key"], "effect": t["effect"]}
        for t in node.tolerations
        if t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute") and t.get("operator") == "Exists"
    ]
    allocatable = {
        "cpu": _above(_pod_needs(profile, "cpu"), SYSTEM_CPU, "192"),
        "memory": _above(_pod_needs(profile, "memory"), SYSTEM_MEMORY, str(2 * 2**40)),
        "ephemeral-storage": _above(node.ephemeral_storage, SYSTEM_DISK, str(4 * 2**40)),
        "pods": "110",
        "hugepages-2Mi": "0",
        node.gpu_resource: str(node.gpus),
    }
    if node.efa:
        allocatable["vpc.amazonaws.com/efa"] = str(node.efa)
    for name, count in dict(node.rdma_resource).items():
        allocatable[name] = str(count)
    return {"labels": labels, "taints": taints, "allocatable": allocatable}


def nodes(prefix: str, shape: dict, count: int, zone: str = "zone-a") -> list[dict]:
    out = []
    for index in range(count):
        name = f"{prefix}-{index}"
        out.append({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE: "fake"},
                "labels": {"topology.kubernetes.io/zone": zone, **shape["labels"], "kubernetes.io/hostname": name},
            },
            "spec": {"taints": shape["taints"]} if shape["taints"] else {},
            "status": {"allocatable": shape["allocatable"], "capacity": shape["allocatable"]},
        })  # fmt: skip
    return out
