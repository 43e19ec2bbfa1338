"""The LeaderWorkerSet and what its pods need: the leader Service, the launch scripts ConfigMap and
the leader's ServiceAccount, Role and RoleBinding. Leader and worker pods differ only where the
runtime says (command, ports, tools) and in the leader's probes."""

from lwsgen import naming, platforms, runtimes
from lwsgen.derive import delivery, hatches, pods
from lwsgen.derive.context import Context
from lwsgen.derive.model import EmptyDir, EnvVar, Meta, Mount, Pod, Resources, Volume
from lwsgen.records import Record
from lwsgen.runtimes.base import TOOLS_MOUNT, Port, Role, RoleRule
from lwsgen.runtimes.sglang import ROUTER_PORT

TOOLS_VOLUME, CACHE_VOLUME = "tools", "engine-cache"


class LeaderWorkerSet(Record):
    meta: Meta
    replicas: int | None
    startup_policy: str
    max_unavailable: int | str | None
    max_surge: int | str | None
    partition: int | None
    size: int
    restart_policy: str
    leader: Pod
    worker: Pod


class ServicePort(Record):
    name: str
    number: int
    target: str | int  # a named container port of the leader (or its number)
    protocol: str = "TCP"
    app_protocol: str | None = None


class Service(Record):
    meta: Meta
    type: str
    selector: dict[str, str]
    ports: tuple[ServicePort, ...]
    source_ranges: tuple[str, ...] | None
    external_traffic_policy: str | None = None


class Data(Record):
    """An object that is metadata and a mapping of data (ConfigMap)."""

    meta: Meta
    data: dict[str, str]


class Named(Record):
    meta: Meta


class Rules(Record):
    meta: Meta
    rules: tuple[RoleRule, ...]


class Binding(Record):
    meta: Meta
    role: str
    account: str


def _env(ctx: Context, side: str, role: Role) -> tuple[EnvVar, ...]:
    profile = ctx.profile
    env = list(role.env)
    if not profile.lws.supports("LWS_WORKER_INDEX"):
        # LeaderWorkerSet < 0.6 does not inject it; commands use $(LWS_WORKER_INDEX), so derive it from the label.
        env.append(EnvVar("LWS_WORKER_INDEX", field_path=f"metadata.labels['{naming.WORKER_INDEX_LABEL}']"))
    secret = profile.model.token_secret
    if secret is not None and profile.model.source is None:  # a downloaded model is read from the claim
        env.append(EnvVar("HF_TOKEN", secret_name=secret.name, secret_key=secret.key))
    if side == "leader":
        env += _api_key_env(ctx)
    own = hatches.env(profile, side)
    shared = tuple(e for e in pods.profile_env(profile) if e.name not in {o.name for o in own})
    return (*env, *shared, *own)


def _api_key_env(ctx: Context) -> list[EnvVar]:
    """The serving API key from its Secret: in the variable the server reads, or for the launch
    script to append as a flag when it execs the server."""
    secret, caps = ctx.profile.service.api_key_secret, ctx.caps
    if secret is None:
        return []
    if caps.api_key_env:
        return [EnvVar(caps.api_key_env, secret_name=secret.name, secret_key=secret.key)]
    return [
        EnvVar("LWSGEN_API_KEY", secret_name=secret.name, secret_key=secret.key),
        EnvVar("LWSGEN_API_KEY_FLAG", value=caps.api_key_flag),
    ]


def _volumes(ctx: Context, role: Role) -> tuple[tuple[Volume, ...], tuple[Mount, ...]]:
    shm_volume, shm_mount = pods.shm(ctx.profile)
    model_volumes, model_mounts = pods.model_storage(ctx.profile) if role.reads_model else ((), ())
    volumes, mounts = [shm_volume, *model_volumes], [shm_mount, *model_mounts]
    local = delivery.local_cache_volume(ctx) if role.reads_model else None
    if local is not None:
        volumes.append(local[0])
        mounts.append(local[1]._replace(read_only=True))
    if ctx.parts.scripts:
        volume, mount = pods.launch_scripts(ctx.names.launch)
        volumes.append(volume)
        mounts.append(mount)
    if role.tool_installers:
        volumes.append(Volume(TOOLS_VOLUME, empty_dir=EmptyDir()))
        mounts.append(Mount(TOOLS_VOLUME, TOOLS_MOUNT, True))
    if role.cache_dir:
        volumes.append(Volume(CACHE_VOLUME, empty_dir=EmptyDir()))
        mounts.append(Mount(CACHE_VOLUME, role.cache_dir))
    return tuple(volumes), tuple(mounts)


