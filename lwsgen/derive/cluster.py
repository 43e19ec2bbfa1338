"""Files for whoever runs the cluster, kept out of the serving kustomization: the Volcano Queue the
groups are scheduled from (cluster-scoped, often shared) and the eksctl node group of the node shape."""

from lwsgen.derive.context import Context
from lwsgen.derive.model import Meta
from lwsgen.derive.scheduling import Queue
from lwsgen.records import Record


class VolcanoQueue(Record):
    meta: Meta
    queue: Queue


def volcano_queue(ctx: Context, kind) -> VolcanoQueue | None:
    queue = ctx.placement.queue
    if queue is None:
        return None
    # Cluster-scoped and shared by every profile that uses the queue: no namespace, no instance labels.
    labels = {"app.kubernetes.io/component": kind.component, "app.kubernetes.io/managed-by": "lwsgen"}
    return VolcanoQueue(Meta(queue.name, None, labels, None), queue)


class Taint(Record):
    key: str
    value: str
    effect: str


class NodeGroup(Record):
    name: str
    instance_type: str
    max_size: int
    efa: bool
    placement_group: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    tags: dict[str, str]


def eksctl_node_group(ctx: Context, kind) -> NodeGroup | None:
    """An eksctl nodeGroups entry for Cluster Autoscaler: the node shape the LWS selects, scaling
    from 0 to every group at its maximum, with the node-template tags scale-from-zero needs."""
    profile = ctx.profile
    node, name = profile.node, profile.name
    if node.instance_type is None:
        return None
    labels = dict(node.node_selector)
    if node.gpu_product is not None:
        labels["nvidia.com/gpu.product"] = node.gpu_product
    taints = tuple(
        Taint(t["key"], t.get("value", "true"), t["effect"])
        for t in node.tolerations
        if t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")
    )
    template = "k8s.io/cluster-autoscaler/node-template"
    tags = {"k8s.io/cluster-autoscaler/enabled": "true", f"{template}/resources/{node.gpu_resource}": str(node.gpus)}
    if node.efa:
        tags[f"{template}/resources/vpc.amazonaws.com/efa"] = str(node.efa)
    tags.update({f"{template}/label/{k}": v for k, v in labels.items()})
    tags.update({f"{template}/taint/{t.key}": f"{t.value}:{t.effect}" for t in taints})
    return NodeGroup(
        f"{name}-gpu",
        node.instance_type,
        max(profile.groups_at_most, 1) * profile.group_size,
        bool(node.efa),
        f"{name}-placement",
        labels,
        taints,
        dict(sorted(tags.items())),
    )
