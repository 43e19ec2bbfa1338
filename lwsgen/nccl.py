"""NCCL all-reduce preflight on the exact shape of one inference group, and the eksctl node group
that shape needs. Both are one-off or infrastructure files kept out of the serving kustomization.

The test pods copy the worker pod of the LeaderWorkerSet: node selection, GPU product affinity,
tolerations, scheduler and priority, GPU/EFA/RDMA/CPU/memory requests (= limits), the profile's
env, /dev/shm, pull secrets and pod security. Two launchers:

- `mpijob` (Kubeflow MPI operator, kubeflow.org/v2beta1): `group size` workers running sshd with
  `slotsPerWorker` = GPUs per pod; the launcher runs nccl-tests' `all_reduce_perf -b 8 -e <maxBytes>
  -f 2 -g 1` under `mpirun -np <world size>` and prints a one-line verdict. Needs `ncclTest.image`
  with nccl-tests, OpenMPI and sshd.
- `job` (no operator): an Indexed Job (completions = parallelism = group size) behind a headless
  Service, `torchrun` running an all-reduce script from a ConfigMap on the serving image.
"""

from __future__ import annotations

from typing import Any

from lwsgen.model import PodTemplate
from lwsgen.problems import Problem
from lwsgen.source import Source

SUFFIX = "-nccl-test"
SCRIPTS_MOUNT = "/lwsgen/nccl"
MASTER_PORT = 29500
# sshd (the MPI operator reaches its workers over ssh) needs these beyond what the serving pods keep.
SSHD_CAPABILITIES = ["AUDIT_WRITE", "CHOWN", "KILL", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT"]
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}


def check(profile: dict[str, Any], src: Source, caps, group_size: int) -> list[Problem]:
    test = profile["ncclTest"]
    if not test["enabled"]:
        return []
    problems = []
    if test["launcher"] == "mpijob" and not test["image"]:
        problems.append(src.problem(("ncclTest", "image"), (
            "the mpijob launcher needs an image with nccl-tests (all_reduce_perf), OpenMPI and sshd; "
            "set ncclTest.image, or use launcher job, which runs on the serving image"), "missing-image"))
    if test["launcher"] == "job" and not test["image"] and not caps.image_has_pytorch:
        problems.append(src.problem(("ncclTest", "image"), (
            f"the job launcher runs PyTorch, which the {profile['runtime']} image lacks; set ncclTest.image to an image with PyTorch and NCCL"), "missing-image"))
    hostname = f"{profile['name']}{SUFFIX}-{group_size - 1}"
    if test["launcher"] == "job" and len(hostname) > 63:
        problems.append(src.problem(("name",), f"the NCCL test pod hostname {hostname!r} would exceed 63 characters; shorten the name", "name-too-long"))
    return problems


def _test_env(profile: dict[str, Any], extra: dict[str, str]) -> list[dict[str, str]]:
    env = {**(EFA_ENV if profile["node"]["efa"] else {}), **{k: _text(v) for k, v in profile["env"].items()},
           **profile["ncclTest"]["env"], **extra}
    return [{"name": name, "value": value} for name, value in env.items()]


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _resources(profile: dict[str, Any], worker: PodTemplate) -> dict[str, Any]:
    amounts = dict(worker.containers[0]["resources"]["limits"])
    if profile["node"]["efa"]:
        amounts["hugepages-2Mi"] = str(profile["ncclTest"]["hugepages2Mi"])
        amounts.setdefault("memory", "32Gi")  # Kubernetes wants memory or cpu requested beside hugepages
    amounts = dict(sorted(amounts.items()))
    return {"requests": amounts, "limits": dict(amounts)}


def _placement(worker: PodTemplate) -> dict[str, Any]:
    """The scheduling half of a pod spec, as the LWS worker has it."""
    return {
        "schedulerName": worker.scheduler_name,
        "priorityClassName": worker.priority_class,
        "imagePullSecrets": worker.image_pull_secrets,
        "nodeSelector": worker.node_selector,
        "affinity": worker.affinity,
        "tolerations": worker.tolerations,
        "securityContext": worker.security_context,
        "automountServiceAccountToken": False,
    }


SHM = ({"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"})


def _labels(base: dict[str, str]) -> dict[str, str]:
    return {**base, "app.kubernetes.io/component": "nccl-test"}


