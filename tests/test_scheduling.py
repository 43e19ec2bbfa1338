"""Gang scheduling, Kueue, placement and LWS version gating: what the cluster will honour, or why not."""

import pytest

import fastyaml
from conftest import lws_of, merged, objects_of, problem_codes
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError
from lwsgen.profile import MIN_LWS


def _templates(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"], lwt["workerTemplate"]


def _codes(write_profile, profile):
    return problem_codes(write_profile(profile))


VOLCANO = {
    "scheduling": {
        "scheduler": "volcano",
        "queue": "inference",
        "podGroupAnnotations": {"volcano.sh/sla-waiting-time": "10m"},
    }
}


def test_volcano_gang_scheduling_on_both_templates_and_queue_as_lws_annotation(render, minimal):
    rendered = render(merged(minimal, **VOLCANO))
    for template in _templates(rendered):
        assert template["spec"]["schedulerName"] == "volcano"
    annotations = lws_of(rendered)["metadata"]["annotations"]
    assert annotations["scheduling.volcano.sh/queue-name"] == "inference"
    assert annotations["volcano.sh/sla-waiting-time"] == "10m"
    assert "volcano-queue.yaml" not in rendered.files


def test_a_declared_queue_capacity_emits_the_queue_outside_the_kustomization(render, minimal):
    profile = merged(minimal, **VOLCANO)
    profile["scheduling"]["queueCapacity"] = {"nvidia.com/gpu": 64, "memory": "4Ti"}
    rendered = render(profile)
    queue = objects_of(rendered)["volcano-queue.yaml"]
    assert (
        queue["kind"] == "Queue" and queue["metadata"]["name"] == "inference" and "namespace" not in queue["metadata"]
    )
    assert queue["spec"]["capability"] == {"nvidia.com/gpu": "64", "memory": "4Ti"}
    assert "volcano-queue.yaml" not in fastyaml.load(rendered.files["kustomization.yaml"])["resources"]


def test_exclusive_topology_under_volcano_is_refused_where_no_group_could_start(write_profile, render, minimal):
    """LWS makes an exclusive group's workers once its leader is scheduled; Volcano schedules none of a
    PodGroup's pods until minMember (the group size) exist (check/scheduling.py): a group of one is fine."""
    exclusive = {"scheduler": "volcano", "queue": "q", "exclusiveTopology": "topology.k8s.aws/network-node-layer-3"}
    assert _codes(write_profile, merged(minimal, scheduling=exclusive)) == ["gang-never-starts"]
    alone = merged(minimal, scheduling=exclusive, parallelism={"tensor": 8, "pipeline": 1})
    lws = lws_of(render(alone))
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 1
    assert (
        lws["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"]
        == exclusive["exclusiveTopology"]
    )


def test_network_topology_is_refused_with_volcano_whatever_else_is_set(write_profile, minimal):
    for extra in ({}, {"exclusiveTopology": "topology.k8s.aws/network-node-layer-3"}):
        scheduling = {"scheduler": "volcano", "networkTopology": {"mode": "hard", "highestTierAllowed": 2}, **extra}
        codes = _codes(write_profile, merged(minimal, scheduling=scheduling))
        assert codes == ["not-honoured", *(["gang-never-starts"] if extra else [])]


def test_network_topology_without_a_key_is_refused(write_profile, minimal):
    profile = merged(minimal, scheduling={"scheduler": "volcano", "networkTopology": {"mode": "soft"}})
    assert _codes(write_profile, profile) == ["not-honoured"]


def test_exclusive_topology_works_with_the_default_scheduler(render, minimal):
    annotations = lws_of(render(merged(minimal, scheduling={"exclusiveTopology": "cloud.google.com/gke-nodepool"})))[
        "metadata"
    ]["annotations"]
    assert annotations == {"leaderworkerset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}


def test_kueue_queue_label_and_topology_aware_podset_annotations(render, minimal):
    rendered = render(
        merged(
            minimal,
            scheduling={
                "scheduler": "kueue",
                "queue": "team-a",
                "requiredTopology": "cloud.google.com/gce-topology-block",
            },
        )
    )
    lws = lws_of(rendered)
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    for template in _templates(rendered):
        assert "schedulerName" not in template["spec"]
        annotations = template["metadata"]["annotations"]
        assert annotations["kueue.x-k8s.io/podset-required-topology"] == "cloud.google.com/gce-topology-block"
        assert annotations["kueue.x-k8s.io/podset-group-name"] == "demo"


def test_kueue_without_topology_adds_no_podset_annotations(render, minimal):
    for template in _templates(render(merged(minimal, scheduling={"scheduler": "kueue", "queue": "team-a"}))):
        assert not any(k.startswith("kueue.x-k8s.io/") for k in template["metadata"]["annotations"])


@pytest.mark.parametrize(
    "scheduling, code",
    [
        ({"scheduler": "kueue"}, "missing-queue"),
        ({"queue": "q"}, "not-applicable"),
        ({"requiredTopology": "topology.kubernetes.io/zone"}, "not-applicable"),
        ({"scheduler": "kueue", "queue": "q", "podGroupAnnotations": {"volcano.sh/x": "y"}}, "not-applicable"),
        ({"scheduler": "volcano", "queueCapacity": {"cpu": "8"}}, "missing-queue"),
    ],
)
def test_scheduling_fields_the_scheduler_cannot_honour_are_refused(write_profile, minimal, scheduling, code):
    assert _codes(write_profile, merged(minimal, scheduling=scheduling)) == [code]


FEATURES = {
    "RecreateGroupAfterStart": {"lws": {"restartPolicy": "RecreateGroupAfterStart"}},
    "partition": {"lws": {"partition": 1}},
    "volcano": {"scheduling": {"scheduler": "volcano"}},
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_features_are_gated_on_the_target_lws_version(write_profile, minimal, feature):
    major, minor = MIN_LWS[feature]
    changes = FEATURES[feature]
    at_minimum = merged(minimal, **changes)
    at_minimum.setdefault("lws", {})["version"] = f"{major}.{minor}"
    assert _codes(write_profile, at_minimum) == []
    too_old = merged(at_minimum, **{"lws.version": f"{major}.{minor - 1}"})
    with pytest.raises(ProblemsError) as err:
        load_profile(write_profile(too_old))
    [problem] = err.value.problems
    assert problem.code == "lws-too-old" and f"needs LeaderWorkerSet {major}.{minor} or newer" in problem.message


def test_below_lws_0_6_the_worker_index_comes_from_the_downward_api(render, minimal):
    old = merged(minimal, runtime="sglang", image="lmsysorg/sglang:v0.5.23", **{"lws.version": "0.5"})
    for template in _templates(render(old)):
        [env] = [e for e in template["spec"]["containers"][0]["env"] if e["name"] == "LWS_WORKER_INDEX"]
        assert (
            env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"
        )
    for template in _templates(render(merged(old, **{"lws.version": "0.6"}))):
        assert all(e["name"] != "LWS_WORKER_INDEX" for e in template["spec"]["containers"][0]["env"])


def test_partition_is_written_and_surge_warns_about_whole_node_sets(write_profile, render, minimal):
    profile = merged(minimal, lws={"partition": 2, "maxSurge": 1})
    config = lws_of(render(profile))["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert config == {"maxUnavailable": 1, "maxSurge": 1, "partition": 2}
    _, _, [warning] = load_profile(write_profile(profile))
    assert warning.path == "lws.maxSurge" and "whole extra set of 2 nodes" in warning.message


def test_leader_ready_is_refused_with_a_message_naming_it(write_profile, minimal):
    with pytest.raises(ProblemsError) as err:
        load_profile(write_profile(merged(minimal, lws={"startupPolicy": "LeaderReady"})))
    assert "LeaderReady" in err.value.problems[0].message


def test_priority_class_is_on_both_templates(render, minimal):
    for template in _templates(render(merged(minimal, scheduling={"priorityClassName": "inference-high"}))):
        assert template["spec"]["priorityClassName"] == "inference-high"
