"""Stage 3, derive: a checked profile -> a frozen Deployment (sizes, names, labels, objects' parts);
pod templates come from lwsgen/pods.py."""

from __future__ import annotations

import hashlib
from typing import Any

from lwsgen import monitoring, naming, nccl, network, resources, runtimes, scheduling
from lwsgen.model import Deployment, PodTemplate
from lwsgen.pods import pod_template
from lwsgen.runtimes.base import Context, RuntimeParts
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


def _nccl_test(profile: dict[str, Any], worker: PodTemplate, world: int, group: int, gpus: int,
               queue_labels: dict[str, str]) -> dict[str, Any] | None:
    test = profile["ncclTest"]
    if not test["enabled"]:
        return None
    name = profile["name"] + nccl.SUFFIX
    labels = {**_meta(profile, name, "nccl-test")["labels"], **queue_labels}
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
    worker = pod_template(profile, names, "worker", parts.worker, parts, gpus_per_pod, scripts_hash, placement)
    nccl_test = _nccl_test(profile, worker, world, group, gpus_per_pod, placement.lws_labels)
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
        leader=pod_template(profile, names, "leader", parts.leader, parts, gpus_per_pod, scripts_hash, placement),
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
