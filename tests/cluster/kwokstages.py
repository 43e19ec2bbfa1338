"""kwok's stages for the fake GPU nodes and their pods, from kwok's own kustomize/stage (v0.8.0, the
module make cluster builds): nodes initialise and keep their leases; pods are created, initialised,
completed and deleted as upstream plays them. One change: upstream's pod-ready marks every container
ready the moment it runs. A kubelet does that only for a container without a readiness or startup
probe, so here only such a pod goes straight to Ready; a pod with a probe starts NotReady and stays
so until its probes' outcome is given (annotation lwsgen.test/probes: passed), the way the group
simulator or a test that ran them says."""

from __future__ import annotations

import copy
import re

import fastyaml
from tests.cluster import lwsmanifests, modules

PROBES = "lwsgen.test/probes"
STAGE_DIRS = ("node/fast", "node/heartbeat-with-lease", "pod/general")


def upstream_stages() -> list[dict]:
    root = modules.kwok() / "kustomize" / "stage"
    stages = []
    for directory in STAGE_DIRS:
        stages += lwsmanifests.kustomize_build(root / directory)
    return stages


PROBED = ".spec.containers.[] | (.readinessProbe // .startupProbe)"


def _unprobed(ready: dict) -> dict:
    """upstream's pod-ready, for a pod none of whose containers has a readiness or startup probe."""
    stage = copy.deepcopy(ready)
    stage["spec"]["selector"]["matchExpressions"].append({"key": PROBED, "operator": "DoesNotExist"})
    return stage


def _started(ready: dict) -> dict:
    """for a pod with a probe, pod-ready split in two: first running, started, and not ready."""
    stage = copy.deepcopy(ready)
    stage["metadata"]["name"] = "pod-started"
    stage["spec"]["selector"]["matchExpressions"].append({"key": PROBED, "operator": "Exists"})
    template = stage["spec"]["next"]["statusTemplate"]
    ready_conditions = r'status: "True"(\n\s*type: (Ready|ContainersReady)\n)'
    template, conditions = re.subn(ready_conditions, r'status: "False"\1', template)
    template, containers = re.subn(r"ready: true", "ready: false", template)
    assert (conditions, containers) == (2, 1), "kwok's pod-ready stage is not the one this splits"
    stage["spec"]["next"]["statusTemplate"] = template
    return stage


def _ready_after_probes(ready: dict) -> dict:
    """then ready, once the probes' outcome is given."""
    stage = copy.deepcopy(ready)
    stage["metadata"]["name"] = "pod-ready-after-probes"
    expressions = stage["spec"]["selector"]["matchExpressions"]
    stage["spec"]["selector"]["matchExpressions"] = [
        {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": '.status.conditions.[] | select( .type == "Ready" ) | .status', "operator": "In", "values": ["False"]},
        {"key": f'.metadata.annotations["{PROBES}"]', "operator": "In", "values": ["passed"]},
    ]
    assert any(e["key"] == ".status.phase" for e in expressions)  # the upstream stage we split
    stage["spec"]["delay"] = {"durationMilliseconds": 100}
    # keep each container's startedAt: the kubelet does not restart a container to make it ready
    stage["spec"]["next"]["statusTemplate"] = stage["spec"]["next"]["statusTemplate"].replace(
        "startedAt: {{ $now | Quote }}", "startedAt: {{ $origin.state.running.startedAt | Quote }}"
    )
    return stage


def config(exec_dir: str) -> str:
    """The stages, and a ClusterExec that runs `kubectl exec` commands on this machine in exec_dir
    (the tests exec only `true`): an exec the API server authorised reaches kwok's kubelet server and
    completes, so a test tells an authorised exec from a refused one by its exit status."""
    execs = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterExec", "metadata": {"name": "run-here"},
             "spec": {"execs": [{"local": {"workDir": exec_dir}}]}}  # fmt: skip
    stages = []
    for stage in upstream_stages():
        if stage["metadata"]["name"] == "pod-ready":
            stages += [_unprobed(stage), _started(stage), _ready_after_probes(stage)]
        else:
            stages.append(stage)
    for stage in stages:  # pods move at once: the tests wait on controllers, not on kwok's jitter
        delay = stage["spec"].get("delay")
        if delay and stage["spec"]["resourceRef"]["kind"] == "Pod":
            delay["durationMilliseconds"] = min(delay.get("durationMilliseconds", 0), 200)
            delay.pop("jitterDurationMilliseconds", None)
            # upstream's pod-delete waits a random part of the grace period (up to deletionTimestamp),
            # as a process slow to end on SIGTERM would: a rolling update of two groups took ~2 min
            delay.pop("jitterDurationFrom", None)
    return fastyaml.dump_all([*stages, execs], sort_keys=False)
