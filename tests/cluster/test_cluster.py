"""make test-cluster: every example applied to the real control plane (tests/cluster/controlplane.py)
and followed through the real controllers, scheduler and webhooks; each prints
`<example> PASS|FAIL` with what failed (conftest.py)."""

from __future__ import annotations

import pytest

from tests.cluster import checks, rbac
from tests.cluster.deploy import REPO, Example, apply_all, cordon, provide
from tests.conftest import PROFILES

pytestmark = pytest.mark.cluster

EXAMPLES = sorted(p.stem for p in PROFILES.glob("*.yaml"))


def _hpa_for(objects: list[dict], lws_name: str) -> dict | None:
    for obj in objects:
        if obj["kind"] == "HorizontalPodAutoscaler" and obj["spec"]["scaleTargetRef"].get("name") == lws_name:
            return obj
    return None


@pytest.mark.parametrize("name", EXAMPLES)
def test_example(cluster, name):
    api = cluster.admin
    example = Example(name, PROFILES / f"{name}.yaml", REPO / "out" / name)
    objects = example.objects()
    problems: list[str] = []
    nodes = set(example.node_names())
    try:
        provide(api, example, objects)
        problems += apply_all(api, example, objects)
        for applied, lws in checks.sets_made(api, example.namespace, objects, problems):
            lws_name = lws["metadata"]["name"]
            checks.webhook_defaults(applied, lws, problems)
            groups = checks.desired_replicas(api, lws, _hpa_for(objects, lws_name))
            pods = checks.group_pods(api, lws, groups, problems)
            if pods:
                if checks.placement(api, pods, nodes, problems):
                    checks.readiness(api, lws, pods, groups, problems)
                    rbac.launcher(cluster, objects, pods, problems)
        checks.selectors(api, example.namespace, objects, problems)
        checks.autoscalers(api, example.namespace, objects, problems)
    finally:
        for node in nodes:
            cordon(api, node)
    dead = cluster.alive()
    assert not dead, dead
    assert not problems, "\n".join(problems)