def mpijob(profile: dict[str, Any], worker: PodTemplate, meta: dict[str, Any], world: int, group: int, gpus: int) -> dict[str, Any]:
    test, image = profile["ncclTest"], profile["ncclTest"]["image"]
    env = _test_env(profile, {"LWSGEN_MIN_BUS_BW_GBPS": _text(test["minBusBandwidthGBps"])})
    forwarded = [flag for e in env if not e["name"].startswith("LWSGEN_") for flag in ("-x", e["name"])]
    mpirun = [test["mpirun"], "--allow-run-as-root", "--tag-output", "-np", str(world), "-N", str(gpus), "--bind-to", "none",
              "-x", "PATH", "-x", "LD_LIBRARY_PATH", *forwarded,
              test["allReducePerf"], "-b", "8", "-e", test["maxBytes"], "-f", "2", "-g", "1"]
    rdma = ["IPC_LOCK"] if profile["node"]["efa"] or profile["node"]["rdmaResource"] else []
    small = {"cpu": "1", "memory": "2Gi"}
    launcher = {
        "metadata": {"labels": _labels(worker.labels)},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": worker.security_context,
            "imagePullSecrets": worker.image_pull_secrets,
            "containers": [{"name": "launcher", "image": image, "command": ["/bin/bash", f"{SCRIPTS_MOUNT}/nccl-mpi-verdict.sh"],
                            "args": mpirun, "env": env, "resources": {"requests": small, "limits": dict(small)},
                            "volumeMounts": [{"name": "scripts", "mountPath": SCRIPTS_MOUNT, "readOnly": True}],
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "scripts", "configMap": {"name": meta["name"], "defaultMode": 0o555}}],
        },
    }
    workers = {
        "metadata": {"labels": _labels(worker.labels)},
        "spec": {
            **_placement(worker),
            "containers": [{"name": "worker", "image": image, "command": ["/usr/sbin/sshd", "-De"], "env": env,
                            "resources": _resources(profile, worker), "volumeMounts": [SHM[1]],
                            "securityContext": {"allowPrivilegeEscalation": False,
                                                "capabilities": {"drop": ["ALL"], "add": sorted(SSHD_CAPABILITIES + rdma)}}}],
            "volumes": [SHM[0]],
        },
    }
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0, "activeDeadlineSeconds": test["timeoutSeconds"]}
    queue = profile["scheduling"]["queue"]
    if profile["scheduling"]["scheduler"] == "volcano":
        run_policy["schedulingPolicy"] = {"minAvailable": group + 1, **({"queue": queue} if queue else {})}
    return {
        "slotsPerWorker": gpus,
        "runPolicy": run_policy,
        "mpiImplementation": "OpenMPI",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": launcher},
            "Worker": {"replicas": group, "restartPolicy": "Never", "template": workers},
        },
    }


def indexed_job(profile: dict[str, Any], worker: PodTemplate, meta: dict[str, Any], group: int, gpus: int) -> dict[str, Any]:
    test = profile["ncclTest"]
    name = meta["name"]
    env = _test_env(profile, {"LWSGEN_MAX_BYTES": test["maxBytes"], "LWSGEN_MIN_BUS_BW_GBPS": _text(test["minBusBandwidthGBps"])})
    command = ["torchrun", "--nnodes", str(group), "--nproc-per-node", str(gpus), "--node-rank", "$(JOB_COMPLETION_INDEX)",
               "--master-addr", f"{name}-0.{name}", "--master-port", str(MASTER_PORT), f"{SCRIPTS_MOUNT}/nccl_allreduce.py"]
    container = {"name": "nccl-test", "image": test["image"] or profile["image"], "command": command, "env": env,
                 "resources": _resources(profile, worker),
                 "volumeMounts": [SHM[1], {"name": "scripts", "mountPath": SCRIPTS_MOUNT, "readOnly": True}],
                 "securityContext": worker.containers[0]["securityContext"]}
    return {
        "completionMode": "Indexed",
        "completions": group,
        "parallelism": group,
        "backoffLimit": 0,
        "activeDeadlineSeconds": test["timeoutSeconds"],
        "template": {
            "metadata": {"labels": _labels(worker.labels)},
            "spec": {**_placement(worker), "subdomain": name, "restartPolicy": "Never", "containers": [container],
                     "volumes": [SHM[0], {"name": "scripts", "configMap": {"name": name, "defaultMode": 0o555}}]},
        },
    }


def headless_service(worker: PodTemplate) -> dict[str, Any]:
    """Stable DNS for the test pods (<job>-<index>.<service>), before they are ready."""
    selector = {k: v for k, v in _labels(worker.labels).items() if k in ("app.kubernetes.io/instance", "app.kubernetes.io/component")}
    return {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": selector}


def eksctl_node_group(profile: dict[str, Any], group: int) -> dict[str, Any]:
    """An eksctl nodeGroups entry for Cluster Autoscaler: the node shape the LWS selects, scaling
    from 0 to every group at its maximum, with the node-template tags scale-from-zero needs."""
    node, name = profile["node"], profile["name"]
    groups = profile["autoscaling"]["maxReplicas"] if profile["autoscaling"]["enabled"] else profile["replicas"]
    labels = dict(node["nodeSelector"])
    if "gpuProduct" in node:
        labels["nvidia.com/gpu.product"] = node["gpuProduct"]
    taints = [{"key": t["key"], "value": t.get("value", "true"), "effect": t["effect"]}
              for t in node["tolerations"] if t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")]
    template = "k8s.io/cluster-autoscaler/node-template"
    tags = {"k8s.io/cluster-autoscaler/enabled": "true", f"{template}/resources/{node['gpuResource']}": str(node["gpus"])}
    if node["efa"]:
        tags[f"{template}/resources/vpc.amazonaws.com/efa"] = str(node["efa"])
    tags.update({f"{template}/label/{k}": v for k, v in labels.items()})
    tags.update({f"{template}/taint/{t['key']}": f"{t['value']}:{t['effect']}" for t in taints})
    entry = {
        "name": f"{name}-gpu",
        "instanceType": node["instanceType"],
        "minSize": 0,
        "maxSize": max(groups, 1) * group,
        "privateNetworking": True,
        "efaEnabled": bool(node["efa"]),
        "placement": {"groupName": f"{name}-placement"},
        "labels": labels,
        "taints": taints,
        "tags": dict(sorted(tags.items())),
        "iam": {"withAddonPolicies": {"autoScaler": True}},
    }
    return {"nodeGroups": [entry]}
