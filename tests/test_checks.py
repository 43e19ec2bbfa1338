"""Stage 2b: the rules beyond the schema, on their edges."""

import pytest

from conftest import merged, problem_codes
from lwsgen.check.images import image_problem
from lwsgen.naming import name_budget
from lwsgen.pipeline import load_profile
from lwsgen.problems import ProblemsError


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3",
        "vllm/vllm-openai:v0.8.5",
        "localhost:5000/team/model:1.0",
        "registry.example.com:443/a/b/c:tag_1.2-x",
        "vllm/vllm-openai@sha256:" + "a" * 64,
        "vllm/vllm-openai:latest@sha256:" + "b" * 64,  # a digest pins even a latest tag
        "[::1]:5000/img:1",
        "myorg/team/model:1",
    ],
)
def test_pinned_image_references_pass(image):
    assert image_problem(image) is None


@pytest.mark.parametrize(
    "image, why",
    [
        ("vllm/vllm-openai", "neither tag nor digest"),
        ("vllm/vllm-openai:latest", "':latest' is not pinned"),
        ("vllm/vllm-openai:v1 ", "whitespace"),
        ("vllm/vllm-openai:v1\n", "whitespace"),
        ("VLLM/upper:1", "not a valid image reference"),
        ("vllm/vllm-openai:", "not a valid image reference"),
        ("vllm/vllm-openai@sha256:short", "not a valid image reference"),
    ],
)
def test_bad_image_references_say_why(image, why):
    assert why in image_problem(image)


@pytest.mark.parametrize("highest_group_index, budget", [(0, 50), (9, 50), (10, 49), (99, 49), (100, 48), (99999, 46)])
def test_name_budget_keeps_the_statefulset_revision_label_within_63(highest_group_index, budget):
    assert name_budget(highest_group_index) == budget
    revision_label = "n" * budget + f"-{highest_group_index}-" + "h" * 10
    assert len(revision_label) == 63


@pytest.mark.parametrize("replicas, ok_length", [(10, 50), (11, 49), (101, 48)])
def test_name_at_its_budget_passes_and_one_more_fails(write_profile, minimal, replicas, ok_length):
    load_profile(write_profile(merged(minimal, name="n" * ok_length, replicas=replicas)))
    with pytest.raises(ProblemsError) as err:
        load_profile(write_profile(merged(minimal, name="n" * (ok_length + 1), replicas=replicas)))
    assert err.value.problems[0].code == "name-too-long"


def _codes(write_profile, profile):
    return problem_codes(write_profile(profile))


def test_world_size_below_a_node_is_one_pod_not_an_error(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, parallelism={"tensor": 2}, node={"gpus": 8})) == []
    assert _codes(write_profile, merged(minimal, parallelism={"tensor": 12}, node={"gpus": 8})) == ["not-divisible"]


def test_latest_is_accepted_only_when_allowed(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, image="vllm/vllm-openai:latest")) == ["bad-image"]
    assert _codes(write_profile, merged(minimal, image="vllm/vllm-openai:latest", allowLatestImage=True)) == []
    # allowLatestImage never admits a malformed reference
    assert _codes(write_profile, merged(minimal, image="bad image:1", allowLatestImage=True)) == ["bad-image"]


def test_the_kubectl_helper_image_is_checked_too(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, launch={"kubectlImage": "registry.k8s.io/kubectl"})) == ["bad-image"]


def test_profile_labels_cannot_override_ours(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, labels={"app.kubernetes.io/name": "x"})) == ["reserved-label"]
    assert _codes(write_profile, merged(minimal, labels={"leaderworkerset.sigs.k8s.io/name": "x"})) == [
        "reserved-label"
    ]


def test_percent_rollout_above_100_is_refused(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, lws={"maxSurge": "150%"})) == ["out-of-range"]


def test_a_runtime_without_metrics_warns_that_no_podmonitor_is_emitted(write_profile, minimal):
    trtllm = merged(
        minimal,
        runtime="trtllm-serve",
        image="nvcr.io/nvidia/tensorrt-llm/release:0.21.0",
        monitoring={"enabled": True},
    )
    _, _, warnings = load_profile(write_profile(trtllm))
    assert [(w.path, w.code) for w in warnings] == [("monitoring.enabled", "not-emitted")]
    assert "no PodMonitor" in warnings[0].message
    _, _, none = load_profile(write_profile(merged(minimal, monitoring={"enabled": True})))
    assert none == []


def test_autoscaling_needs_monitoring_and_a_quantity_sized_target(write_profile, minimal):
    assert _codes(write_profile, merged(minimal, autoscaling={"enabled": True})) == ["needs-monitoring"]
    on = {"monitoring": {"enabled": True}}
    assert _codes(write_profile, merged(minimal, autoscaling={"enabled": True, "target": 0.8}, **on)) == []
    assert _codes(write_profile, merged(minimal, autoscaling={"enabled": True, "target": 0.0005}, **on)) == [
        "bad-target"
    ]
