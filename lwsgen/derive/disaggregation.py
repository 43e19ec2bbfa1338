"""A profile with roles: one DisaggregatedSet whose roles carry the LeaderWorkerSet templates lwsgen
builds for a profile (each role's own context: its parallelism, node, engine flags for KV transfer),
the objects each role needs on its own (launch scripts, NetworkPolicy, monitors, rules, autoscaler,
NCCL preflight), and what fronts the set: the SGLang router, or gateway.enabled's endpoint picker.

The controller names each role's LeaderWorkerSet <set>-<slice>-<revision>-<role> and labels it and
both pod templates with the set, role, slice and revision (naming.SET_NAME_LABEL ...): every
selector here is by set and role, never by a LeaderWorkerSet name, so it holds across slices and
through a rolling update (kubernetes-sigs/lws v0.10.0 pkg/utils/disaggregatedset/utils.go)."""

from lwsgen import naming, platforms, runtimes
from lwsgen.derive import delivery, pods, workload
from lwsgen.derive.context import Context, Workload, role_of_llmisvc, role_of_set
from lwsgen.derive.gateway import Workload as Deployment
from lwsgen.derive.model import EnvVar, Probe, Resources
from lwsgen.derive.monitoring import PodMonitor
from lwsgen.derive.network import Ingress, NetworkPolicy, proxy_namespaces
from lwsgen.derive.scheduling import placement
from lwsgen.derive.workload import routes_with_router
from lwsgen.profile import Profile
from lwsgen.records import Record
from lwsgen.runtimes.base import KvTransfer, Port
from lwsgen.runtimes.sglang import ROUTER_METRICS_PORT, ROUTER_PORT

API_VERSION = "disaggregatedset.x-k8s.io/v1"


def _on_kserve(kv: KvTransfer, role: str, profile: Profile) -> KvTransfer:
    """A role of an LLMInferenceService: prefill serves on the port KServe's pool targets; decode
    behind a routing sidecar there, KServe's where its data-parallel preset adds one, lwsgen's where
    the preset is the empty one lwsgen writes (platforms.PD_PIPELINE_PRESETS)."""
    if role != "decode":
        return kv._replace(engine_port=platforms.LLMISVC_PORT, sidecar_port=None)
    return kv._replace(
        engine_port=platforms.LLMISVC_DECODE_ENGINE_PORT,
        sidecar_port=platforms.LLMISVC_PORT,
        sidecar_by_platform=platforms.data_parallel_preset(profile),
    )


def role_context(top: Profile, role: str) -> Context:
    """The context every per-role builder gets: the role's profile with its KV-transfer flags."""
    profile = top.roles[role]
    plugin = runtimes.get(profile.runtime)
    kv = plugin.kv_transfer(profile, role, tuple(top.roles))
    kserve = top.platform == platforms.KSERVE
    if kserve:
        kv = _on_kserve(kv, role, profile)
    profile = profile._replace(model=profile.model._replace(extra_args=(*profile.model.extra_args, *kv.args)))
    engine = platforms.engine_profile(profile)  # its model where KServe delivers it
    parts = plugin.parts(engine, serving_port=kv.engine_port) if kv.engine_port else plugin.parts(engine)
    leader = parts.leader._replace(env=(*parts.leader.env, *kv.env), ports=(*parts.leader.ports, *kv.leader_ports))
    worker = parts.worker._replace(env=(*parts.worker.env, *kv.env))
    parts = parts._replace(leader=leader, worker=worker, scripts={**parts.scripts, **delivery.scripts(profile)})
    return Context(
        profile,
        plugin,
        runtimes.capabilities(profile),
        parts,
        naming.object_names(profile.name),
        placement(profile),
        role_of_llmisvc(top.name, role) if kserve else role_of_set(top.name, role),
        kv=kv,
    )


def set_context(top: Profile) -> Context:
    """The context of what the set shares (the DisaggregatedSet, the model claim and download, the
    router or pool): the first role's, named as the profile, selecting every role's pods."""
    roles = {role: role_context(top, role) for role in top.roles}
    first = next(iter(roles.values()))
    profile = first.profile._replace(name=top.name)
    if top.platform == platforms.KSERVE:  # the pods of both LeaderWorkerSets KServe makes
        pods = {k: v for k, v in platforms.llmisvc_workload_labels(top.name).items() if k != "kserve.io/component"}
        leaders = platforms.llmisvc_workload_labels(top.name)
        made = ("serving.kserve.io/v1alpha2", "LLMInferenceService", top.name)
        every = Workload(pods, leaders, pods, (), made, service=top.name)
    else:
        pods = naming.set_pods(top.name)
        made = (API_VERSION, "DisaggregatedSet", top.name)
        every = Workload(pods, naming.set_leaders(top.name), pods, (), made, top.name)
    shared = first._replace(profile=profile, names=naming.object_names(top.name), workload=every)
    if top.model.source is not None:  # every role's pods wait for the one download Job the set emits
        job = delivery.job_name(shared)
        roles = {role: c._replace(model_job=job) for role, c in roles.items()}
    return shared._replace(roles=roles)


class Role(Record):
    name: str
    scaling: str | None  # External: an autoscaler owns its replicas, through its DisaggregatedSetRoleScaler
    lws: workload.LeaderWorkerSet  # its metadata's labels and annotations, and its spec


class DisaggregatedSet(Record):
    meta: workload.Meta
    slices: int
    placement_type: str | None  # None: the controller's default (None)
    topology: str | None
    roles: tuple[Role, ...]


