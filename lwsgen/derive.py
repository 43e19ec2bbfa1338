"""Stage 3, derive: a checked profile -> a frozen Deployment (sizes, names, labels, pod templates)."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from lwsgen import monitoring, naming, nccl, network, resources, runtimes, scheduling
from lwsgen.model import Deployment, PodTemplate
from lwsgen.runtimes.base import SCRIPTS_MOUNT, TOOLS_MOUNT, Context, Role, RuntimeParts

SHM_VOLUME, MODEL_VOLUME, LAUNCH_VOLUME, TOOLS_VOLUME = "dshm", "model", "launch-scripts", "tools"
PROBE_PERIOD = 10
SCRIPTS_HASH_ANNOTATION = "lwsgen/launch-scripts-sha256"
SYNC_WAVE_ANNOTATION = "argocd.argoproj.io/sync-wave"
# Argo CD applies lower waves first: what pods need, then the workload, then what watches or scales it.
SYNC_WAVES = {"serviceaccount": -1, "role": -1, "rolebinding": -1, "configmap": -1, "networkpolicy": -1,
              "leaderworkerset": 0, "service": 0,
              "podmonitor": 1, "prometheusrule": 1, "horizontalpodautoscaler": 2, "scaledobject": 2}


def _context(profile: dict[str, Any], world: int, group: int, gpus_per_pod: int) -> Context:
    model = profile["model"]
    return Context(
        profile=profile,
        name=profile["name"],
        world_size=world,
        group_size=group,
        gpus_per_pod=gpus_per_pod,
        tensor=profile["parallelism"]["tensor"],
        pipeline=profile["parallelism"]["pipeline"],
        served_name=model.get("servedName", profile["name"]),
        model_path=model["path"],
        extra_args=tuple(model["extraArgs"]),
        rendezvous_timeout=profile["launch"]["rendezvousTimeoutSeconds"],
        monitoring=profile["monitoring"]["enabled"],
    )


def _env_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _common_env(profile: dict[str, Any]) -> list[dict[str, Any]]:
    env = []
    if not scheduling.supports(profile, "LWS_WORKER_INDEX"):
        # LeaderWorkerSet < 0.6 does not inject it; commands use $(LWS_WORKER_INDEX), so derive it from the label.
        env.append({"name": "LWS_WORKER_INDEX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}})
    secret = profile["model"].get("tokenSecret")
    if secret:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret["name"], "key": secret["key"]}}})
    env.extend({"name": name, "value": _env_value(value)} for name, value in profile["env"].items())
    return env


def _resources(profile: dict[str, Any], gpus_per_pod: int) -> dict[str, Any]:
    node = profile["node"]
    amounts = {node["gpuResource"]: str(gpus_per_pod)}
    if node["efa"]:
        amounts["vpc.amazonaws.com/efa"] = str(node["efa"])
    amounts.update({name: str(count) for name, count in node["rdmaResource"].items()})
    for field, resource in (("cpu", "cpu"), ("memory", "memory"), ("ephemeralStorage", "ephemeral-storage")):
        if field in node:
            amounts[resource] = str(node[field])
    amounts = dict(sorted(amounts.items()))
    return {"requests": amounts, "limits": dict(amounts)}


def _probes(profile: dict[str, Any], parts: RuntimeParts) -> dict[str, Any]:
    probes = parts.probes
    budget = math.ceil(profile["model"]["loadTimeoutSeconds"] / PROBE_PERIOD)
    return {
        "startupProbe": {"httpGet": {"path": probes.startup_path, "port": probes.port},
                         "periodSeconds": PROBE_PERIOD, "timeoutSeconds": 5, "failureThreshold": budget},
        "readinessProbe": {"httpGet": {"path": probes.readiness_path, "port": probes.port},
                           "periodSeconds": PROBE_PERIOD, "timeoutSeconds": 5, "failureThreshold": 3},
    }


def _volumes(profile: dict[str, Any], names: dict[str, str], role: Role, parts: RuntimeParts):
    shm: dict[str, Any] = {"medium": "Memory"}
    if "shmSize" in profile["node"]:
        shm["sizeLimit"] = str(profile["node"]["shmSize"])
    volumes = [{"name": SHM_VOLUME, "emptyDir": shm}]
    mounts = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    storage = profile.get("storage")
    if storage:
        volumes.append({"name": MODEL_VOLUME, "persistentVolumeClaim": {"claimName": storage["claimName"], "readOnly": storage["readOnly"]}})
        mounts.append({"name": MODEL_VOLUME, "mountPath": storage["mountPath"], "readOnly": storage["readOnly"]})
    if parts.scripts:
        volumes.append({"name": LAUNCH_VOLUME, "configMap": {"name": names["launch"], "defaultMode": 0o555}})
        mounts.append({"name": LAUNCH_VOLUME, "mountPath": SCRIPTS_MOUNT, "readOnly": True})
    if role.tool_installers:
        volumes.append({"name": TOOLS_VOLUME, "emptyDir": {}})
        mounts.append({"name": TOOLS_VOLUME, "mountPath": TOOLS_MOUNT, "readOnly": True})
    return volumes, mounts


INIT_USER = 65532  # the tool installers only copy a file into an emptyDir: never root


def _capabilities(profile: dict[str, Any]) -> dict[str, Any]:
    """Drop every capability; keep IPC_LOCK where RDMA must pin memory, and what the profile adds."""
    node = profile["node"]
    keep = ["IPC_LOCK"] if node["efa"] or node["rdmaResource"] else []
    keep += [c for c in profile["security"]["addCapabilities"] if c not in keep]
    return {"drop": ["ALL"], **({"add": keep} if keep else {})}


def _container_security(profile: dict[str, Any]) -> dict[str, Any]:
    user = profile["security"].get("runAsUser")
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "capabilities": _capabilities(profile),
        **({"runAsNonRoot": True, "runAsUser": user} if user else {}),
    }


def _pod_security(profile: dict[str, Any]) -> dict[str, Any]:
    user = profile["security"].get("runAsUser")
    return {"seccompProfile": {"type": "RuntimeDefault"}, **({"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user} if user else {})}


def _container(name: str, image: str, role: Role, env: list, resources: dict, mounts: list, probes: dict | None,
               security: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": list(role.command),
        "args": list(role.args) or None,
        "env": list(role.env) + env or None,
        "ports": [{"name": p.name, "containerPort": p.number, "protocol": "TCP"} for p in role.ports] or None,
        "resources": resources,
        "volumeMounts": mounts,
        **(probes or {"startupProbe": None, "readinessProbe": None}),
        "securityContext": security,
    }


def _tool_installers(role: Role) -> list[dict[str, Any]] | None:
    installers = [{
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": list(command),
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
        "volumeMounts": [{"name": TOOLS_VOLUME, "mountPath": TOOLS_MOUNT}],
        "securityContext": {"allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True, "runAsUser": INIT_USER, "readOnlyRootFilesystem": True},
    } for name, image, command in role.tool_installers]
    return installers or None


def _pod_template(profile: dict[str, Any], names: dict[str, str], side: str, role: Role, parts: RuntimeParts,
                  gpus_per_pod: int, scripts_hash: str, placement: scheduling.SchedulingParts) -> PodTemplate:
    node = profile["node"]
    volumes, mounts = _volumes(profile, names, role, parts)
    probes = _probes(profile, parts) if side == "leader" else None
    container = _container(side, profile["image"], role, _common_env(profile), _resources(profile, gpus_per_pod), mounts, probes,
                           _container_security(profile))
    selector = {}
    if "instanceType" in node:
        selector["node.kubernetes.io/instance-type"] = node["instanceType"]
    selector.update(node["nodeSelector"])
    affinity = None
    if "gpuProduct" in node:
        term = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [node["gpuProduct"]]}]}
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    scheduling = profile["scheduling"]
    return PodTemplate(
        labels=naming.labels(profile["name"], profile["runtime"], side, profile["labels"]),
        annotations={**placement.pod_annotations, **({SCRIPTS_HASH_ANNOTATION: scripts_hash} if parts.scripts else {})},
        scheduler_name=placement.scheduler_name,
        security_context=_pod_security(profile),
        service_account=names["launcher"] if role.api_access else None,
        automount_token=role.api_access,
        init_containers=_tool_installers(role),
        containers=[container],
        volumes=volumes,
        node_selector=selector or None,
        affinity=affinity,
        tolerations=node["tolerations"],
        priority_class=scheduling["priorityClassName"] or None,
        image_pull_secrets=[{"name": s} for s in profile["imagePullSecrets"]] or None,
    )


def _meta(profile: dict[str, Any], name: str, component: str, annotations: dict[str, str] | None = None,
          labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": profile["namespace"],
        "labels": naming.labels(profile["name"], profile["runtime"], component, {**profile["labels"], **(labels or {})}),
        "annotations": {**profile["annotations"], **(annotations or {})} or None,
    }


def _observability(profile: dict[str, Any], caps) -> dict[str, Any]:
    """PodMonitor, rules and the autoscaler of the profile, each None when not emitted."""
    name, namespace = profile["name"], profile["namespace"]
    out = {"podmonitor": None, "rule_groups": None, "hpa": None, "scaledobject": None, "adapter_rules": None}
    if profile["monitoring"]["enabled"]:
        out["rule_groups"] = monitoring.rule_groups(caps, namespace, name)
        if caps.metrics:
            out["podmonitor"] = monitoring.podmonitor_spec(profile, caps)
    scaling = profile["autoscaling"]
    if scaling["enabled"]:
        record = monitoring.autoscaling_record(caps, scaling["metric"], namespace, name)
        if scaling["engine"] == "hpa":
            out["hpa"] = monitoring.hpa_spec(profile, record)
            out["adapter_rules"] = monitoring.adapter_rules(record)
        else:
            out["scaledobject"] = monitoring.scaledobject_spec(profile, record)
    return out


def _nccl_test(profile: dict[str, Any], worker: PodTemplate, world: int, group: int, gpus: int) -> dict[str, Any] | None:
    test = profile["ncclTest"]
    if not test["enabled"]:
        return None
    name = profile["name"] + nccl.SUFFIX
    labels = {**_meta(profile, name, "nccl-test")["labels"], **scheduling.parts(profile).lws_labels}
    meta = {"name": name, "namespace": profile["namespace"], "labels": labels}
    if test["launcher"] == "mpijob":
        scripts = ["nccl-mpi-verdict.sh"]
        documents = [{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": meta,
                      "spec": nccl.mpijob(profile, worker, meta, world, group, gpus)}]
    else:
        scripts = ["nccl_allreduce.py"]
        documents = [{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": nccl.headless_service(worker)},
                     {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": nccl.indexed_job(profile, worker, meta, group, gpus)}]
    return {"configmap": meta, "scripts": {s: resources.script(s) for s in scripts}, "documents": documents}


def _scripts_hash(scripts: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(scripts):
        digest.update(name.encode() + b"\0" + scripts[name].encode() + b"\0")
    return digest.hexdigest()


def derive(profile: dict[str, Any], source: str) -> Deployment:
    """Profile (schema-valid, defaults filled, rules passed) -> Deployment."""
    name = profile["name"]
    gpus = profile["node"]["gpus"]
    world = profile["parallelism"]["tensor"] * profile["parallelism"]["pipeline"]
    group = max(world // gpus, 1)
    gpus_per_pod = min(gpus, world)
    plugin = runtimes.get(profile["runtime"])
    parts: RuntimeParts = plugin.parts(_context(profile, world, group, gpus_per_pod))
    names = naming.object_names(name)
    scripts_hash = _scripts_hash(parts.scripts)
    api_access = parts.leader.api_access or parts.worker.api_access

    placement = scheduling.parts(profile)
    prometheus_labels = profile["monitoring"]["prometheusLabels"]
    meta = {
        "leaderworkerset": _meta(profile, name, "inference-server", placement.lws_annotations, placement.lws_labels),
        "service": _meta(profile, names["service"], "leader-service", profile["service"]["annotations"]),
        "configmap": _meta(profile, names["launch"], "launch-scripts"),
        "serviceaccount": _meta(profile, names["launcher"], "launcher"),
        "role": _meta(profile, names["launcher"], "launcher"),
        "rolebinding": _meta(profile, names["launcher"], "launcher"),
        "podmonitor": _meta(profile, name, "metrics", labels=prometheus_labels),
        "prometheusrule": _meta(profile, name, "metrics", labels=prometheus_labels),
        "horizontalpodautoscaler": _meta(profile, name, "autoscaler"),
        "scaledobject": _meta(profile, name, "autoscaler"),
        "networkpolicy": _meta(profile, name, "network-policy"),
        # Cluster-scoped and shared by every profile that uses the queue: no namespace, no instance labels.
        "volcano-queue": {"name": profile["scheduling"]["queue"],
                          "labels": {"app.kubernetes.io/component": "queue", "app.kubernetes.io/managed-by": "lwsgen"}},
    }
    if profile["gitops"]["argocd"]["syncWaves"]:
        for key, wave in SYNC_WAVES.items():
            meta[key]["annotations"] = {**(meta[key]["annotations"] or {}), SYNC_WAVE_ANNOTATION: str(wave)}
    observed = _observability(profile, plugin.CAPABILITIES)
    emitted = {
        "configmap": bool(parts.scripts),
        "serviceaccount": api_access, "role": api_access, "rolebinding": api_access,
        "podmonitor": observed["podmonitor"] is not None,
        "prometheusrule": observed["rule_groups"] is not None,
        "horizontalpodautoscaler": observed["hpa"] is not None,
        "scaledobject": observed["scaledobject"] is not None,
        "networkpolicy": profile["security"]["networkPolicy"],
    }
    objects = ["leaderworkerset", "service", *(key for key, wanted in emitted.items() if wanted)]

    service = profile["service"]
    ports = {p.name: p.number for p in parts.leader.ports}
    worker = _pod_template(profile, names, "worker", parts.worker, parts, gpus_per_pod, scripts_hash, placement)
    nccl_test = _nccl_test(profile, worker, world, group, gpus_per_pod)
    eksctl = nccl.eksctl_node_group(profile, group) if "instanceType" in profile["node"] else None
    return Deployment(
        source=source,
        name=name,
        namespace=profile["namespace"],
        runtime=profile["runtime"],
        world_size=world,
        tensor=profile["parallelism"]["tensor"],
        pipeline=profile["parallelism"]["pipeline"],
        group_size=group,
        gpus_per_pod=gpus_per_pod,
        names=names,
        meta=meta,
        replicas=None if profile["autoscaling"]["enabled"] else profile["replicas"],
        startup_policy=profile["lws"]["startupPolicy"],
        restart_policy=profile["lws"]["restartPolicy"],
        rollout={"maxUnavailable": profile["lws"]["maxUnavailable"], "maxSurge": profile["lws"]["maxSurge"],
                 "partition": profile["lws"].get("partition")},
        leader=_pod_template(profile, names, "leader", parts.leader, parts, gpus_per_pod, scripts_hash, placement),
        worker=worker,
        leader_selector=naming.leader_selector(name),
        service={
            "type": service["type"],
            "ports": [{"name": p, "port": ports[p], "targetPort": p, "protocol": "TCP"} for p in parts.service_ports],
            "loadBalancerSourceRanges": service["loadBalancerSourceRanges"] or None,
        },
        scripts=dict(sorted(parts.scripts.items())),
        role_rules=list(parts.role_rules),
        **observed,
        networkpolicy=network.spec(profile, parts, plugin.CAPABILITIES),
        volcano_queue=placement.queue,
        nccl_test=nccl_test,
        eksctl=eksctl,
        objects=tuple(objects),
        extra_files=tuple(key for key, wanted in (("prometheus-adapter-rules", observed["adapter_rules"]),
                                                   ("volcano-queue", placement.queue), ("nccl-test", nccl_test),
                                                   ("eksctl-nodegroup", eksctl)) if wanted),
    )
