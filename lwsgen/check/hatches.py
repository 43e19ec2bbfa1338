"""The Service and scaling escape hatches: the serving port, extra ports, externalTrafficPolicy,
KEDA scale to zero and HPA behavior; and the Kubernetes structures every hatch takes, checked
against Kubernetes' own definitions (strict) at the profile's Kubernetes version, positioned at
the profile."""

from __future__ import annotations

from lwsgen import registry, runtimes
from lwsgen.check import pods
from lwsgen.check.budget import budget
from lwsgen.kuberules import scaling_rule_errors
from lwsgen.kubeschemas import definition_errors
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

# Hatch field -> (Kubernetes definition, a list of them?); the same under leader: and worker:.
POD_FIELDS = {
    "affinity": ("io.k8s.api.core.v1.Affinity", False),
    "topologySpreadConstraints": ("io.k8s.api.core.v1.TopologySpreadConstraint", True),
    "volumes": ("io.k8s.api.core.v1.Volume", True),
    "volumeMounts": ("io.k8s.api.core.v1.VolumeMount", True),
    "initContainers": ("io.k8s.api.core.v1.Container", True),
    "containers": ("io.k8s.api.core.v1.Container", True),
    "dnsConfig": ("io.k8s.api.core.v1.PodDNSConfig", False),
}
SCALING_RULES = "io.k8s.api.autoscaling.v2.HPAScalingRules"


def _values(src: Source) -> list[tuple[tuple, str]]:
    """(profile path, definition) of every hatch value the profile sets."""
    data, found = src.data, []
    for owner, fields in ((), data), *(((side,), data.get(side) or {}) for side in pods.SIDES):
        for field, (definition, is_list) in POD_FIELDS.items():
            if field not in fields:
                continue
            items = enumerate(fields[field]) if is_list else [(None, fields[field])]
            found += [((*owner, field) if i is None else (*owner, field, i), definition) for i, _ in items]
    behavior = (data.get("autoscaling") or {}).get("behavior") or {}
    found += [(("autoscaling", "behavior", direction), SCALING_RULES) for direction in behavior]
    return found


def _at(data: object, path: tuple) -> object:
    for part in path:
        data = data[part]  # type: ignore[index]
    return data


def definition_problems(src: Source, version: str) -> list[Problem]:
    """Every hatch value against its strict Kubernetes definition."""

    out = []
    for path, definition in _values(src):
        value = _at(src.data, path)
        errors = list(definition_errors(value, definition, version))
        for error in errors:
            out.append(src.problem((*path, *error.path), error.message, "invalid", key=error.at_key))
        if definition == SCALING_RULES and not errors:  # the API server's bounds the definition leaves out
            out += [
                src.problem(found.path, found.message, "out-of-range") for found in scaling_rule_errors(value, path)
            ]
    return out


def _sidecar_ports(profile: Profile) -> dict[str, str]:
    """Named container ports of the leader's sidecars -> their protocol: what extra ports may target
    (the engine's own ports besides the serving one are its group's, never a Service's)."""
    return {
        port["name"]: port.get("protocol", "TCP")
        for entry in pods.settings(profile, "leader").sidecars
        for port in entry.value.get("ports") or []
        if isinstance(port, dict) and port.get("name")
    }


def port_problems(profile: Profile, src: Source) -> list[Problem]:
    service = profile.service
    if service.port is None and not service.extra_ports:
        return []
    parts = runtimes.get(profile.runtime).parts(profile)
    numbers = {p.name: p.number for p in parts.leader.ports}
    first, *others = parts.service_ports
    used = {service.port or numbers[first]: first, **{numbers[name]: name for name in others}}
    out = []
    if service.port is not None and service.port in used and used[service.port] != first:
        message = f"port {service.port} is already the Service's {used[service.port]!r} port"
        out.append(src.problem(("service", "port"), message, "taken"))
    fronted = profile.gateway.enabled and service.type == "ClusterIP"
    if service.extra_ports and fronted and not (service.allowed_sources or service.allowed_namespaces):
        message = (
            "behind the gateway the NetworkPolicy admits only the Gateway's proxies and the endpoint picker: say who "
            "reaches them in service.allowedSources or service.allowedNamespaces"
        )
        out.append(src.problem(("service", "extraPorts"), message, "unreachable"))
    targets = _sidecar_ports(profile)
    for index, extra in enumerate(service.extra_ports):
        out += _extra_port(src, ("service", "extraPorts", index), extra, parts.service_ports, used, targets)
    return out


