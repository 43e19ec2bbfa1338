"""What the objects a profile's templates add may not be: access (RBAC, a launcher's account or
its token), fencing (a NetworkPolicy: policies add up), traffic to lwsgen's pods past lwsgen's
Services and route (a Service, Endpoints, an Ingress or route, or pods that lwsgen's selectors
would pick up), or anything outside the profile's namespace (a cluster-scoped kind)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lwsgen.check.pods import POD_LABEL_PREFIXES, annotation_owner
from lwsgen.output.guards.podsecurity import pod_specs
from lwsgen.profile import Profile
from lwsgen.resources import schema

REFUSED_KINDS = {
    "Role": "RBAC is lwsgen's to derive (the runtime's launcher)",
    "RoleBinding": "RBAC is lwsgen's to derive (the runtime's launcher)",
    "NetworkPolicy": "policies add up: a second one would admit what lwsgen's fences (service.allowedSources)",
    "Service": "traffic reaches the pods through lwsgen's Service: use service.extraPorts",
    "Endpoints": "traffic reaches the pods through lwsgen's Service: use service.extraPorts",
    "EndpointSlice": "traffic reaches the pods through lwsgen's Service: use service.extraPorts",
    "Ingress": "traffic comes in through lwsgen's Service or route: use service.type or gateway.*",
    "HTTPRoute": "traffic comes in through lwsgen's route: use gateway.*",
    "GRPCRoute": "traffic comes in through lwsgen's route: use gateway.*",
    "TLSRoute": "traffic comes in through lwsgen's route: use gateway.*",
    "TCPRoute": "traffic comes in through lwsgen's route: use gateway.*",
    "UDPRoute": "traffic comes in through lwsgen's route: use gateway.*",
    "Binding": "placing a pod on a node is the scheduler's (gang scheduling, node.gpuProduct)",
    "Eviction": "evicting pods is the cluster's",
}


def scope(api_version: Any, kind: Any) -> str | None:
    """ "Namespaced" or "Cluster", from the API's own data (schemas/kubernetes-scopes.json: Kubernetes'
    discovery documents and the CRDs' spec.scope, tools/kubernetes_scopes.py); None: unknown."""

    return schema("kubernetes-scopes.json")["scopes"].get(f"{api_version} {kind}")


def _pod_templates(value: Any) -> Iterable[dict]:
    """Every pod template (metadata + spec with containers) in an object: what holds each pod spec."""
    for at, _spec in pod_specs(value):
        if at and at[-1] == "spec":
            holder = value
            for step in at[:-1]:
                holder = holder[step]
            yield holder


def refusal(profile: Profile, obj: dict, selectors: list[dict], accounts: set[str]) -> str | None:
    """Why an object of an added kind may not be written (None: it may). selectors: the label
    selectors lwsgen's objects use; accounts: lwsgen's ServiceAccounts."""
    kind, meta = obj.get("kind"), obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if kind in REFUSED_KINDS:
        return f"a {kind}: {REFUSED_KINDS[kind]}"
    where = scope(obj.get("apiVersion"), kind)
    if where == "Cluster":
        return (
            f"a {kind} is cluster-scoped (by the API's discovery data or its CRD): a profile writes only its namespace"
        )
    if where is None:
        return (
            f"lwsgen cannot establish whether {obj.get('apiVersion')} {kind} is namespaced (neither Kubernetes' "
            "discovery data nor a CRD lwsgen knows has it): a profile writes only what it knows stays in its namespace"
        )
    if kind == "DaemonSet":
        return (
            "a DaemonSet runs a pod on every node of the cluster, other tenants' too: a profile's pods are its groups'"
        )
    if meta.get("namespace") != profile.namespace:
        return f"metadata.namespace must be the profile's namespace {profile.namespace!r} (place meta(v.meta))"
    if kind == "Secret" and obj.get("type") == "kubernetes.io/service-account-token":
        return "a ServiceAccount token is the cluster's to issue, not a profile's to write"
    for template in _pod_templates(obj):
        spec = template["spec"]
        if spec.get("serviceAccountName") in accounts or spec.get("serviceAccount") in accounts:
            return f"its pods would run as lwsgen's ServiceAccount {spec.get('serviceAccountName')!r}"
        tolerations = spec.get("tolerations") or []
        if any(isinstance(t, dict) and t.get("operator") == "Exists" and not t.get("key") for t in tolerations):
            return "its pods tolerate every taint (operator Exists, no key): they would run on any node, GPU nodes too"
        labels = (template.get("metadata") or {}).get("labels") or {}
        if any(selector and all(labels.get(k) == v for k, v in selector.items()) for selector in selectors):
            return "its pods carry labels lwsgen's Services, monitors or policies select: they would pass for lwsgen's"
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        owned = [k for k in labels if str(k).startswith(POD_LABEL_PREFIXES)]
        owned += [k for k in annotations if annotation_owner(str(k))]
        if owned:
            return f"its pods carry {owned[0]!r}, which lwsgen or the cluster's network and controllers own"
        for group in ("initContainers", "containers"):
            for container in spec.get(group) or []:
                env = container.get("env") if isinstance(container, dict) else None
                said = [e for e in env or [] if isinstance(e, dict) and e.get("name") == "NVIDIA_VISIBLE_DEVICES"]
                if not said or said[-1].get("value") != "void":
                    return (
                        f"container {container.get('name') if isinstance(container, dict) else '?'!r} must say "
                        "NVIDIA_VISIBLE_DEVICES=void (env): its image may say all, which on an NVIDIA node is every GPU"
                    )
    name = meta.get("name")
    if not (isinstance(name, str) and name.startswith(f"{profile.name}-")):
        return (
            f"its name must start with {profile.name + '-'!r} (place meta(v.meta)): a profile's objects are named "
            "after it, so none replaces another deployment's (its launch scripts, say)"
        )
    return None


def selectors_of(objects: Iterable[dict]) -> list[dict]:
    """The matchLabels-style selectors lwsgen's own objects use."""
    out = []
    for obj in objects:
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        for candidate in (spec.get("selector"), spec.get("podSelector")):
            if isinstance(candidate, dict):
                labels = candidate.get("matchLabels", candidate)
                if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
                    out.append(labels)
    return out
