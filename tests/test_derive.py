"""Stage 3: sizes, names, labels, selectors and pod placement derived from one profile."""

import pytest

import fastyaml
from conftest import PROFILES, lws_of, merged, objects_of


def _lwt(rendered):
    return lws_of(rendered)["spec"]["leaderWorkerTemplate"]


@pytest.mark.parametrize(
    "tensor, pipeline, gpus, size, per_pod",
    [
        (8, 2, 8, 2, 8),
        (16, 1, 8, 2, 8),
        (8, 4, 8, 4, 8),
        (4, 1, 8, 1, 4),  # world smaller than a node: one pod using world-size GPUs
        (2, 2, 4, 1, 4),
    ],
)
def test_group_size_and_gpus_per_pod(render, minimal, tensor, pipeline, gpus, size, per_pod):
    rendered = render(
        merged(minimal, **{"parallelism.tensor": tensor, "parallelism.pipeline": pipeline, "node.gpus": gpus})
    )
    lwt = _lwt(rendered)
    assert lwt["size"] == size
    assert rendered.profile.world_size == tensor * pipeline
    for side in ("leaderTemplate", "workerTemplate"):
        resources = lwt[side]["spec"]["containers"][0]["resources"]
        assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == str(per_pod)


def test_replicas_written_when_static_and_omitted_when_autoscaling(render, minimal):
    assert lws_of(render(merged(minimal, replicas=3)))["spec"]["replicas"] == 3
    scaled = merged(
        minimal, replicas=3, **{"autoscaling.enabled": True, "autoscaling.maxReplicas": 4, "monitoring.enabled": True}
    )
    assert "replicas" not in lws_of(render(scaled))["spec"]


def test_policies_are_written_out_even_at_their_defaults(render, minimal):
    spec = lws_of(render(minimal))["spec"]
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    custom = lws_of(render(merged(minimal, lws={"restartPolicy": "None", "maxUnavailable": "25%", "maxSurge": 1})))[
        "spec"
    ]
    assert custom["leaderWorkerTemplate"]["restartPolicy"] == "None"
    assert custom["rolloutStrategy"]["rollingUpdateConfiguration"] == {"maxUnavailable": "25%", "maxSurge": 1}