def disaggregatedset(ctx: Context, kind) -> DisaggregatedSet | None:
    if ctx.roles is None or ctx.profile.platform != platforms.LWS:  # KServe's roles: derive/kserve.py
        return None
    roles = tuple(
        Role(role, "External" if c.profile.autoscaling.enabled else None, workload.leaderworkerset(c, kind))
        for role, c in ctx.roles.items()
    )
    d = ctx.profile.disaggregation
    kept = d.placement.type != "None"
    return DisaggregatedSet(
        ctx.meta(kind, ctx.profile.name),
        d.slices,
        d.placement.type if kept else None,
        d.placement.topology_key if kept else None,
        roles,
    )


# The SGLang router in prefill/decode mode, finding each role's leaders by their labels through the
# Kubernetes API (sglang-router 0.3.2, PyPI: sglang_router/router_args.py; service discovery with
# prefill/decode selectors since 0.1.5, PRs #5865 and #7361). Each selector is nargs="+" key=value,
# all must match (sgl-model-gateway/src/service_discovery.rs); a pod joins once Ready and Running;
# its URL is http://<pod IP>:--service-discovery-port (default 80: set to the engines' port); a
# prefill pod's bootstrap port is read from the annotation sglang.ai/bootstrap-port (fixed name,
# router_args.py line 925). RBAC: get/list/watch pods in the namespace.
ROUTER_COMMAND = ("python3", "-m", "sglang_router.launch_router")
# /liveness answers while the process runs; /readiness in PD mode once a prefill and a decode worker
# are healthy (sgl-model-gateway src/server.rs, src/health.rs recompute_with).
LIVENESS_PATH, READINESS_PATH = "/liveness", "/readiness"


class Router(Record):
    """The router's objects, one file: identity and RBAC, Deployment, NetworkPolicy, PodMonitor."""

    account: workload.Named
    role: workload.Rules
    binding: workload.Binding
    deployment: object  # derive/gateway.Workload: a Deployment
    policy: object | None
    monitor: object | None


def _selector_args(flag: str, selector: dict[str, str]) -> tuple[str, ...]:
    return (flag, *(f"{key}={value}" for key, value in selector.items()))


def router_args(ctx: Context) -> tuple[str, ...]:
    """Each role's leaders by set, role and worker index 0 (only node rank 0 serves), in this
    namespace (the NAMESPACE variable, so a kustomize namespace overlay moves it), on the port
    every role serves."""
    name, serving = ctx.profile.name, next(iter(ctx.roles.values())).parts.leader.ports[0].number
    args = (
        "--pd-disaggregation",
        "--service-discovery",
        *_selector_args("--prefill-selector", naming.role_leaders(name, "prefill")),
        *_selector_args("--decode-selector", naming.role_leaders(name, "decode")),
        "--service-discovery-namespace",
        "$(NAMESPACE)",
        "--service-discovery-port",
        str(serving),
        "--host",
        "0.0.0.0",
        "--port",
        str(ROUTER_PORT),
    )
    if ctx.profile.monitoring.enabled:
        args += ("--prometheus-host", "0.0.0.0", "--prometheus-port", str(ROUTER_METRICS_PORT))
    return args


def _router_pod(ctx: Context, labels: dict[str, str]):
    router = ctx.profile.disaggregation.router
    ports = (
        Port("http", ROUTER_PORT),
        *((Port("metrics", ROUTER_METRICS_PORT),) if ctx.profile.monitoring.enabled else ()),
    )
    container = pods.container(
        "router",
        router.image,
        ROUTER_COMMAND,
        args=router_args(ctx),
        env=(EnvVar("NAMESPACE", field_path="metadata.namespace"),),
        ports=ports,
        resources=Resources({"cpu": str(router.cpu), "memory": str(router.memory)}, {"memory": str(router.memory)}),
        security=pods.helper_security(),
    )._replace(
        liveness_probe=Probe(LIVENESS_PATH, "http", 10, 1, 3), readiness_probe=Probe(READINESS_PATH, "http", 5, 1, 3)
    )
    pod = pods.pod(
        ctx.profile,
        ctx.placement,
        labels=labels,
        containers=(container,),
        volumes=(),
        on_gpu_node=False,
        service_account=f"{ctx.profile.name}-router",
    )
    return pod


def router(ctx: Context, kind) -> Router | None:
    if not routes_with_router(ctx):
        return None

    profile, name = ctx.profile, f"{ctx.profile.name}-router"
    selector = naming.router_pods(profile.name)
    meta = ctx.meta(kind, name)
    read = workload.RoleRule(("",), ("pods",), ("get", "list", "watch"))
    replicas = profile.disaggregation.router.replicas
    policy = None
    if profile.security.network_policy:  # requests from the Service's sources, metrics from monitoring
        service = profile.service
        # behind a Gateway an internal Service is reached through it only (as a LeaderWorkerSet's, network.py)
        fronted = profile.gateway.enabled and service.type == "ClusterIP"
        rules = []
        if not fronted or service.allowed_sources or service.allowed_namespaces:
            rules.append(Ingress(service.allowed_sources, service.allowed_namespaces, ports=("http",)))
        if profile.monitoring.enabled:
            rules.append(Ingress(namespaces=(profile.monitoring.namespace,), ports=("metrics",)))
        if profile.gateway.enabled:
            rules.append(Ingress(profile.gateway.proxy_cidrs, proxy_namespaces(ctx), ports=("http",)))
        policy = NetworkPolicy(meta, selector, tuple(rules))
    monitor = None
    if profile.monitoring.enabled:
        labels = profile.monitoring.prometheus_labels
        monitor = PodMonitor(
            ctx.meta(kind, name, labels=labels), selector, "metrics", "/metrics", profile.monitoring.interval, None
        )
    return Router(
        workload.Named(meta),
        workload.Rules(meta, (read,)),
        workload.Binding(meta, name, name),
        Deployment(meta, replicas, selector, _router_pod(ctx, {**meta.labels, **selector})),
        policy,
        monitor,
    )
