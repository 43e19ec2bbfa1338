"""The Argo CD and Flux health checks (docs/argocd, docs/flux) on the status the real LWS controller
writes, through a set's life: created with its groups starting, every group ready, a rolling update,
a partitioned update, and scaled to zero. Each verdict is what tests/lws_status.py's sample of that
moment says; here the status comes from the controller, not from a hand-built sample."""

from __future__ import annotations

import copy

import pytest

from healthchecks import argocd, flux
from tests.cluster import nodes as fake_nodes
from tests.cluster.api import wait_for
from tests.cluster.checks import LWS, pods_of
from tests.cluster.deploy import REPO, Example, on_own_nodes
from tests.conftest import PROFILES

pytestmark = pytest.mark.cluster

EXAMPLE = "vllm-qwen3-235b-a22b"
NAMESPACE = "lifecycle"
PROBES = {"metadata": {"annotations": {"lwsgen.test/probes": "passed"}}}


def _verdicts(obj: dict) -> tuple[str, str]:
    return argocd(obj)[0], flux(obj)


def _lws(api) -> dict:
    return api.get(LWS, "LeaderWorkerSet", "lifecycle", NAMESPACE)


def _pass_probes(api) -> None:
    """What the kubelet's prober would report once the engine serves: every new pod passes."""
    for pod in pods_of(api, NAMESPACE, "lifecycle"):
        if "lwsgen.test/probes" not in pod["metadata"].get("annotations", {}):
            if not pod["metadata"].get("deletionTimestamp"):
                api.merge_patch("v1", "Pod", pod["metadata"]["name"], NAMESPACE, PROBES)


def _settled(api, replicas: int, updated: int):
    """The controller has observed the spec and reports `replicas` ready groups, `updated` of them
    on the current template."""
    _pass_probes(api)
    obj = _lws(api)
    status = obj.get("status", {})
    done = (
        status.get("observedGeneration") == obj["metadata"]["generation"]
        and status.get("readyReplicas", 0) == replicas
        and status.get("updatedReplicas", 0) == updated
        and any(c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions", []))
    )
    return obj if done else None


def _apply(api, lws: dict) -> None:
    api.apply(copy.deepcopy(lws), NAMESPACE)


def _bump(lws: dict, value: str) -> None:
    """A template change (as a new image or flag would be): every pod of an updated group is remade."""
    for side in ("leaderTemplate", "workerTemplate"):
        template = lws["spec"]["leaderWorkerTemplate"][side]
        template["metadata"].setdefault("annotations", {})["lwsgen.test/revision"] = value


def test_health_checks_follow_the_real_controllers_status(cluster):
    api = cluster.admin
    example = Example(EXAMPLE, PROFILES / f"{EXAMPLE}.yaml", REPO / "out" / EXAMPLE)
    lws = next(o for o in example.objects() if o["kind"] == "LeaderWorkerSet")
    lws["metadata"] = {"name": "lifecycle", "namespace": NAMESPACE}
    lws["spec"]["replicas"] = 2
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    nodes_for_two_groups = fake_nodes.nodes("lifecycle", fake_nodes.node_type(example.profile), 2 * size)
    on_own_nodes(api, example, NAMESPACE, lws, nodes_for_two_groups)
    seen = []

    _apply(api, lws)
    starting = wait_for("the groups' pods to run, not ready", lambda: _running(api, 2 * size) and _lws(api))
    seen.append(("groups starting", _verdicts(starting), ("Progressing", "InProgress")))

    ready = wait_for("every group ready", lambda: _settled(api, 2, 2), attempts=480)
    seen.append(("all groups ready", _verdicts(ready), ("Healthy", "Current")))

    _bump(lws, "2")
    _apply(api, lws)
    updating = wait_for("the rolling update to start", lambda: _updating(api))
    seen.append(("rolling update", _verdicts(updating), ("Progressing", "InProgress")))
    done = wait_for("the rolling update to finish", lambda: _settled(api, 2, 2), attempts=480)
    seen.append(("rolling update done", _verdicts(done), ("Healthy", "Current")))

    lws["spec"].setdefault("rolloutStrategy", {}).setdefault("rollingUpdateConfiguration", {})["partition"] = 1
    _bump(lws, "3")
    _apply(api, lws)
    held = wait_for("the partitioned update to finish", lambda: _settled(api, 2, 1), attempts=480)
    seen.append(("partitioned rollout done", _verdicts(held), ("Healthy", "Current")))

    lws["spec"]["replicas"] = 0
    _apply(api, lws)
    zero = wait_for("scaled to zero", lambda: not pods_of(api, NAMESPACE, "lifecycle") and _observed(api))
    seen.append(("zero replicas", _verdicts(zero), ("Healthy", "Current")))

    wrong = [f"{moment}: Argo CD/Flux said {got}, expected {want}" for moment, got, want in seen if got != want]
    assert not wrong, "\n".join(wrong)


def _running(api, count: int) -> bool:
    pods = pods_of(api, NAMESPACE, "lifecycle")
    return len(pods) == count and all(p.get("status", {}).get("phase") == "Running" for p in pods)


def _updating(api):
    obj = _lws(api)
    status = obj.get("status", {})
    if status.get("observedGeneration") != obj["metadata"]["generation"]:
        return None
    conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
    return obj if conditions.get("UpdateInProgress") == "True" or status.get("updatedReplicas", 0) < 2 else None


def _observed(api):
    obj = _lws(api)
    return obj if obj.get("status", {}).get("observedGeneration") == obj["metadata"]["generation"] else None