def _declared_version(profile) -> dict[str, str]:
    """runtimeVersion, with the image it speaks for, recorded on the pods: the flags were written for
    it, and `lwsgen validate` reads it there while the pods run that image (output/podneeds.py)."""
    version = runtimes.engine_version(profile)
    if version.origin != "runtimeVersion":
        return {}
    spelled = version.engine.spell(version.text)  # as the engine names its releases: b6688, 0.11.1
    return {naming.RUNTIME_VERSION_ANNOTATION: spelled, naming.RUNTIME_VERSION_IMAGE_ANNOTATION: profile.image}


def role_pod(ctx: Context, side: str, role: Role) -> Pod:
    """The leader or worker pod template of the LeaderWorkerSet."""
    profile, parts = ctx.profile, ctx.parts
    volumes, mounts = _volumes(ctx, role)
    probes = None
    if side == "leader":
        probes = pods.probes(profile, parts.probes)
    main = pods.container(
        side,
        profile.image,
        role.command,
        args=(*role.args, *hatches.args(profile, side)),
        env=_env(ctx, side, role),
        ports=role.ports,
        resources=hatches.resources(profile, side),
        mounts=mounts,
        probes=probes,
        security=pods.container_security(profile),
    )._replace(extra_mounts=hatches.mounts(profile, side))
    tools = tuple(
        pods.helper_container(name, image, command, (Mount(TOOLS_VOLUME, TOOLS_MOUNT),))
        for name, image, command in role.tool_installers
    )
    if role.reads_model and profile.storage is not None:
        tools += delivery.before_engine(ctx, profile.image, pods.model_storage(profile)[1][0])
    annotations = {
        **ctx.placement.pod_annotations,
        **({naming.SCRIPTS_HASH_ANNOTATION: ctx.scripts_hash} if parts.scripts else {}),
        **_declared_version(profile),
    }
    labels = naming.labels(profile.name, profile.runtime, side, profile.labels)
    if ctx.kv is not None:  # a role of a set: what its router finds it by, and the routing sidecar
        labels, annotations = {**labels, **ctx.kv.labels}, {**annotations, **ctx.kv.annotations}
        if side == "leader" and ctx.kv.sidecar_port is not None and not ctx.kv.sidecar_by_platform:
            tools += (routing_sidecar(ctx),)
    pod = pods.pod(
        profile,
        ctx.placement,
        labels=labels,
        annotations=annotations,
        containers=(main,),
        volumes=volumes,
        init_containers=tools,
        service_account=ctx.names.launcher if role.api_access else None,
        extras=hatches.extras(profile, side),
    )
    if side == "leader" and ctx.kv is not None and ctx.kv.sidecar_by_platform:
        # the platform's sidecar reads the API with the account the platform gives the pod (KServe's
        # <name>-kserve-mn and its Role: workload_multi_node.go#L202-L206, #L446-L480): its token mounted
        pod = pod._replace(automount_token=True)
    return pod


def leaderworkerset(ctx: Context, kind) -> LeaderWorkerSet | None:
    if ctx.roles is not None:  # a set of roles: each role's LeaderWorkerSet is in the DisaggregatedSet
        return None
    if ctx.profile.platform != platforms.LWS:  # KServe makes it (derive/kserve.py)
        return None
    profile, lws = ctx.profile, ctx.profile.lws
    meta = ctx.meta(kind, profile.name, labels=ctx.placement.lws_labels, annotations=ctx.placement.lws_annotations)
    return LeaderWorkerSet(
        meta,
        profile.fixed_replicas,
        lws.startup_policy,
        lws.max_unavailable,
        lws.max_surge,
        lws.partition,
        profile.group_size,
        lws.restart_policy,
        role_pod(ctx, "leader", ctx.parts.leader),
        role_pod(ctx, "worker", ctx.parts.worker),
    )


