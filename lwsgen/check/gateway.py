"""gateway.enabled: what the endpoint picker needs of the serving pods (their metrics, unguarded),
and the autoscaling metrics that exist only where it runs."""

import re

from lwsgen import registry, runtimes
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

# autoscaling.metric values read from the endpoint picker's pool gauges (derive/gateway.py records them).
ROUTER_METRICS = ("router-queue-size", "router-kv-cache-usage")


def router_metrics_for(profile: Profile) -> tuple[str, ...]:
    """The router metrics this runtime can be scaled on behind a gateway: no KV-cache average where the
    engine reports no KV fraction (it would always be 0, refused below)."""
    if runtimes.get(profile.runtime) is None:
        return ROUTER_METRICS
    router = runtimes.capabilities(profile).router_metrics
    if router is None:
        return ()
    return tuple(m for m in ROUTER_METRICS if m != "router-kv-cache-usage" or router.kv_usage)


def autoscaling_metrics(profile: Profile) -> tuple[str, ...]:
    return router_metrics_for(profile) if profile.gateway.enabled else ()


@registry.rule(
    "bad-format",
    "missing-field",
    "needs-monitoring",
    "not-supported",
    scope=PROFILE,
    severity=ERROR,
)
def check(profile: Profile, src: Source) -> list[Problem]:
    """gateway.enabled has what the front door needs: a parent Gateway, monitoring for the picker's
    metrics, a runtime whose metrics the endpoint picker reads, and settings in the forms they take."""
    gateway = profile.gateway
    if not gateway.enabled or runtimes.get(profile.runtime) is None:
        return []
    if profile.platform != "lws":  # KServe's router: its own picker, default Gateway (check/platform.py)
        return []
    caps = runtimes.capabilities(profile)
    problems = []
    if not gateway.parent_refs:
        problems.append(
            src.problem(
                ("gateway", "enabled"),
                "a gateway needs gateway.parentRefs: the Gateway (name, and namespace if not this one) the route "
                "attaches to",
                "missing-field",
            )
        )
    if not profile.monitoring.enabled:
        problems.append(
            src.problem(
                ("gateway", "enabled"),
                "the endpoint picker routes on the engine's metrics and the router records read its own: "
                "set monitoring.enabled to true",
                "needs-monitoring",
            )
        )
    if caps.router_metrics is None:
        version = runtimes.engine_version(profile)
        engine = f"{version.engine.title} {version.engine.spell(version.text)} ({version.said()})"
        problems.append(
            src.problem(
                ("gateway", "enabled"),
                f"{engine} exports no per-pod queue gauges for the endpoint picker to route on; use a newer "
                "engine version or leave the gateway off",
                "not-supported",
            )
        )
    for index, host in enumerate(gateway.hostnames):
        if re.fullmatch(r"[0-9.]+", host):
            problems.append(
                src.problem(
                    ("gateway", "hostnames", index),
                    f"{host!r} is an IP address; Gateway API hostnames are names",
                    "bad-format",
                )
            )
    scaling = profile.autoscaling
    if (
        scaling.enabled
        and scaling.metric == "router-kv-cache-usage"
        and caps.router_metrics
        and not caps.router_metrics.kv_usage
    ):
        problems.append(
            src.problem(
                ("autoscaling", "metric"),
                f"{profile.runtime} exports no KV-cache fraction, so the endpoint picker's pool average of it is "
                "always 0; scale on router-queue-size",
                "not-supported",
            )
        )
    if caps.metrics_need_api_key and profile.service.api_key_secret is not None:
        problems.append(
            src.problem(
                ("service", "apiKeySecret"),
                f"{profile.runtime} guards /metrics with the API key, and the endpoint picker cannot send one when it "
                "reads them; leave the key out behind a gateway (authenticate at the Gateway instead)",
                "not-supported",
            )
        )
    return problems


PICKER_VERSION = "0.10"  # the llm-d-router release whose flags and config lwsgen writes (derive/gateway.py)


@registry.rule("no-scorer", "picker-version", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """An endpoint picker image of another version than the one its flags and config are written for,
    and a scorer weighted on metrics the runtime does not export."""
    gateway = profile.gateway
    if not gateway.enabled:
        return []
    out = []
    tag = re.search(r":v?(\d+\.\d+)(?:\.\d+)?[^:/]*$", gateway.endpoint_picker.image)
    if tag and tag.group(1) != PICKER_VERSION:
        out.append(
            src.problem(
                ("gateway", "endpointPicker", "image"),
                f"is llm-d-router {tag.group(1)}; lwsgen writes the flags and config of v{PICKER_VERSION}.0, which "
                "another release may refuse",
                "picker-version",
            )
        )
    scorers = gateway.endpoint_picker.scorers
    if not (scorers.queue or scorers.kv_cache or scorers.prefix_cache):
        out.append(
            src.problem(
                ("gateway", "endpointPicker", "scorers"),
                "every weight is 0: the picker scores nothing and picks any pod",
                "no-scorer",
            )
        )
    return out
