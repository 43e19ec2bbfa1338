"""Rules of one kind the API server applies and the OpenAPI schemas do not say, found by applying
every hand edit of validate's own suites to the real kube-apiserver (tests/cluster/test_hand_edits.py).
Each follows the k8s.io/kubernetes v1.36.3 function named beside it; paths are the server's."""

import ipaddress
from collections.abc import Callable, Iterator
from typing import Any

from lwsgen.kuberules import scaling_rule_errors
from lwsgen.output import kservehooks
from lwsgen.output.apirules import DNS1123_SUBDOMAIN, api_errors
from lwsgen.problems import Finding
from lwsgen.quantity import parse as quantity

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
    """apps/validation/validation.go ValidateDeploymentSpec and ValidateDeploymentStrategy: replicas
    not negative; a non-empty selector that the template's labels match; one strategy, whose
    rolling update may not have maxSurge and maxUnavailable both 0."""
    spec = deployment["spec"]
    if isinstance(spec.get("replicas"), int) and spec["replicas"] < 0:
        yield Finding(("spec", "replicas"), "must be greater than or equal to 0")
    pod = ((spec.get("template") or {}).get("spec")) or {}
    if pod.get("restartPolicy", "Always") != "Always":  # ValidatePodTemplateSpecForReplicaSet
        yield Finding(("spec", "template", "spec", "restartPolicy"), "must be Always for a Deployment's pods")
    if pod.get("activeDeadlineSeconds") is not None:
        yield Finding(("spec", "template", "spec", "activeDeadlineSeconds"), "is forbidden for a Deployment's pods")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= (spec.get("minReadySeconds") or 0):
        yield Finding(("spec", "progressDeadlineSeconds"), "must be greater than minReadySeconds")
    yield from _strategy(spec.get("strategy"))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        yield Finding(("spec", "selector"), "is required: the Deployment's pods are found by it")
        return
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        yield Finding(("spec", "selector"), "empty selector is invalid for deployment: name the template's labels")
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    yield from _selects(selector, labels)


def _selects(selector: dict[str, Any], labels: dict[str, Any]) -> Iterator[Finding]:
    """metav1 LabelSelectorAsSelector and Matches: valid expressions that the labels satisfy."""
    matched = all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())
    for e, expression in enumerate(selector.get("matchExpressions") or []):
        operator, values = expression.get("operator"), expression.get("values") or []
        at = ("spec", "selector", "matchExpressions", e)
        if operator in ("In", "NotIn") and not values:
            yield Finding((*at, "values"), f"must be specified when operator is {operator}")
        elif operator in ("Exists", "DoesNotExist") and values:
            yield Finding((*at, "values"), f"may not be specified when operator is {operator}")
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            yield Finding((*at, "operator"), f"{operator!r} is not one of: In, NotIn, Exists, DoesNotExist")
        else:
            key = expression.get("key")
            has = key in labels
            matched &= {
                "In": has and labels.get(key) in values,
                "NotIn": not has or labels.get(key) not in values,
                "Exists": has,
                "DoesNotExist": not has,
            }[operator]
    if not matched:
        yield Finding(("spec", "template", "metadata", "labels"), "`selector` does not match template `labels`")


def _strategy(strategy: Any) -> Iterator[Finding]:
    if not isinstance(strategy, dict):
        return
    kind, rolling = strategy.get("type", "RollingUpdate"), strategy.get("rollingUpdate")
    if kind not in ("Recreate", "RollingUpdate"):
        yield Finding(("spec", "strategy", "type"), f"{kind!r} is not one of: Recreate, RollingUpdate")
    elif kind == "Recreate" and rolling is not None:
        yield Finding(("spec", "strategy", "rollingUpdate"), "may not be specified when strategy type is Recreate")
    elif isinstance(rolling, dict):
        zero = [str(rolling.get(k, "25%")).rstrip("%") == "0" for k in ("maxSurge", "maxUnavailable")]
        if all(zero):
            yield Finding(("spec", "strategy", "rollingUpdate", "maxUnavailable"), "may not be 0 when maxSurge is 0")


JOB_COUNTS = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished")
JOB_COUNTS += ("backoffLimitPerIndex", "maxFailedIndexes")


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
    if spec.get("completionMode", "NonIndexed") not in ("NonIndexed", "Indexed"):
        yield Finding(("spec", "completionMode"), f"{spec['completionMode']!r} is not one of: NonIndexed, Indexed")
    for count in JOB_COUNTS:
        if isinstance(spec.get(count), int) and spec[count] < 0:
            yield Finding(("spec", count), "must be greater than or equal to 0")
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        yield Finding(("spec", "backoffLimitPerIndex"), "is required when maxFailedIndexes is specified")
    if spec.get("completionMode", "NonIndexed") != "Indexed":
        for indexed_only in ("backoffLimitPerIndex", "maxFailedIndexes", "successPolicy"):
            if spec.get(indexed_only) is not None:
                yield Finding(("spec", indexed_only), "requires indexed completion mode")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in ("TerminatingOrFailed", "Failed"):
        yield Finding(("spec", "podReplacementPolicy"), f"{replacement!r} is not one of: TerminatingOrFailed, Failed")
    elif replacement == "TerminatingOrFailed" and spec.get("podFailurePolicy") is not None:
        yield Finding(("spec", "podReplacementPolicy"), "must be Failed when podFailurePolicy is specified")


