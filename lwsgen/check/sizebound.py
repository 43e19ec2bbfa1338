"""A deployment no cluster could hold is an error before anything grows with it (lwsgen/bounds.py):
Kubernetes supports at most 5,000 nodes per cluster, and every group takes world-size GPUs."""

import math

from lwsgen import bounds
from lwsgen.load.source import Source
from lwsgen.problems import Problem
from lwsgen.profile import Profile


def problems(profile: Profile, src: Source) -> list[Problem]:
    groups = profile.groups_at_most
    nodes = math.ceil(groups * profile.world_size / profile.node.gpus)
    if nodes <= bounds.MAX_CLUSTER_NODES:
        return []
    field = ("autoscaling", "maxReplicas") if profile.autoscaling.enabled else ("replicas",)
    message = (
        f"{groups} groups of {profile.world_size} GPUs need {nodes} nodes of {profile.node.gpus} GPUs; a Kubernetes "
        f"cluster holds at most {bounds.MAX_CLUSTER_NODES} nodes: ask for fewer groups or a smaller world size"
    )
    return [src.problem(field, message, "too-large")]
