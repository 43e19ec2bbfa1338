"""The Service and scaling escape hatches: the serving port, extra ports, externalTrafficPolicy,
KEDA scale to zero and HPA behavior; and the Kubernetes structures every hatch takes, checked
against Kubernetes' own definitions (strict) at the profile's Kubernetes version, positioned at
the profile."""

from __future__ import annotations

from lwsgen.check import pods
from lwsgen.check.profile import Profile
from lwsgen.load.source import Source
from lwsgen.problems import Problem

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
    from lwsgen.output.validate import definition_errors

    out = []
    for path, definition in _values(src):
        for error in definition_errors(_at(src.data, path), definition, version):
            out.append(src.problem((*path, *error.path), error.message, "invalid", key=error.at_key))
    return out


def _leader_ports(profile: Profile) -> tuple[dict[str, int], dict[int, str]]:
    from lwsgen import runtimes

    ports = {p.name: p.number for p in runtimes.get(profile.runtime).parts(profile).leader.ports}
    for entry in pods.settings(profile, "leader").sidecars:
        ports.update({p["name"]: p.get("containerPort") for p in entry.value.get("ports") or [] if p.get("name")})
        ports.update({f"#{p['containerPort']}": p["containerPort"] for p in entry.value.get("ports") or []})
    numbers = {number: name for name, number in ports.items()}
    return {k: v for k, v in ports.items() if not k.startswith("#")}, numbers


def port_problems(profile: Profile, src: Source) -> list[Problem]:
    from lwsgen import runtimes

    parts = runtimes.get(profile.runtime).parts(profile)
    names, numbers = _leader_ports(profile)
    serving = {name: profile.service.port or names.get(name) for name in parts.service_ports}
    out, used = [], {*serving.values()}
    fronted = profile.gateway.enabled and profile.service.type == "ClusterIP"
    if (
        profile.service.extra_ports
        and fronted
        and not (profile.service.allowed_sources or profile.service.allowed_namespaces)
    ):
        message = (
            "behind the gateway the NetworkPolicy admits only the Gateway's proxies and the endpoint picker: say who "
            "reaches them in service.allowedSources or service.allowedNamespaces"
        )
        out.append(src.problem(("service", "extraPorts"), message, "unreachable"))
    for index, extra in enumerate(profile.service.extra_ports):
        at = ("service", "extraPorts", index)
        if extra.name in serving:
            out.append(src.problem((*at, "name"), f"{extra.name!r} is the serving port's name", "taken"))
        if extra.port in used:
            out.append(src.problem((*at, "port"), f"port {extra.port} is already a port of the Service", "taken"))
        used.add(extra.port)
        target = extra.name if extra.target_port is None else extra.target_port
        if (target not in names) if isinstance(target, str) else (target not in numbers):
            known = ", ".join(f"{n} ({p})" for n, p in sorted(names.items()))
            message = f"no container port {target!r} on the leader pod; its ports: {known}"
            out.append(
                src.problem((*at, "targetPort" if extra.target_port is not None else "name"), message, "no-port")
            )
    return out


def scaling_problems(profile: Profile, src: Source) -> list[Problem]:
    scaling, out = profile.autoscaling, []
    if not scaling.enabled:
        return []
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


def check(profile: Profile, src: Source) -> list[Problem]:
    return port_problems(profile, src) + scaling_problems(profile, src)


_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


def duration_seconds(text: str) -> float:
    """A Gateway API duration (schema-valid: 300s, 1h30m, 500ms) in seconds."""
    import re

    return sum(int(n) * _UNITS[unit] for n, unit in re.findall(r"([0-9]+)(ms|h|m|s)", text))


def warnings(profile: Profile, src: Source) -> list[Problem]:
    """A cold start longer than requests may wait: the first requests after idle fail."""
    if not (profile.autoscaling.to_zero and profile.gateway.enabled):
        return []
    from lwsgen.check.budget import budget

    start, timeout = budget(profile).startup_probe, profile.gateway.request_timeout
    if start <= duration_seconds(timeout):
        return []
    message = (
        f"from zero, the first group takes up to {start} s to start (its startup budget) and requests wait in the "
        f"endpoint picker at most gateway.requestTimeout ({timeout}): the first ones fail unless clients retry"
    )
    field = "minReplicas" if profile.autoscaling.min_replicas == 0 else "idleReplicas"
    return [src.problem(("autoscaling", field), message, "cold-start")]