def _hpa(hpa: dict[str, Any]) -> Iterator[Finding]:
    """autoscaling/validation/validation.go ValidateHorizontalPodAutoscalerSpec and validateMetricSpec:
    at least one replica (HPAScaleToZero is alpha, off), the type's source and only it."""
    spec = hpa["spec"]
    if isinstance(spec.get("minReplicas"), int) and spec["minReplicas"] < 1:
        yield Finding(("spec", "minReplicas"), "must be greater than or equal to 1 (scale to zero is KEDA's)")
    for direction in ("scaleUp", "scaleDown"):
        rules = (spec.get("behavior") or {}).get(direction)
        if isinstance(rules, dict):
            yield from scaling_rule_errors(rules, ("spec", "behavior", direction))
    for m, metric in enumerate(spec.get("metrics") or []):
        if not isinstance(metric, dict):
            continue
        source = METRIC_SOURCES.get(metric.get("type"))
        if source is None:
            yield Finding(("spec", "metrics", m, "type"), f"must be one of: {', '.join(METRIC_SOURCES)}")
            continue
        if metric.get(source) is None:
            why = f"must populate information for the given metric source ({metric['type']}: {source})"
            yield Finding(("spec", "metrics", m, source), why)
        for other in sorted(set(METRIC_SOURCES.values()) - {source}):
            if metric.get(other) is not None:
                yield Finding(("spec", "metrics", m, other), "must populate the given metric source only")


SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
SERVICE_PROTOCOLS = ("TCP", "UDP", "SCTP")
EXTERNAL_TRAFFIC_POLICIES = ("Cluster", "Local")
SESSION_AFFINITIES = ("None", "ClientIP")
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"


def _service(service: dict[str, Any]) -> Iterator[Finding]:
    """core/validation/validation.go validateService (and validateServicePort,
    validateServiceExternalTrafficPolicy; pkg/api/service/util.go ExternallyAccessible): the type's
    own fields only on that type, ports unless headless or ExternalName, source ranges as CIDRs."""
    spec = service["spec"]
    kind = spec.get("type") or "ClusterIP"
    headless = spec.get("clusterIP") == "None" or (spec.get("clusterIPs") or [None])[0] == "None"
    if kind not in SERVICE_TYPES:
        yield Finding(("spec", "type"), f"{kind!r} is not a Service type: {', '.join(SERVICE_TYPES)}")
        return
    if not spec.get("ports") and not headless and kind != "ExternalName":
        yield Finding(("spec", "ports"), "is required: a Service that is not headless needs at least one port")
    if headless and kind in ("LoadBalancer", "NodePort"):
        yield Finding(("spec", "clusterIP"), f"may not be set to 'None' for {kind} services")
    if kind == "ExternalName":
        yield from _external_name(spec)
    for p, port in enumerate(spec.get("ports") or []):
        if isinstance(port, dict):
            yield from _service_port(port, ("spec", "ports", p), kind)
    external = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and spec.get("externalIPs"))
    policy = spec.get("externalTrafficPolicy")
    if policy is not None and not external:
        yield Finding(("spec", "externalTrafficPolicy"), "may only be set for externally-accessible services")
    elif policy is not None and policy not in EXTERNAL_TRAFFIC_POLICIES:
        yield Finding(("spec", "externalTrafficPolicy"), f"{policy!r} is not one of: Cluster, Local")
    affinity = spec.get("sessionAffinity")
    if affinity is not None and affinity not in SESSION_AFFINITIES:
        yield Finding(("spec", "sessionAffinity"), f"{affinity!r} is not one of: None, ClientIP")
    yield from _load_balancer_only(spec, kind)
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    if not spec.get("loadBalancerSourceRanges") and SOURCE_RANGES_ANNOTATION in annotations and kind != "LoadBalancer":
        at = ("metadata", "annotations", SOURCE_RANGES_ANNOTATION)
        yield Finding(at, f"may only be used when type is LoadBalancer, not {kind}")