def test_service_selects_leaders_of_this_lws_only_under_another_name(render, minimal):
    service = objects_of(
        render(
            merged(
                minimal,
                service={
                    "type": "LoadBalancer",
                    "annotations": {"a/b": "c"},
                    "loadBalancerSourceRanges": ["10.0.0.0/8"],
                },
            )
        )
    )["service.yaml"]
    assert service["metadata"]["name"] == "demo-leader"
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": "demo",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/8"]
    assert service["metadata"]["annotations"] == {"a/b": "c"}
    assert service["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]


def test_recommended_labels_on_every_object_and_profile_labels_never_selected(render, minimal):
    rendered = render(merged(minimal, labels={"team": "ml"}, annotations={"owner": "me"}))
    for name, obj in objects_of(rendered).items():
        if name in (
            "kustomization.yaml",
            "kustomizeconfig.yaml",
            "kustomize-openapi.yaml",
        ):  # kustomize's files, not cluster objects
            continue
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "demo" and labels["app.kubernetes.io/managed-by"] == "lwsgen"
        assert labels["app.kubernetes.io/name"] == "vllm" and labels["team"] == "ml"
        assert obj["metadata"]["annotations"]["owner"] == "me"
    assert "team" not in objects_of(rendered)["service.yaml"]["spec"]["selector"]


def test_node_selection_is_identical_on_leader_and_workers(render, minimal):
    profile = merged(
        minimal,
        node={
            "gpus": 8,
            "gpuProduct": "NVIDIA-H100-80GB-HBM3",
            "instanceType": "p5.48xlarge",
            "nodeSelector": {"pool": "gpu"},
            "efa": 32,
            "rdmaResource": {"rdma/ib": 2},
            "cpu": "64",
            "memory": "512Gi",
            "shmSize": "256Gi",
        },
        scheduling={"priorityClassName": "high", "exclusiveTopology": "topology.kubernetes.io/zone"},
        imagePullSecrets=["ngc"],
    )
    rendered = render(profile)
    lwt = _lwt(rendered)
    leader, worker = lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]
    for key in ("nodeSelector", "affinity", "tolerations", "priorityClassName", "imagePullSecrets"):
        assert leader[key] == worker[key], key
    assert leader["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge", "pool": "gpu"}
    term = leader["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
    ]
    assert leader["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert leader["imagePullSecrets"] == [{"name": "ngc"}]
    for spec in (leader, worker):
        resources = spec["containers"][0]["resources"]
        assert (
            resources["requests"]
            == resources["limits"]
            == {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "rdma/ib": "2", "vpc.amazonaws.com/efa": "32"}
        )
        shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
        assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "256Gi"}
    annotations = lws_of(rendered)["metadata"]["annotations"]
    assert annotations["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "topology.kubernetes.io/zone"


def test_profile_tolerations_replace_the_default(render, minimal):
    toleration = {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}
    lwt = _lwt(render(merged(minimal, **{"node.tolerations": [toleration]})))
    assert lwt["leaderTemplate"]["spec"]["tolerations"] == lwt["workerTemplate"]["spec"]["tolerations"] == [toleration]


def test_model_claim_mounted_on_leader_and_workers(render, minimal):
    lwt = _lwt(render(merged(minimal, storage={"claimName": "efs-claim", "mountPath": "/models"})))
    for side in ("leaderTemplate", "workerTemplate"):
        spec = lwt[side]["spec"]
        assert {"name": "model", "persistentVolumeClaim": {"claimName": "efs-claim", "readOnly": True}} in spec[
            "volumes"
        ]
        assert {"name": "model", "mountPath": "/models", "readOnly": True} in spec["containers"][0]["volumeMounts"]


def test_startup_probe_budget_follows_the_rendezvous_plus_the_model_load_timeout(render, minimal):
    leader = _lwt(render(merged(minimal, **{"model.loadTimeoutSeconds": 3600})))["leaderTemplate"]["spec"][
        "containers"
    ][0]
    assert leader["startupProbe"]["periodSeconds"] * leader["startupProbe"]["failureThreshold"] == 900 + 3600


def test_profile_env_reaches_every_serving_container_as_strings(render, minimal):
    lwt = _lwt(render(merged(minimal, env={"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": 0, "FI_EFA_FORK_SAFE": True})))
    for side in ("leaderTemplate", "workerTemplate"):
        env = {e["name"]: e.get("value") for e in lwt[side]["spec"]["containers"][0]["env"]}
        assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_IB_DISABLE"] == "0" and env["FI_EFA_FORK_SAFE"] == "true"


def test_scripts_hash_changes_pods_when_scripts_change(render, minimal, monkeypatch):
    from lwsgen import resources

    before = _lwt(render(minimal))["leaderTemplate"]["metadata"]["annotations"]["lwsgen/launch-scripts-sha256"]
    original = resources.script.__wrapped__
    monkeypatch.setattr(resources, "script", lambda name: original(name) + "# changed\n")
    after = _lwt(render(minimal))["leaderTemplate"]["metadata"]["annotations"]["lwsgen/launch-scripts-sha256"]
    assert before != after and len(after) == 64


@pytest.mark.parametrize(
    "example, image, declared, recorded",
    [
        ("vllm-llama31-405b", "vllm/vllm-openai:v0.8.5", "v0.11.1", "0.11.1"),
        ("llamacpp-llama31-70b", "registry.example.com/ml/llama.cpp-rpc-cuda:rebuilt", "b6688", "b6688"),
        ("llamacpp-llama31-70b", "registry.example.com/ml/llama.cpp-rpc-cuda:rebuilt", "6688", "b6688"),
    ],
)
def test_runtime_version_is_recorded_on_the_pods_as_the_engine_spells_it(render, example, image, declared, recorded):
    """The version the flags were written for, with the image it was declared for; none without it."""
    profile = fastyaml.load((PROFILES / f"{example}.yaml").read_text())
    lwt = _lwt(render(merged(profile, image=image, runtimeVersion=declared)))
    for side in ("leaderTemplate", "workerTemplate"):
        annotations = lwt[side]["metadata"]["annotations"]
        assert annotations["lwsgen/runtime-version"] == recorded
        assert annotations["lwsgen/runtime-version-image"] == image
    undeclared = _lwt(render(profile))["leaderTemplate"]["metadata"]["annotations"]
    assert not any(key.startswith("lwsgen/runtime-version") for key in undeclared)
