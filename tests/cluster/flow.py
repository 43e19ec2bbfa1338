"""One rendered output on the real control plane, start to end: provide what its user provides,
apply every object, then hold what the controllers, webhooks and scheduler made to what lwsgen and
its simulator assumed (checks.py) and the launcher's RBAC (rbac.py). The problems found, one line
each; the test prints them under `<example> FAIL`."""

from __future__ import annotations

from tests.cluster import checks, rbac
from tests.cluster.deploy import Example, apply_all, cordon, provide


def _hpa_for(objects: list[dict], lws_name: str) -> dict | None:
    for obj in objects:
        if obj["kind"] == "HorizontalPodAutoscaler" and obj["spec"]["scaleTargetRef"].get("name") == lws_name:
            return obj
    return None


def run(cluster, example: Example) -> list[str]:
    api = cluster.admin
    objects = example.objects()
    problems: list[str] = []
    nodes = set(example.node_names())
    try:
        provide(api, example, objects)
        problems += apply_all(api, example, objects)
        for applied, lws in checks.sets_made(api, example.namespace, objects, problems):
            checks.webhook_defaults(applied, lws, problems)
            groups = checks.desired_replicas(api, lws, _hpa_for(objects, lws["metadata"]["name"]))
            pods = checks.group_pods(api, lws, groups, problems)
            if pods and checks.placement(api, pods, nodes, problems):
                checks.readiness(api, lws, pods, groups, problems)
                rbac.launcher(cluster, objects, pods, problems)
        checks.domains(api, example.namespace, *example.domain_keys(), problems)
        checks.selectors(api, example.namespace, objects, problems)
        checks.autoscalers(api, example.namespace, objects, problems)
    finally:
        for node in nodes:
            cordon(api, node)
    return problems


def inference_service(cluster, example: Example) -> list[str]:
    """An InferenceService through KServe's own controller: the head and worker Deployments it makes
    are held to lwsgen's prediction (checks.isvc_made: names, the labels the PodMonitor and
    NetworkPolicy select, the node count and GPUs KServe recomputes, HEAD_SVC), and the head pod is
    placed on the profile's nodes. Not that the group forms: KServe v0.20.0 deletes the worker
    Deployment and headless Services on every reconcile (kserve/kserve#6113, check/platform.py warns)."""
    api, objects = cluster.admin, example.objects()
    problems: list[str] = []
    nodes = set(example.node_names())
    try:
        provide(api, example, objects)
        problems += apply_all(api, example, objects)
        head = checks.isvc_made(api, example.namespace, objects, example.profile.group_size, problems)
        if head is not None:
            checks.placement(api, head, nodes, problems)
    finally:
        for node in nodes:
            cordon(api, node)
    return problems