def _extra_port(src: Source, at: tuple, extra, serving: tuple, used: dict, targets: dict[str, str]) -> list[Problem]:
    out = []
    if extra.name in serving:
        out.append(src.problem((*at, "name"), f"{extra.name!r} is the serving port's name", "taken"))
    if extra.port in used:
        out.append(src.problem((*at, "port"), f"port {extra.port} is already a port of the Service", "taken"))
    used[extra.port] = extra.name
    target = extra.target_port or extra.name
    field = "targetPort" if extra.target_port is not None else "name"
    if target not in targets:
        known = ", ".join(sorted(targets)) or "none (add one to a leader sidecar's ports)"
        message = f"no sidecar port {target!r} on the leader pod; named ports of its sidecars: {known}"
        out.append(src.problem((*at, field), message, "no-port"))
    elif targets[target] != extra.protocol:
        message = f"{target!r} is a {targets[target]} port; this Service port is {extra.protocol}"
        out.append(src.problem((*at, "protocol"), message, "protocol"))
    return out


def scaling_problems(profile: Profile, src: Source) -> list[Problem]:
    scaling, out = profile.autoscaling, []
    if not scaling.enabled:
        given = (
            ("behavior", scaling.behavior),
            ("idleReplicas", scaling.idle_replicas),
            ("activationTarget", scaling.activation_target),
        )
        return [
            src.problem(
                ("autoscaling", field),
                f"{field} applies to an autoscaler, and autoscaling.enabled is false",
                "not-applicable",
            )
            for field, value in given
            if value not in (None, {})
        ]
    if scaling.activation_target is not None and not scaling.to_zero:
        message = (
            "KEDA's activation decides only between zero groups and some: it applies with minReplicas 0 or "
            "idleReplicas 0"
        )
        out.append(src.problem(("autoscaling", "activationTarget"), message, "not-applicable"))
    keda_only = (
        ("minReplicas", scaling.min_replicas == 0),
        ("idleReplicas", scaling.idle_replicas is not None),
        ("activationTarget", scaling.activation_target is not None),
    )
    for field, given in keda_only:
        if given and scaling.engine != "keda":
            message = (
                f"{field} is KEDA's: a HorizontalPodAutoscaler never scales to zero (HPAScaleToZero is an alpha "
                "feature gate) and has no activation; set autoscaling.engine keda"
            )
            out.append(src.problem(("autoscaling", field), message, "not-supported"))
    if scaling.idle_replicas is not None and scaling.min_replicas <= scaling.idle_replicas:
        message = "KEDA needs idleReplicas below minReplicas: set minReplicas to 1 or more (the count once active)"
        out.append(src.problem(("autoscaling", "idleReplicas"), message, "bad-range"))
    if scaling.to_zero and not profile.gateway.enabled:
        field = "minReplicas" if scaling.min_replicas == 0 else "idleReplicas"
        message = (
            "with no group running, no pod exports the metric that would wake the autoscaler; behind "
            "gateway.enabled the endpoint picker holds the requests that arrive meanwhile and counts them "
            "(its flow-control queue), which scales the first group up"
        )
        out.append(src.problem(("autoscaling", field), message, "no-wake-signal"))
    return out


@registry.rule(
    "bad-range",
    "no-port",
    "no-wake-signal",
    "not-applicable",
    "not-supported",
    "protocol",
    "taken",
    "unreachable",
    scope=PROFILE,
    severity=ERROR,
)
def check(profile: Profile, src: Source) -> list[Problem]:
    """service.extraPorts and the autoscaler behaviour hatches: ports that exist and are not taken,
    scaling rules in range, and a wake signal where the set scales to zero."""
    return port_problems(profile, src) + scaling_problems(profile, src)


_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


def duration_seconds(text: str) -> float:
    """A Gateway API duration (schema-valid: 300s, 1h30m, 500ms) in seconds."""
    import re

    return sum(int(n) * _UNITS[unit] for n, unit in re.findall(r"([0-9]+)(ms|h|m|s)", text))


@registry.rule("bypass", "cold-start", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """A cold start longer than requests may wait: the first requests after idle fail."""
    if not (profile.autoscaling.to_zero and profile.gateway.enabled):
        return []

    start, timeout = budget(profile).startup_probe, profile.gateway.request_timeout
    message = (
        f"from zero, the first group takes up to {start} s to start (its startup budget) and requests wait in the "
        f"endpoint picker at most gateway.requestTimeout ({timeout}): the first ones fail unless clients retry"
    )
    field = "minReplicas" if profile.autoscaling.min_replicas == 0 else "idleReplicas"
    out = [src.problem(("autoscaling", field), message, "cold-start")] if start > duration_seconds(timeout) else []
    if profile.service.type != "ClusterIP":
        message = (
            f"a {profile.service.type} Service lets clients past the Gateway: while no group runs, nothing holds "
            "or counts their requests and they fail; with scale to zero, serve through the Gateway (service.type "
            "ClusterIP)"
        )
        out.append(src.problem(("service", "type"), message, "bypass"))
    return out
