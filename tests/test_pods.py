"""One pod builder: the NCCL test pods of both launchers get the node shape of the LeaderWorkerSet's
worker template (shm, resources, volumes, env, node selection, tolerations, scheduler)."""

import pytest

import fastyaml
from conftest import lws_of, merged

SHAPE = {
    "node.gpus": 8,
    "node.gpuProduct": "NVIDIA-H100-80GB-HBM3",
    "node.instanceType": "p5.48xlarge",
    "node.cpu": "64",
    "node.memory": "512Gi",
    "node.shmSize": "256Gi",
    "node.rdmaResource": {"rdma/ib": 4},
    "node.nodeSelector": {"pool": "gpu"},
    "node.tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5"},
    "imagePullSecrets": ["ngc"],
    "scheduling.scheduler": "volcano",
    "scheduling.queue": "gpu",
    "scheduling.priorityClassName": "inference",
    "security.runAsUser": 1000,
}
TEST = {
    "mpijob": {"enabled": True, "launcher": "mpijob", "image": "registry.example.com/nccl-tests:2.16.4"},
    "job": {"enabled": True, "launcher": "job", "image": "nvcr.io/nvidia/pytorch:24.07-py3"},
}
PLACEMENT = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulerName",
    "priorityClassName",
    "imagePullSecrets",
    "securityContext",
)


def _test_pod(rendered, launcher):
    docs = {d["kind"]: d for d in fastyaml.load_all(rendered.files["nccl-test.yaml"])}
    if launcher == "mpijob":
        return docs["MPIJob"]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    return docs["Job"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("launcher", ["mpijob", "job"])
def test_nccl_test_pods_have_the_worker_node_shape(render, minimal, launcher):
    rendered = render(merged(minimal, **SHAPE, ncclTest=TEST[launcher]))
    worker = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    test = _test_pod(rendered, launcher)
    for field in PLACEMENT:
        assert test[field] == worker[field], field
    [serving], [probe] = worker["containers"], test["containers"]
    assert probe["resources"] == serving["resources"]  # GPUs, RDMA, CPU, memory: requests = limits
    shm = next(v for v in worker["volumes"] if v["name"] == "dshm")
    assert shm == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}}
    worker_volumes = {v["name"]: v for v in worker["volumes"]}
    for volume in test["volumes"]:
        if "configMap" not in volume:  # its own scripts; every other volume is the worker's
            assert worker_volumes[volume["name"]] == volume
    assert {"name": "dshm", "mountPath": "/dev/shm"} in probe["volumeMounts"]
    serving_env = {e["name"]: e for e in serving["env"] if e["name"] in SHAPE["env"]}
    assert serving_env and all(serving_env[name] in probe["env"] for name in serving_env)
    assert "IPC_LOCK" in probe["securityContext"]["capabilities"]["add"]  # RDMA pins memory, as on the workers


def test_mpi_launcher_is_a_small_pod_off_the_gpu_nodes(render, minimal):
    rendered = render(merged(minimal, **SHAPE, ncclTest=TEST["mpijob"]))
    docs = {d["kind"]: d for d in fastyaml.load_all(rendered.files["nccl-test.yaml"])}
    launcher = docs["MPIJob"]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert "nodeSelector" not in launcher and "tolerations" not in launcher and "affinity" not in launcher
    assert launcher["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert launcher["imagePullSecrets"] == [{"name": "ngc"}]