def service(ctx: Context, kind) -> Service | None:
    if ctx.roles is not None:  # a set of roles: the Service is its router's
        return router_service(ctx, kind)
    if ctx.profile.platform != platforms.LWS:  # KServe makes its Services
        return None
    spec = ctx.profile.service
    ports = {p.name: p for p in ctx.parts.leader.ports}
    serving = tuple(
        ServicePort(
            name, spec.port if spec.port and i == 0 else ports[name].number, name, "TCP", ports[name].app_protocol
        )
        for i, name in enumerate(ctx.parts.service_ports)
    )
    extra = tuple(
        ServicePort(p.name, p.port, p.name if p.target_port is None else p.target_port, p.protocol)
        for p in spec.extra_ports
    )
    return Service(
        ctx.meta(kind, ctx.names.service, annotations=spec.annotations),
        spec.type,
        ctx.workload.leaders,
        (*serving, *extra),
        spec.load_balancer_source_ranges or None,
        spec.external_traffic_policy,
    )


def launch_scripts(ctx: Context, kind) -> Data | None:
    scripts = ctx.parts.scripts
    return Data(ctx.meta(kind, ctx.names.launch), dict(sorted(scripts.items()))) if scripts else None


def service_account(ctx: Context, kind) -> Named | None:
    return Named(ctx.meta(kind, ctx.names.launcher)) if ctx.api_access else None


def role(ctx: Context, kind) -> Rules | None:
    return Rules(ctx.meta(kind, ctx.names.launcher), ctx.parts.role_rules) if ctx.api_access else None


def role_binding(ctx: Context, kind) -> Binding | None:
    names = ctx.names
    return Binding(ctx.meta(kind, names.launcher), names.launcher, names.launcher) if ctx.api_access else None


ROUTER_SERVICE = "router-service"  # the component label of the Service in front of the router


def routes_with_router(ctx: Context) -> bool:
    return ctx.roles is not None and ctx.kv.router == "sglang-router"


def router_service(ctx: Context, kind) -> Service | None:
    """The profile's Service, in front of the router: its type, port and sources."""
    if not routes_with_router(ctx):
        return None
    spec = ctx.profile.service
    port = ServicePort("http", spec.port or ROUTER_PORT, "http")
    return Service(
        ctx.meta(kind._replace(component=ROUTER_SERVICE), f"{ctx.profile.name}-router", annotations=spec.annotations),
        spec.type,
        naming.router_pods(ctx.profile.name),
        (port,),
        spec.load_balancer_source_ranges or None,
        spec.external_traffic_policy,
    )


def routing_sidecar(ctx: Context):
    """llm-d's routing sidecar on a decode leader, a native sidecar (an init container that keeps
    running): it takes the pool's port, sends each request's prefill to the prefill pod the picker
    chose (and, with an encode role, each multimodal item on the encoders first: --ec-connector), then the
    request to the decode engine beside it, and passes other paths (/metrics) to the engine; it answers
    GET /health itself (pkg/sidecar/proxy/proxy.go@v0.10.0 lines 624-635), so the probes go to the
    engine's port."""
    kv = ctx.kv
    # pkg/sidecar/proxy/options.go@v0.10.0: --kv-connector defaults to nixlv2; --secure-proxy (default
    # true) would serve TLS with a self-signed certificate, which the Gateway's plain HTTP does not speak
    args = (
        f"--port={kv.sidecar_port}",
        f"--model-server-port={kv.engine_port}",
        "--kv-connector=nixlv2",
        "--secure-proxy=false",
        *kv.sidecar_args,
    )
    return pods.container(
        "routing-sidecar",
        ctx.profile.disaggregation.sidecar_image,
        (),
        args=args,
        ports=(Port("routing", kv.sidecar_port),),
        resources=Resources({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        security=pods.helper_security(),
    )._replace(command=None, restart_policy="Always")
