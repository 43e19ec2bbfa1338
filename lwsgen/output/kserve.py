"""What KServe's controller makes of an LLMInferenceService, as the set rules read it: the
LeaderWorkerSet <name>-kserve-mn of a multi-node service (its leader and worker templates the
service's template and worker, its size KServe's), or the Deployment of a one-pod service, each
with the labels KServe puts on the pods (kserve/kserve@v0.20.0
pkg/controller/v1alpha2/llmisvc/workload_multi_node.go#L139-L186, workload_single_node.go). The
PodMonitor, NetworkPolicy and references of a KServe output are then held to the pods KServe runs."""

from __future__ import annotations

from typing import Any

from lwsgen import naming, platforms
from lwsgen.jsondata import dig

# The pods' app.kubernetes.io/component, by the workload they are of (workload_multi_node.go#L139-L159,
# #L283-L300; constants.go#L443-L448)
COMPONENTS = {
    None: ("llminferenceservice-workload-leader", "llminferenceservice-workload-worker"),
    "prefill": ("llminferenceservice-workload-leader-prefill", "llminferenceservice-workload-worker-prefill"),
}


def _size(spec: dict[str, Any]) -> int:
    """v1alpha2/llm_inference_service_types_func.go#L102-L117: data / dataLocal, else pipeline."""
    par = spec.get("parallelism") or {}
    if par.get("data") or par.get("dataLocal"):
        return max(int(par.get("data") or 1) // int(par.get("dataLocal") or 1), 1)
    return int(par.get("pipeline") or 1)


def _template(pod_spec: Any, labels: dict[str, str], annotations: Any = None) -> dict[str, Any]:
    metadata = {"labels": labels, **({"annotations": annotations} if isinstance(annotations, dict) else {})}
    return {"metadata": metadata, "spec": pod_spec if isinstance(pod_spec, dict) else {}}


def _pod_labels(name: str, spec: dict[str, Any]) -> dict[str, str]:
    """KServe's labels of a workload's pods, with the workload's own labels (spec.labels, or
    spec.prefill.labels) copied over them (#L262-L267, #L393-L400)."""
    own = dict(spec["labels"]) if isinstance(spec.get("labels"), dict) else {}
    return {**platforms.llmisvc_workload_labels(name), **own}


def _leaderworkerset(
    service: dict[str, Any], name: str, namespace: Any, spec: dict[str, Any], role: str | None, pd: bool
) -> dict[str, Any]:
    """The LeaderWorkerSet of the service's own workload (role None: decode where pd) or of its
    spec.prefill, its pods labelled as KServe labels them (_pod_labels)."""
    base = _pod_labels(name, spec)
    leader_component, worker_component = COMPONENTS[role]
    llmd_role = role or ("decode" if pd else "both")
    leader = {**base, "app.kubernetes.io/component": leader_component, platforms.LLMD_ROLE_LABEL: llmd_role}
    worker = {k: v for k, v in base.items() if k != "kserve.io/component"}
    annotations = spec.get("annotations")  # reach every pod, as the labels do
    template = {
        "size": _size(spec),
        "leaderTemplate": _template(spec.get("template"), leader, annotations),
        "workerTemplate": _template(
            spec.get("worker"), {**worker, "app.kubernetes.io/component": worker_component}, annotations
        ),
    }
    par = spec.get("parallelism") or {}
    if role == "prefill" and (par.get("data") or par.get("dataLocal")):  # the whole group one subgroup (#L376-L381)
        template["subGroupPolicy"] = {"subGroupSize": template["size"]}
    # KServe's pods carry the service's name as app.kubernetes.io/name; the runtime lwsgen named on the
    # service is kept on the object, for the rules that ask which engine the pods run (output/podneeds.py)
    runtime = dig(service, "metadata", "labels", naming.RUNTIME_LABEL)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": platforms.llmisvc_lws(name, role),
            "namespace": namespace,
            **({"labels": {naming.RUNTIME_LABEL: runtime}} if isinstance(runtime, str) else {}),
        },
        "spec": {"replicas": spec.get("replicas", 1), "leaderWorkerTemplate": template},
    }


def workloads(services: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], tuple[dict[str, Any], ...]]:
    """(LeaderWorkerSets by name, Deployments) KServe makes of these LLMInferenceServices."""
    sets, deployments = {}, []
    for service in services:
        name, spec = dig(service, "metadata", "name"), service.get("spec") or {}
        if not isinstance(name, str) or not isinstance(spec, dict):
            continue
        namespace = dig(service, "metadata", "namespace")
        prefill = spec.get("prefill") if isinstance(spec.get("prefill"), dict) else None
        if spec.get("worker") is None:
            base = _pod_labels(name, spec)
            deployments.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"{name}-kserve", "namespace": namespace},
                    "spec": {"selector": {"matchLabels": base}, "template": _template(spec.get("template"), base)},
                }
            )
        else:
            lws = _leaderworkerset(service, name, namespace, spec, None, prefill is not None)
            sets[lws["metadata"]["name"]] = lws
        if prefill is not None and prefill.get("worker") is not None:
            lws = _leaderworkerset(service, name, namespace, prefill, "prefill", True)
            sets[lws["metadata"]["name"]] = lws
    return sets, tuple(deployments)


def _deployment(name: str, namespace: Any, labels: dict[str, str], pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
    }


def _pod(fields: dict[str, Any], skip: tuple[str, ...], containers: Any, volumes: Any) -> dict[str, Any]:
    pod = {k: v for k, v in fields.items() if k not in skip}
    return {**pod, "containers": containers if isinstance(containers, list) else [], "volumes": volumes or []}


ISVC_ONLY = ("model", "workerSpec", "minReplicas", "maxReplicas", "deploymentStrategy", "labels", "annotations")


def isvc_deployments(services: list[dict[str, Any]], runtimes: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The head and worker Deployments KServe makes of an InferenceService and the ServingRuntime it
    names (reconcilers/deployment/deployment_reconciler.go#L146-L184; components/predictor.go#L498-L545):
    the runtime's containers and volumes under the service's pod fields, with KServe's pod labels."""
    by_name = {dig(r, "metadata", "name"): r.get("spec") or {} for r in runtimes}
    out = []
    for service in services:
        name, namespace = dig(service, "metadata", "name"), dig(service, "metadata", "namespace")
        predictor = dig(service, "spec", "predictor")
        runtime = by_name.get(dig(predictor, "model", "runtime")) if isinstance(predictor, dict) else None
        if not isinstance(name, str) or runtime is None:
            continue
        labels = {platforms.ISVC_LABEL: name, "component": "predictor"}
        head = _pod(predictor, ISVC_ONLY, runtime.get("containers"), runtime.get("volumes"))
        out.append(_deployment(f"{name}-predictor", namespace, {**labels, "app": platforms.isvc_head_app(name)}, head))
        worker_fields, worker_runtime = predictor.get("workerSpec") or {}, runtime.get("workerSpec") or {}
        sizes = platforms.ISVC_SIZE_FIELDS  # the service's own fields, not the pod's
        worker = _pod(worker_fields, sizes, worker_runtime.get("containers"), worker_runtime.get("volumes"))
        worker_labels = {**labels, "app": platforms.isvc_worker_app(name)}
        out.append(_deployment(f"{name}-predictor-worker", namespace, worker_labels, worker))
    return tuple(out)
