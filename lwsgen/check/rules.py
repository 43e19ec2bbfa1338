"""Stage 2b: rules beyond the schema, on the typed profile; each rule returns the problems it finds."""

from __future__ import annotations

from lwsgen import registry, runtimes
from lwsgen.check import (
    delivery,
    engine,
    gateway,
    hatches,
    images,
    metadata,
    model,
    nccl,
    platform,
    podhatches,
    scheduling,
    sizing,
    startup,
    versions,
)
from lwsgen.check.containers import env_problems
from lwsgen.check.pods import OWN_LABEL_PREFIXES
from lwsgen.load.source import Source
from lwsgen.naming import SUFFIXES, name_budget
from lwsgen.problems import ERROR, NOTICE, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

# The modules whose profile rules check_rules and warnings run: importing them registers their rules.
RULE_MODULES = (
    delivery,
    engine,
    gateway,
    hatches,
    images,
    metadata,
    model,
    platform,
    podhatches,
    scheduling,
    startup,
    versions,
)
# Codes said as notices: how a valid profile is read, nothing to fix (--strict leaves them alone).
NOTICES = {"layer-split"}


def _layouts(profile: Profile, src: Source) -> list[str]:
    """Nearby layouts that divide evenly: same GPUs per node with a rounded world size, or fewer GPUs
    per node. With data parallelism (tensor x pipeline GPUs per rank), a rounded data degree; for an
    engine that splits by pipeline only (llama.cpp), a rounded pipeline. A layout the rules would
    refuse, or the fit check says cannot hold the model, is not offered: every suggestion renders once
    the profile's other errors, which it neither causes nor fixes, are fixed."""

    par, world, gpus = profile.parallelism, profile.world_size, profile.node.gpus
    per_rank = par.tensor * par.pipeline if par.data > 1 else 0
    by_pipeline = profile.runtime == "llamacpp"
    below, above = (world // gpus) * gpus, (world // gpus + 1) * gpus
    candidates = []
    for total in (below, above):
        nodes = total // gpus
        where = f"({nodes} node{'s' if nodes > 1 else ''} of {gpus} GPUs)"
        if total and per_rank and total % per_rank == 0:
            candidates.append(
                (
                    profile._replace(parallelism=par._replace(data=total // per_rank)),
                    f"data {total // per_rank} {where}",
                )
            )
        elif total and by_pipeline:
            candidates.append(
                (profile._replace(parallelism=par._replace(tensor=1, pipeline=total)), f"pipeline {total} {where}")
            )
        elif total and not per_rank:
            layout = par._replace(tensor=gpus, pipeline=nodes)
            candidates.append((profile._replace(parallelism=layout), f"tensor {gpus} x pipeline {nodes} {where}"))
    for per_node in range(gpus - 1, 0, -1):
        if world % per_node == 0:
            node = profile.node._replace(gpus=per_node)
            candidates.append(
                (
                    profile._replace(node=node),
                    f"node.gpus {per_node} with the same parallelism ({world // per_node} nodes)",
                )
            )
            break
    # A problem the profile has anyway (an autoscaler's bounds, say) is no reason to hold a layout back.
    already = {(p.path, p.code) for p in registry.run(PROFILE, ERROR, profile, src, without=check_divisible)}
    return [
        label
        for candidate, label in candidates
        if sizing.fits_profile(candidate) is None and {(p.path, p.code) for p in check_rules(candidate, src)} <= already
    ]


@registry.rule("not-divisible", scope=PROFILE, severity=ERROR)
def check_divisible(profile: Profile, src: Source) -> list[Problem]:
    """The world size is a multiple of node.gpus, so every group takes whole nodes; the message offers
    the nearest layouts that do (each one a profile that renders)."""
    world, gpus = profile.world_size, profile.node.gpus
    if world <= gpus or world % gpus == 0:
        return []
    par = profile.parallelism
    data = f"data {par.data} x " if par.data > 1 else ""
    message = (
        f"world size {world} ({data}tensor {par.tensor} x pipeline {par.pipeline}) is not a multiple of "
        f"node.gpus {gpus}, so groups cannot take whole nodes; valid layouts near it: "
        + "; ".join(_layouts(profile, src))
    )
    fields = [f for f in _LAYOUT_FIELDS if f in src.values_at and (par.data > 1 or f != ("parallelism", "data"))]
    # the field --set or the profile itself sets, over one an extended base set: that made it not divide
    own = [f for f in fields if src.file_of(f).startswith("--set")] or [f for f in fields if src.file_of(f) == src.file]
    field = (own or fields or [("node", "gpus")])[0]
    return [src.problem(field, message, "not-divisible")]


_LAYOUT_FIELDS = (("parallelism", "data"), ("parallelism", "tensor"), ("node", "gpus"), ("parallelism", "pipeline"))


@registry.rule("name-too-long", scope=PROFILE, severity=ERROR)
def check_name_budget(profile: Profile, src: Source) -> list[Problem]:
    """The profile name leaves room for the longest suffix lwsgen adds and the highest group index, within
    the 63 characters of a label value and a pod's hostname."""
    if getattr(src, "in_set", False):  # a role's names are the DisaggregatedSet's (check/disaggregation.py)
        return []
    top = profile.highest_group_index
    budget = name_budget(top)
    if len(profile.name) <= budget:
        return []
    longest = max(SUFFIXES.values(), key=len)
    return [
        src.problem(
            ("name",),
            (
                f"{len(profile.name)} characters is too long; at most {budget} fit with group indexes up to {top}: "
                f"LeaderWorkerSet labels worker pods with the StatefulSet revision '<name>-{top}-<10-char hash>' (63 "
                "at most), "
                f"and derived names such as '<name>{longest}' must stay DNS labels"
            ),
            "name-too-long",
        )
    ]


@registry.rule("min-above-max", scope=PROFILE, severity=ERROR)
def check_replicas(profile: Profile, src: Source) -> list[Problem]:
    """autoscaling.minReplicas is at most autoscaling.maxReplicas."""
    scaling = profile.autoscaling
    if scaling.min_replicas > scaling.max_replicas:
        return [
            src.problem(
                ("autoscaling", "minReplicas"),
                f"minReplicas {scaling.min_replicas} is greater than maxReplicas {scaling.max_replicas}",
                "min-above-max",
            )
        ]
    return []


@registry.rule("replicas-ignored", scope=PROFILE, severity=WARNING)
def check_replicas_with_autoscaling(profile: Profile, src: Source) -> list[Problem]:
    """replicas given with autoscaling on: it is not written (the autoscaler owns the group count, and a
    GitOps controller writing it back would fight it), so the value has no effect. Said where the
    profile (or --set) gives it, not for a base's default the profile cannot remove; a profile with
    roles reads replicas for each role that is not autoscaled."""
    scaling = profile.autoscaling
    if not scaling.enabled or profile.roles or ("replicas",) not in src.values_at:
        return []
    given_in = src.file_of(("replicas",))
    if given_in != src.file and not given_in.startswith("--set"):
        return []
    message = (
        f"replicas {profile.replicas} has no effect with autoscaling on: the autoscaler keeps between "
        f"autoscaling.minReplicas {scaling.min_replicas} and maxReplicas {scaling.max_replicas} groups; "
        "remove replicas"
    )
    return [src.problem(("replicas",), message, "replicas-ignored")]


@registry.rule("bad-format", scope=PROFILE, severity=ERROR)
def check_cidrs(profile: Profile, src: Source) -> list[Problem]:
    """Every CIDR a NetworkPolicy or load balancer gets must be one: the schema only checks its shape."""
    import ipaddress

    fields = (
        (("service", "loadBalancerSourceRanges"), profile.service.load_balancer_source_ranges),
        (("service", "allowedSources"), profile.service.allowed_sources),
        (("gateway", "proxyCIDRs"), profile.gateway.proxy_cidrs),
    )
    problems = []
    for path, values in fields:
        for index, value in enumerate(values):
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError as err:
                problems.append(src.problem((*path, index), f"{value!r} is not a CIDR ({err})", "bad-format"))
    return problems


@registry.rule("not-applicable", "not-supported", scope=PROFILE, severity=ERROR)
def check_service(profile: Profile, src: Source) -> list[Problem]:
    """service.apiKeySecret only for a runtime whose server takes an API key, and service fields that
    apply to the service type chosen."""
    service = profile.service
    if service.api_key_secret is not None and not runtimes.capabilities(profile).takes_api_key:
        return [
            src.problem(
                ("service", "apiKeySecret"),
                (
                    f"{profile.runtime} has no API key option lwsgen can pass from a Secret; runtimes that take one: "
                    + ", ".join(n for n in runtimes.known() if runtimes.newest_capabilities(n).takes_api_key)
                ),
                "not-supported",
            )
        ]
    if service.external_traffic_policy and service.type == "ClusterIP":
        return [
            src.problem(
                ("service", "externalTrafficPolicy"),
                "only applies to service.type LoadBalancer or NodePort, not ClusterIP",
                "not-applicable",
            )
        ]
    if service.load_balancer_source_ranges and service.type != "LoadBalancer":
        return [
            src.problem(
                ("service", "loadBalancerSourceRanges"),
                f"only applies to service.type LoadBalancer, not {service.type}",
                "not-applicable",
            )
        ]
    return []


@registry.rule("reserved-env", scope=PROFILE, severity=ERROR)
def check_env(profile: Profile, src: Source) -> list[Problem]:
    """The profile's env names no variable lwsgen or LeaderWorkerSet sets, and none the GPU runtime reads
    (NVIDIA_*, CUDA_VISIBLE_DEVICES) or the dynamic loader trusts."""
    return env_problems(src, ("env",), profile.env)


@registry.rule("reserved-label", scope=PROFILE, severity=ERROR)
def check_labels(profile: Profile, src: Source) -> list[Problem]:
    """labels and monitoring.prometheusLabels use no key lwsgen or LeaderWorkerSet sets (selectors rely on them)."""
    fields = ((("labels",), profile.labels), (("monitoring", "prometheusLabels"), profile.monitoring.prometheus_labels))
    return [
        src.problem(
            (*field, key),
            f"{key} is set by lwsgen or LeaderWorkerSet; use your own label key",
            "reserved-label",
            key=True,
        )
        for field, labels in fields
        for key in labels
        if key.startswith(OWN_LABEL_PREFIXES)
    ]


@registry.rule("bad-target", "needs-monitoring", scope=PROFILE, severity=ERROR)
def check_autoscaling(profile: Profile, src: Source) -> list[Problem]:
    """Autoscaling reads the recording rules monitoring emits (monitoring.enabled), and its target is a
    value the metric can reach."""
    scaling = profile.autoscaling
    if not scaling.enabled:
        return []
    problems = []
    if not profile.monitoring.enabled:
        problems.append(
            src.problem(
                ("autoscaling", "enabled"),
                ("autoscaling reads the recording rules that monitoring emits; set monitoring.enabled to true"),
                "needs-monitoring",
            )
        )
    milli = scaling.target * 1000
    if abs(milli - round(milli)) > 1e-9:
        problems.append(
            src.problem(
                ("autoscaling", "target"),
                (f"{scaling.target} is finer than a Kubernetes quantity can say; use at most 3 decimals"),
                "bad-target",
            )
        )
    return problems


@registry.rule("conflict", scope=PROFILE, severity=ERROR)
def check_node_selector(profile: Profile, src: Source) -> list[Problem]:
    """node.nodeSelector's instance-type label agrees with node.instanceType."""
    node = profile.node
    key = "node.kubernetes.io/instance-type"
    if node.instance_type is not None and node.node_selector.get(key, node.instance_type) != node.instance_type:
        return [
            src.problem(
                ("node", "nodeSelector", key),
                f"conflicts with node.instanceType {node.instance_type!r}",
                "conflict",
                key=True,
            )
        ]
    return []


@registry.rule("out-of-range", "rollout-stuck", scope=PROFILE, severity=ERROR)
def check_rollout(profile: Profile, src: Source) -> list[Problem]:
    """lws.maxUnavailable and lws.maxSurge are at most 100%, and not both 0 (a rolling update could
    never make progress)."""
    lws = profile.lws
    problems = []
    for field, value in (("maxUnavailable", lws.max_unavailable), ("maxSurge", lws.max_surge)):
        if isinstance(value, str) and int(value[:-1]) > 100:
            problems.append(src.problem(("lws", field), f"{value} is more than 100%", "out-of-range"))
    if lws.max_unavailable in (0, "0%") and lws.max_surge in (0, "0%"):
        problems.append(
            src.problem(
                ("lws", "maxUnavailable"),
                "maxUnavailable and maxSurge cannot both be 0: a rolling update could never proceed",
                "rollout-stuck",
            )
        )
    return problems


def _foreign_fields(profile: Profile, src: Source) -> list[Problem]:
    """Fields that belong to another runtime (its OWN_FIELDS), set for this one."""
    out = []
    for name in runtimes.known():
        if name == profile.runtime:
            continue
        for path in runtimes.get(name).own_fields:
            if path in src.values_at:
                message = f"only {name} reads this field; {profile.runtime} has no use for it"
                out.append(src.problem(path, message, "not-applicable"))
    return out


def _data_and_expert(profile: Profile, src: Source) -> list[Problem]:
    """Data and expert parallelism where lwsgen derives them (the runtime's DATA_AND_EXPERT)."""
    par = profile.parallelism
    asked = [
        (("parallelism", "data"), f"data {par.data}", par.data > 1),
        (("parallelism", "expert"), "expert parallelism", par.expert),
        (("parallelism", "allToAll"), f"allToAll {par.all_to_all}", par.all_to_all != "default"),
    ]
    if runtimes.get(profile.runtime).data_and_expert:
        if par.all_to_all != "default" and not par.expert:
            return [
                src.problem(
                    ("parallelism", "allToAll"),
                    "is the all-to-all of expert parallelism: set parallelism.expert",
                    "needs-expert",
                )
            ]
        return []
    able = ", ".join(n for n in runtimes.known() if runtimes.get(n).data_and_expert)
    return [
        src.problem(
            path,
            f"{what}: lwsgen derives data and expert parallelism for {able}, not {profile.runtime}",
            "not-supported",
        )
        for path, what, on in asked
        if on
    ]


@registry.rule(
    "unknown-runtime",
    "bad-model-path",
    "needs-newer-engine",
    "not-divisible",
    "not-supported",
    "not-applicable",
    "needs-expert",
    "startup-deadlock",
    scope=PROFILE,
    severity=ERROR,
)
def check_runtime(profile: Profile, src: Source) -> list[Problem]:
    """The runtime exists, and what the profile asks of it is what it can do: the runtime's own rules
    (its contract's check), fields of another runtime left out, data and expert parallelism only where
    lwsgen derives them, no LeaderReady startup where the leader waits for its workers, a pipeline
    degree only where the engine has one, and an autoscaling metric the runtime produces."""
    plugin = runtimes.get(profile.runtime)
    if plugin is None:
        return [
            src.problem(
                ("runtime",),
                f"{profile.runtime!r} is not available in this version of lwsgen; "
                f"available: {', '.join(runtimes.known())}",
                "unknown-runtime",
            )
        ]
    problems = [src.place(finding) for finding in plugin.check(profile)]
    problems += _foreign_fields(profile, src) + _data_and_expert(profile, src)
    caps = runtimes.capabilities(profile)
    if profile.lws.startup_policy == "LeaderReady" and caps.leader_ready_needs_workers:
        problems.append(
            src.problem(
                ("lws", "startupPolicy"),
                (
                    f"LeaderReady would deadlock with {profile.runtime}: its leader is only ready after the workers "
                    "start, "
                    "and LeaderReady creates the workers only once the leader is ready; use LeaderCreated"
                ),
                "startup-deadlock",
            )
        )
    if profile.parallelism.pipeline > 1 and not caps.pipeline_parallel:
        problems.append(
            src.problem(
                ("parallelism", "pipeline"),
                (
                    f"{profile.runtime} has no separate pipeline degree; set parallelism.tensor to the number of GPUs "
                    f"({profile.world_size}) and pipeline to 1"
                ),
                "not-supported",
            )
        )
    scaling = profile.autoscaling
    supported = (*caps.autoscaling_metrics, *gateway.autoscaling_metrics(profile))
    if scaling.enabled and scaling.metric not in supported:
        offered = gateway.router_metrics_for(profile)
        router = f" (and, with gateway.enabled, {', '.join(offered)})" if offered else ""
        problems.append(
            src.problem(
                ("autoscaling", "metric"),
                (
                    f"{profile.runtime} cannot produce {scaling.metric}; it supports: "
                    f"{', '.join(supported)}{'' if profile.gateway.enabled else router}"
                ),
                "not-supported",
            )
        )
    return problems


@registry.rule("missing-image", "name-too-long", scope=PROFILE, severity=ERROR)
def check_nccl_test(profile: Profile, src: Source) -> list[Problem]:
    """The NCCL preflight has an image that carries what it runs, and its objects' names fit."""
    return nccl.check(profile, src, runtimes.capabilities(profile))


def check_rules(profile: Profile, src: Source) -> list[Problem]:
    """Every registered profile rule's errors (lwsgen/registry.py)."""
    return registry.run(PROFILE, ERROR, profile, src)


# security.allow*: what each opt-in gives away, said on every render.
HOST_ACCESS = {
    "allowHostNetwork": (
        "allow_host_network",
        "the GPU pods run in the node's network namespace: every port they open (the engines' unauthenticated "
        "rendezvous and RPC ports too) is open on the node's addresses, and the NetworkPolicy no longer isolates them",
    ),
    "allowHostIPC": (
        "allow_host_ipc",
        "the GPU pods share the node's IPC namespace: any process on the node can read and write their shared memory",
    ),
    "allowPrivileged": (
        "allow_privileged",
        "the engine containers run privileged, with every device and capability of the node: a compromised engine "
        "owns the node",
    ),
}


@registry.rule("no-rdma", scope=PROFILE, severity=WARNING)
def _deepep_without_rdma(profile: Profile, src: Source) -> list[Problem]:
    """DeepEP's all-to-all moves tokens between nodes over RDMA: a multi-node group using it has an RDMA
    device, a secondary network or the host network."""
    node = profile.node
    if not profile.parallelism.all_to_all.startswith("deepep") or profile.group_size == 1:
        return []
    if node.efa or node.rdma_resource or node.networks or profile.security.allow_host_network:
        return []
    message = (
        "DeepEP moves the experts' tokens between nodes with NVSHMEM over RDMA, and these pods get no RDMA device "
        "(node.rdmaResource, node.efa), secondary network (node.networks) or host network: give them one, or "
        "use allToAll default"
    )
    return [src.problem(("parallelism", "allToAll"), message, "no-rdma")]


@registry.rule("host-access", scope=PROFILE, severity=WARNING)
def _host_access(profile: Profile, src: Source) -> list[Problem]:
    """Each security.allow* opt-in is said on every render, with what it gives away."""
    return [
        src.problem(("security", key), message, "host-access")
        for key, (attribute, message) in HOST_ACCESS.items()
        if getattr(profile.security, attribute)
    ]


@registry.rule("layer-split", "overridden", scope=PROFILE, severity=WARNING)
def runtime_warnings(profile: Profile, src: Source) -> list[Problem]:
    """What the runtime says of a valid profile (its contract's warnings): how it reads a field, or a
    setting its own options override."""
    return [src.place(finding) for finding in runtimes.get(profile.runtime).warnings(profile)]


@registry.rule("does-not-fit", scope=PROFILE, severity=WARNING)
def model_fits(profile: Profile, src: Source) -> list[Problem]:
    """The model (model.family or model.params) is unlikely to fit the group's GPU memory at this layout."""
    too_small = sizing.fits_profile(profile)
    if not too_small:
        return []
    field = ("model", "family") if profile.model.family else ("model", "params")
    return [src.problem(field, too_small, "does-not-fit")]


@registry.rule("exposed", scope=PROFILE, severity=WARNING)
def load_balancer_exposed(profile: Profile, src: Source) -> list[Problem]:
    """A LoadBalancer Service with no source ranges serves the model to any address that reaches it."""
    service = profile.service
    if service.type != "LoadBalancer" or service.load_balancer_source_ranges or service.allowed_sources:
        return []
    message = (
        "a LoadBalancer with no service.loadBalancerSourceRanges or service.allowedSources serves the "
        "model to any address that reaches the load balancer; set either, or service.type ClusterIP"
        + ("" if service.api_key_secret else ", and service.apiKeySecret")
    )
    return [src.problem(("service", "type"), message, "exposed")]


@registry.rule("not-emitted", scope=PROFILE, severity=WARNING)
def metrics_exported(profile: Profile, src: Source) -> list[Problem]:
    """monitoring.enabled for an engine version that exports no Prometheus metrics: no PodMonitor is
    emitted (the group's GPU utilisation is still recorded from DCGM)."""
    if not profile.monitoring.enabled or runtimes.capabilities(profile).metrics:
        return []
    version, later = runtimes.engine_version(profile), ""
    table = version.engine
    if any(row.feature == "prometheus-metrics" for row in table.table):
        first = table.spell(table.since("prometheus-metrics").version)
        later = f" ({table.title} {first} and newer serve them; this profile runs {table.spell(version.text)})"
    message = (
        f"{profile.runtime} exposes no Prometheus metrics{later}, so no PodMonitor is emitted; "
        "the group GPU utilisation is still recorded from DCGM"
    )
    return [src.problem(("monitoring", "enabled"), message, "not-emitted")]


def warnings(profile: Profile, src: Source) -> list[Problem]:
    """What is valid but emitted differently than asked, costly, or unlikely to fit, said out loud: every
    registered profile rule's warnings; the codes in NOTICES are said as notices."""
    out = registry.run(PROFILE, WARNING, profile, src)
    return [problem._replace(severity=NOTICE if problem.code in NOTICES else WARNING) for problem in out]