def _external_name(spec: dict[str, Any]) -> Iterator[Finding]:
    cname = str(spec.get("externalName") or "").removesuffix(".")
    if not cname:
        yield Finding(("spec", "externalName"), "is required for an ExternalName service (the DNS name it aliases)")
    elif len(cname) > 253 or not DNS1123_SUBDOMAIN.fullmatch(cname):
        yield Finding(("spec", "externalName"), f"{cname!r} must be a DNS-1123 subdomain")
    if spec.get("clusterIP") or spec.get("clusterIPs"):
        yield Finding(("spec", "clusterIP"), "may not be set for ExternalName services")


def _service_port(port: dict[str, Any], at: tuple, kind: str) -> Iterator[Finding]:
    protocol = port.get("protocol", "TCP")
    if protocol not in SERVICE_PROTOCOLS:
        yield Finding((*at, "protocol"), f"{protocol!r} is not one of: {', '.join(SERVICE_PROTOCOLS)}")
    if port.get("nodePort") and kind == "ClusterIP":
        yield Finding((*at, "nodePort"), "may not be used when type is ClusterIP")


def _load_balancer_only(spec: dict[str, Any], kind: str) -> Iterator[Finding]:
    ranges = spec.get("loadBalancerSourceRanges") or []
    if ranges and kind != "LoadBalancer":
        yield Finding(("spec", "loadBalancerSourceRanges"), f"may only be used when type is LoadBalancer, not {kind}")
    for r, value in enumerate(ranges):
        try:
            ipaddress.ip_network(str(value).strip(), strict=False)
        except ValueError:
            yield Finding(("spec", "loadBalancerSourceRanges", r), f"{value!r} is not a CIDR (e.g. 10.0.0.0/8)")
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        yield Finding(("spec", "allocateLoadBalancerNodePorts"), "may only be used when type is LoadBalancer")


ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
RBAC_GROUP = "rbac.authorization.k8s.io"


def _claim(claim: dict[str, Any]) -> Iterator[Finding]:
    """core/validation/validation.go ValidatePersistentVolumeClaimSpec."""
    spec = claim["spec"]
    modes = spec.get("accessModes") or []
    if not modes:
        yield Finding(("spec", "accessModes"), "at least 1 access mode is required")
    for m, mode in enumerate(modes):
        if mode not in ACCESS_MODES:
            yield Finding(("spec", "accessModes", m), f"{mode!r} is not one of: {', '.join(ACCESS_MODES)}")
    if "ReadWriteOncePod" in modes and len(set(modes)) > 1:
        yield Finding(("spec", "accessModes"), "may not use ReadWriteOncePod with other access modes")
    requests = (spec.get("resources") or {}).get("requests") or {}
    at = ("spec", "resources", "requests", "storage")
    if "storage" not in requests:
        yield Finding(at, "is required: the size of the volume to claim")
    elif (amount := quantity(requests["storage"])) is not None and amount <= 0:
        yield Finding(at, "must be greater than zero")


def _binding(binding: dict[str, Any]) -> Iterator[Finding]:
    """rbac/validation/validation.go ValidateRoleBinding: a binding's roleRef names an RBAC role."""
    ref = binding.get("roleRef") if isinstance(binding.get("roleRef"), dict) else {}
    if ref.get("apiGroup", RBAC_GROUP) != RBAC_GROUP:
        yield Finding(("roleRef", "apiGroup"), f"{ref['apiGroup']!r} is not {RBAC_GROUP}")
    kinds = ("Role", "ClusterRole") if binding.get("kind") == "RoleBinding" else ("ClusterRole",)
    if ref.get("kind") not in kinds:
        yield Finding(("roleRef", "kind"), f"{ref.get('kind')!r} is not one of: {', '.join(kinds)}")


NO_SPEC = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")  # kinds whose rules are not under spec
RULES: dict[str, Callable[[dict[str, Any]], Iterator[Finding]]] = {
    "Role": _role,
    "ClusterRole": _role,
    "Deployment": _deployment,
    "Job": _job,
    "HorizontalPodAutoscaler": _hpa,
    "Service": _service,
    "PersistentVolumeClaim": _claim,
    "RoleBinding": _binding,
    "ClusterRoleBinding": _binding,
    **kservehooks.RULES,  # KServe's admission webhooks
}


def server_errors(obj: dict[str, Any], version: str) -> Iterator[Finding]:
    """Every API server rule obj breaks that its schema does not say: those of every object and pod
    template (apirules.py), then those of its kind."""
    yield from api_errors(obj, version)
    yield from kind_errors(obj)


def kind_errors(obj: dict[str, Any]) -> Iterator[Finding]:
    """What the server's validation of obj's kind refuses; a kind whose spec is missing is reported
    by apirules' required-spec rule instead."""
    rule = RULES.get(obj.get("kind"))
    if rule is not None and (obj.get("kind") in NO_SPEC or isinstance(obj.get("spec"), dict)):
        yield from rule(obj)
