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


def applied_only(cluster, example: Example) -> list[str]:
    """Every object applied (strict field validation, the CRDs' CEL rules), nothing followed: for kinds
    whose controller does not run here."""
    objects = example.objects()
    provide(cluster.admin, example, objects)
    return apply_all(cluster.admin, example, objects)
