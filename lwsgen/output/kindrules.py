"""Rules of one kind the API server applies and the OpenAPI schemas do not say, found by applying
every hand edit of validate's own suites to the real kube-apiserver (tests/cluster/test_hand_edits.py).
Each follows the k8s.io/kubernetes v1.36.3 function named beside it; paths are the server's."""

from collections.abc import Callable, Iterator
from typing import Any

from lwsgen.problems import Finding

# Fields the OpenAPI schema lists as required that the server fills in or accepts missing, with no
# effect on the deployment: a schema error about one of them is not a problem.
REQUIRED_ONLY_IN_OPENAPI = {
    ("RoleBinding", ("roleRef",), "apiGroup"),  # rbac/v1/defaults.go SetDefaults_RoleBinding fills it
    ("ClusterRoleBinding", ("roleRef",), "apiGroup"),  # SetDefaults_ClusterRoleBinding
    ("Job", ("spec", "podFailurePolicy"), "rules"),  # batch validatePodFailurePolicy: no rules, no effect
}


def required_only_in_openapi(kind: str, path: tuple, message: str) -> bool:
    return any(
        kind == k and path == at and message == f'"{name}" is a required property'
        for k, at, name in REQUIRED_ONLY_IN_OPENAPI
    )


METRIC_SOURCES = {  # autoscaling/validation.go validateMetricSpec: the type names the one source set
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}


def _role(role: dict[str, Any]) -> Iterator[Finding]:
    """rbac/validation/validation.go ValidatePolicyRule: verbs, apiGroups and resources each hold at
    least one entry; a rule for non-resource URLs (a ClusterRole's only) names no resources."""
    for r, rule in enumerate(role.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        if not rule.get("verbs"):
            yield Finding(("rules", r, "verbs"), "verbs must contain at least one value")
        if rule.get("nonResourceURLs"):
            if role.get("kind") == "Role":
                yield Finding(("rules", r, "nonResourceURLs"), "namespaced rules cannot apply to non-resource URLs")
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                why = "rules cannot apply to both regular resources and non-resource URLs"
                yield Finding(("rules", r, "nonResourceURLs"), why)
            continue
        if not rule.get("apiGroups"):
            why = 'resource rules must supply at least one api group ("" is the core group)'
            yield Finding(("rules", r, "apiGroups"), why)
        if not rule.get("resources"):
            yield Finding(("rules", r, "resources"), "resource rules must supply at least one resource")


def _deployment(deployment: dict[str, Any]) -> Iterator[Finding]:
    """apps/validation/validation.go ValidateDeploymentSpec: a non-empty selector that the template's
    labels match."""
    spec = deployment["spec"]
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        yield Finding(("spec", "selector"), "is required: the Deployment's pods are found by it")
        return
    match = selector.get("matchLabels") or {}
    if not match and not selector.get("matchExpressions"):
        yield Finding(("spec", "selector"), "empty selector is invalid for deployment: name the template's labels")
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if any(labels.get(key) != value for key, value in match.items()):
        yield Finding(("spec", "template", "metadata", "labels"), "`selector` does not match template `labels`")


def _job(job: dict[str, Any]) -> Iterator[Finding]:
    """batch/validation/validation.go validateJobSpec and validateJobPodTemplateSpec: a Job's pods
    restart OnFailure or Never (Never with a podFailurePolicy); an Indexed Job says its completions."""
    spec = job["spec"]
    pod = ((spec.get("template") or {}).get("spec")) or {}
    policy = pod.get("restartPolicy")
    at = ("spec", "template", "spec", "restartPolicy")
    if policy not in ("OnFailure", "Never"):
        said = policy or "Always (the default)"
        yield Finding(at, f"{said} is not allowed for a Job: valid values: OnFailure, Never")
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        yield Finding(at, "only Never is supported when podFailurePolicy is specified")
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        yield Finding(("spec", "completions"), "is required when completion mode is Indexed")


def _hpa(hpa: dict[str, Any]) -> Iterator[Finding]:
    for m, metric in enumerate(hpa["spec"].get("metrics") or []):
        if not isinstance(metric, dict):
            continue
        source = METRIC_SOURCES.get(metric.get("type"))
        if source is None:
            yield Finding(("spec", "metrics", m, "type"), f"must be one of: {', '.join(METRIC_SOURCES)}")
        elif metric.get(source) is None:
            why = f"must populate information for the {metric['type']} metric source"
            yield Finding(("spec", "metrics", m, source), why)


def _service(service: dict[str, Any]) -> Iterator[Finding]:
    """core/validation/validation.go ValidateService: ports unless headless or ExternalName; source
    ranges only on a LoadBalancer."""
    spec = service["spec"]
    kind = spec.get("type") or "ClusterIP"
    headless = spec.get("clusterIP") == "None" or spec.get("clusterIPs") == ["None"]
    if not spec.get("ports") and not headless and kind != "ExternalName":
        yield Finding(("spec", "ports"), "is required: a Service that is not headless needs at least one port")
    if spec.get("loadBalancerSourceRanges") and kind != "LoadBalancer":
        yield Finding(("spec", "loadBalancerSourceRanges"), f"may only be used when type is LoadBalancer, not {kind}")


def _claim(claim: dict[str, Any]) -> Iterator[Finding]:
    """core/validation/validation.go ValidatePersistentVolumeClaimSpec."""
    spec = claim["spec"]
    if not spec.get("accessModes"):
        yield Finding(("spec", "accessModes"), "at least 1 access mode is required")
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        yield Finding(("spec", "resources", "requests", "storage"), "is required: the size of the volume to claim")


RULES: dict[str, Callable[[dict[str, Any]], Iterator[Finding]]] = {
    "Role": _role,
    "ClusterRole": _role,
    "Deployment": _deployment,
    "Job": _job,
    "HorizontalPodAutoscaler": _hpa,
    "Service": _service,
    "PersistentVolumeClaim": _claim,
}


def kind_errors(obj: dict[str, Any]) -> Iterator[Finding]:
    """What the server's validation of obj's kind refuses; a kind whose spec is missing is reported
    by apirules' required-spec rule instead."""
    rule = RULES.get(obj.get("kind"))
    if rule is not None and (obj.get("kind") in ("Role", "ClusterRole") or isinstance(obj.get("spec"), dict)):
        yield from rule(obj)
