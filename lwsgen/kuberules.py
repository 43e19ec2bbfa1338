"""API server rules of Kubernetes structures that a profile's hatches set directly and the output
carries, shared by the profile's check (positioned at the profile) and the output's validation
(output/kindrules.py). Each after its function in k8s.io/kubernetes v1.36.3."""

from collections.abc import Iterator
from typing import Any

from lwsgen.problems import Finding


def scaling_rule_errors(rules: dict[str, Any], at: tuple) -> Iterator[Finding]:
    """autoscaling/validation/validation.go validateScalingRules and validateScalingPolicy; a
    `policies` left out is filled by defaulting (autoscaling/v2/defaults.go), an empty list is not."""
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and not 0 <= window <= 3600:  # MaxStabilizationWindowSeconds
        yield Finding((*at, "stabilizationWindowSeconds"), "must be between 0 and 3600")
    if rules.get("selectPolicy", "Max") not in ("Max", "Min", "Disabled"):
        yield Finding((*at, "selectPolicy"), f"{rules['selectPolicy']!r} is not one of: Max, Min, Disabled")
    if "policies" in rules and not rules["policies"]:
        yield Finding((*at, "policies"), "must specify at least one Policy")
    for p, policy in enumerate(rules.get("policies") or []):
        if not isinstance(policy, dict):
            continue
        if policy.get("type") not in ("Pods", "Percent"):
            yield Finding((*at, "policies", p, "type"), f"{policy.get('type')!r} is not one of: Pods, Percent")
        if isinstance(policy.get("value"), int) and policy["value"] <= 0:
            yield Finding((*at, "policies", p, "value"), "must be greater than zero")
        period = policy.get("periodSeconds")
        if isinstance(period, int) and not 0 < period <= 1800:  # MaxPeriodSeconds
            yield Finding((*at, "policies", p, "periodSeconds"), "must be between 1 and 1800")
