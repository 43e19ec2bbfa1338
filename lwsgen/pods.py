"""Pod templates of a LeaderWorkerSet: containers, resources, volumes, probes, security and
placement, from the profile and the runtime's parts. Leader and worker differ only where the
runtime says (command, ports, tools) and in the leader's probes."""

from __future__ import annotations

import math
from typing import Any

from lwsgen import naming, scheduling
from lwsgen.model import PodTemplate
from lwsgen.runtimes.base import SCRIPTS_MOUNT, TOOLS_MOUNT, Role, RuntimeParts

SHM_VOLUME, MODEL_VOLUME, LAUNCH_VOLUME, TOOLS_VOLUME = "dshm", "model", "launch-scripts", "tools"
PROBE_PERIOD = 10
SCRIPTS_HASH_ANNOTATION = "lwsgen/launch-scripts-sha256"


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


def pod_template(profile: dict[str, Any], names: dict[str, str], side: str, role: Role, parts: RuntimeParts,
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
