"""gateway.enabled: the Gateway API Inference Extension front door. An InferencePool of the pods
that serve (the leaders: every runtime lwsgen launches serves a group through its leader, data
parallel ranks included), llm-d-router's endpoint picker (EPP) that picks one of them per request,
and an HTTPRoute from the user's Gateway to the pool.

The EPP's flags, ports, probes, RBAC and config follow llm-d-router v0.10.0: pkg/epp/server/
options.go (flags and their defaults), config/charts/routerlib/templates/ (_deployment.yaml,
_config.yaml, _rbac.yaml, _service.yaml, _leader-election-rbac.yaml) and apix/config/v1alpha1/
endpointpickerconfig_types.go (the config, decoded strictly). Where lwsgen differs from the chart,
the docstring of the function says why.
"""

import hashlib
import json

from lwsgen import naming, platforms
from lwsgen.derive import pods
from lwsgen.derive.context import Context
from lwsgen.derive.model import EmptyDir as EmptyDirSource
from lwsgen.derive.model import EnvVar, Meta, Mount, Pod, Probe, Resources, Volume
from lwsgen.derive.monitoring import PodMonitor
from lwsgen.derive.network import Ingress, NetworkPolicy, metrics_port, proxy_namespaces, serving_port
from lwsgen.derive.workload import Binding, Named, Rules, Service, ServicePort
from lwsgen.records import Record, canonical
from lwsgen.runtimes.base import Port, RoleRule, RouterMetrics
from lwsgen.runtimes.sglang import ROUTER_PORT

POOL_GROUP = "inference.networking.k8s.io"  # InferencePool v1 (../shared/crds, v1.6.0)
GATEWAY_GROUP = "gateway.networking.k8s.io"
# options.go@v0.10.0 defaults: ext-proc gRPC 9002, gRPC health 9003, metrics 9090.
GRPC_PORT, HEALTH_PORT, METRICS_PORT = 9002, 9003, 9090
CONFIG_DIR, CONFIG_FILE = "/config", "endpoint-picker.yaml"
CONFIG_API = "llm-d.ai/v1alpha1"  # inference.networking.x-k8s.io/v1alpha1 is deprecated (configloader.go@v0.10.0)
ENGINE_LABEL = "llm-d.ai/engine-type"
SCORERS = (  # profile field, EPP plugin type (scorer/*/ @v0.10.0)
    ("queue", "queue-scorer"),
    ("kv_cache", "kv-cache-utilization-scorer"),
    ("prefix_cache", "prefix-cache-scorer"),
)
# Changes with the config's values, so the picker restarts with a new one (it reads it once, at start).
CONFIG_HASH_ANNOTATION = "lwsgen/endpoint-picker-config-sha256"
EPP_USER = 65532
# The chart's grace period (_deployment.yaml@v0.10.0: "mirror the longest grace period of the pods
# within the pool"): the Gateway's ext-proc streams through the picker last as long as a request.
GRACE_SECONDS = 130  # Dockerfile.epp@v0.10.0: USER 65532:65532


class ParentRef(Record):
    name: str
    namespace: str | None
    section: str | None


class InferencePool(Record):
    meta: Meta
    selector: dict[str, str]
    target_ports: tuple[int, ...]
    picker: str  # the EPP Service
    picker_port: int
    failure_mode: str


class HTTPRoute(Record):
    meta: Meta
    parents: tuple[ParentRef, ...]
    hostnames: tuple[str, ...] | None
    path_type: str
    path: str
    backend: "Backend"
    timeout: str


class Backend(Record):
    """What the route sends to: the InferencePool, or a Service (by port)."""

    group: str
    kind: str
    name: str
    port: int | None


class Workload(Record):
    """A Deployment: its metadata, replicas, the labels it selects and its pod."""

    meta: Meta
    replicas: int
    selector: dict[str, str]
    pod: Pod


class Scorer(Record):
    plugin: str
    weight: float


class PickerConfig(Record):
    """The values of the EPP's EndpointPickerConfig (templates/endpoint-picker.yaml.j2 writes it)."""

    api_version: str
    scorers: tuple[Scorer, ...]
    metrics_path: str
    metrics_port: int | None  # None: the pool's target port
    engine_label: str
    engine: str
    metrics: RouterMetrics  # the engine entry's series
    parser: str | None  # a request parser in place of the picker's defaults
    # Flow control on (a scale-to-zero pool): requests wait in the picker at most this long while no
    # group runs (pkg/epp/flowcontrol/README.md: "the queue acts as a scale-from-zero waiting room").
    flow_control_ttl: str | None = None
    disaggregated: "Disaggregated | None" = None  # a set of prefill and decode roles

    @property
    def single(self) -> bool | None:
        """One scheduling profile (the chart's default), or None: a prefill and a decode one."""
        return True if self.disaggregated is None else None

    @property
    def experimental(self) -> bool:
        """An Alpha plugin is configured (the rollout screener)."""
        return self.disaggregated is not None and self.disaggregated.screener is not None

    @property
    def role_profiles(self) -> tuple["SchedulingProfile", ...]:
        return () if self.disaggregated is None else self.disaggregated.profiles


class SchedulingProfile(Record):
    name: str
    filter: str | None  # the role filter of a prefill or decode profile


class RolloutScreener(Record):
    """disaggregatedset-rollout-screener (llm-d-router v0.10.0, pkg/epp/framework/plugins/requestcontrol/
    screener/disaggregatedsetrollout/README.md). The DisaggregatedSet controller gives every role a new
    revision when any role's template changes (lws v0.10.0 pkg/utils/disaggregatedset/utils.go
    ComputeRevision), and the two revisions serve side by side while it rolls. Before every scheduling
    profile the screener keeps one revision whose every role has a Ready pod, chosen weighted by its
    Ready pods ("sum": each role's progress counts), so a request never pairs a prefill of one revision
    with a decode of another, whose KV layout or transfer protocol may differ. A client may pin a
    revision with the strict header; each response names the revision that served it. Alpha in
    v0.10.0: the picker runs with --allow-experimental-plugins (plugin/registry.go line 114)."""

    scope: str  # label selector of the set's leaders
    require_roles: tuple[str, ...]
    gating: str = "sum"
    revision_header: str = "x-disagg-revision"
    revision_label: str = naming.REVISION_LABEL


class Disaggregated(Record):
    """The picker's prefill/decode scheduling (llm-d-router v0.10.0 deploy/config/pd-epp-config.yaml;
    pkg/epp/framework/plugins/scheduling/profilehandler/disagg/README.md): the prefill-filter and
    decode-filter pick pods by llm-d.ai/role (filter/bylabel/roles.go), disagg-profile-handler runs
    the prefill profile when prefix-based-pd-decider finds at least non_cached_tokens of the prompt
    uncached on the chosen decode pod, which approx-prefix-cache-producer's match info tells it."""

    non_cached_tokens: int = 16
    profiles: tuple[SchedulingProfile, ...] = (
        SchedulingProfile("prefill", "prefill-filter"),
        SchedulingProfile("decode", "decode-filter"),
    )
    # With an encode role (deploy/config/sim-e-p-d-epp-config.yaml@v0.10.0): the encode profile and the
    # decider that runs it for requests with image, audio or video parts (always_disagg_mm_decider.go).
    encode_decider: str | None = None
    screener: RolloutScreener | None = None


ENCODE_PROFILE = SchedulingProfile("encode", "encode-filter")


def disaggregated(ctx: Context) -> Disaggregated | None:
    if ctx.roles is None:
        return None
    base = Disaggregated()
    if "encode" in ctx.roles:
        base = base._replace(
            profiles=(ENCODE_PROFILE, *base.profiles), encode_decider="always-disagg-multimodal-decider"
        )
    # Every role is required, encode too: a revision without encoders would fail its multimodal requests.
    # Leaders only: a group serves once its leader is Ready, and the weights count groups, not pods.
    scope = ",".join(f"{k}={v}" for k, v in naming.set_leaders(ctx.profile.name).items())
    screener = RolloutScreener(scope, tuple(p.name for p in base.profiles))
    return base._replace(screener=screener)


EXPERIMENTAL_FLAG = "--allow-experimental-plugins"


class EndpointPicker(Record):
    """Every object of the endpoint picker, one file: identity and RBAC, config, Deployment, Service,
    and (when the profile has them on) its NetworkPolicy and PodMonitor."""

    account: Named
    role: Rules
    binding: Binding
    config_meta: Meta
    config_file: str
    config: PickerConfig
    deployment: Workload
    service: Service
    policy: NetworkPolicy | None
    monitor: PodMonitor | None


def enabled(ctx: Context) -> bool:
    """lwsgen's own gateway objects; on KServe its router makes them (derive/kserve.py)."""
    return ctx.profile.gateway.enabled and ctx.profile.platform == platforms.LWS


def picks(ctx: Context) -> bool:
    """The endpoint picker routes to these pods (gateway.enabled, unless the SGLang router fronts a set)."""
    return enabled(ctx) and not (ctx.kv is not None and ctx.kv.router == "sglang-router")


def inferencepool(ctx: Context, kind) -> InferencePool | None:
    if not picks(ctx):
        return None
    profile = ctx.profile
    return InferencePool(
        ctx.meta(kind, profile.name),
        ctx.workload.leaders,
        (serving_port(ctx).number,),
        ctx.names.epp,
        GRPC_PORT,
        profile.gateway.failure_mode,
    )


def httproute(ctx: Context, kind) -> HTTPRoute | None:
    if not enabled(ctx):
        return None
    profile, gateway = ctx.profile, ctx.profile.gateway
    parents = tuple(ParentRef(r["name"], r.get("namespace"), r.get("sectionName")) for r in gateway.parent_refs)
    if picks(ctx):
        backend = Backend(POOL_GROUP, "InferencePool", profile.name, None)
    else:  # the SGLang router in front of a set of roles
        backend = Backend("", "Service", f"{profile.name}-router", profile.service.port or ROUTER_PORT)
    return HTTPRoute(
        ctx.meta(kind, profile.name),
        parents,
        gateway.hostnames or None,
        gateway.path.type,
        gateway.path.value,
        backend,
        gateway.request_timeout,
    )


def picker_config(ctx: Context) -> PickerConfig:
    """EndpointPickerConfig: the chart's default-plugins.yaml, written out whole (picker, profile
    handler and data layer too, rather than left to the EPP's system defaults) with the profile's
    scorer weights, and an engine entry of the core-metrics-extractor named after the runtime with the
    plugin's own metric names for this engine version (not the EPP's built-in table, vLLM's unless
    told), its metrics path, and its metrics port where it is not the serving port (Triton)."""
    port = metrics_port(ctx)
    metrics = ctx.caps.router_metrics
    return PickerConfig(
        CONFIG_API,
        scorers(ctx),
        ctx.caps.metrics_path,
        None if port == serving_port(ctx).number else port,
        ENGINE_LABEL,
        ctx.profile.runtime,
        metrics,
        metrics.parser,
        ctx.profile.gateway.request_timeout if ctx.profile.autoscaling.to_zero else None,
        disaggregated(ctx),
    )


def scorers(ctx: Context) -> tuple[Scorer, ...]:
    """The profile's weights, without a scorer the engine gives nothing to: the KV-cache scorer where
    it exports no KV-cache fraction (llama.cpp), the prefix scorer where the picker cannot read the
    prompt (a passthrough parser: Triton)."""
    weights, metrics = ctx.profile.gateway.endpoint_picker.scorers, ctx.caps.router_metrics
    blind = {"kv_cache": not metrics.kv_usage, "prefix_cache": metrics.parser is not None}
    return tuple(
        Scorer(plugin, getattr(weights, field))
        for field, plugin in SCORERS
        if getattr(weights, field) > 0 and not blind.get(field)
    )


def config_digest(config: PickerConfig) -> str:
    return hashlib.sha256(json.dumps(canonical(config), sort_keys=True).encode()).hexdigest()


def _rules(replicas: int) -> tuple[RoleRule, ...]:
    """What the EPP reads: pods and its InferencePool, and the objective and rewrite CRDs where the
    cluster has them (found by discovery, controller_config.go@v0.10.0); leases and events to elect
    a leader when there is more than one replica."""
    read = ("get", "list", "watch")
    rules = [
        RoleRule(("",), ("pods",), read),
        RoleRule((POOL_GROUP,), ("inferencepools",), read),
        RoleRule(
            ("llm-d.ai", "inference.networking.x-k8s.io"), ("inferenceobjectives", "inferencemodelrewrites"), read
        ),
    ]
    if replicas > 1:
        rules.append(
            RoleRule(("coordination.k8s.io",), ("leases",), ("get", "list", "watch", "create", "update", "patch"))
        )
        rules.append(RoleRule(("",), ("events",), ("create", "patch")))
    return tuple(rules)


def _args(ctx: Context, replicas: int, experimental: bool) -> tuple[str, ...]:
    """--pool-namespace is left to the NAMESPACE variable (runner.go@v0.10.0 resolvePoolNamespace),
    so a kustomize namespace overlay moves it too. Metrics without authentication (no cluster-wide
    TokenReview RBAC; the NetworkPolicy admits only the monitoring namespace), pprof and tracing off."""
    args = [
        "--pool-name",
        ctx.profile.name,
        "--pool-group",
        POOL_GROUP,
        "--config-file",
        f"{CONFIG_DIR}/{CONFIG_FILE}",
        f"--grpc-port={GRPC_PORT}",
        f"--grpc-health-port={HEALTH_PORT}",
        f"--metrics-port={METRICS_PORT}",
        "--metrics-endpoint-auth=false",
        "--enable-pprof=false",
        "--tracing=false",
        "--zap-encoder=json",
    ]
    if replicas > 1:
        args.append("--ha-enable-leader-election")
    if experimental:
        args.append(EXPERIMENTAL_FLAG)
    return tuple(args)


def _probes(replicas: int) -> tuple[Probe, Probe]:
    """gRPC health on 9003: service inference-extension, or liveness/readiness under leader election
    (the chart's probes, _deployment.yaml@v0.10.0)."""
    live, ready = ("liveness", "readiness") if replicas > 1 else ("inference-extension",) * 2
    return (
        Probe(None, HEALTH_PORT, 10, 1, 3, grpc_service=live, initial_delay=5),
        Probe(None, HEALTH_PORT, 2, 1, 3, grpc_service=ready),
    )


def _pod(ctx: Context, labels: dict[str, str], config: PickerConfig) -> Pod:
    picker = ctx.profile.gateway.endpoint_picker
    liveness, readiness = _probes(picker.replicas)
    config_volume, config_mount = pods.config_map_volume("config", ctx.names.epp, CONFIG_DIR)
    config_volume = config_volume._replace(config_map=config_volume.config_map._replace(default_mode=0o444))
    tmp = Volume("tmp", empty_dir=EmptyDirSource(None, "64Mi"))
    container = pods.container(
        "epp",
        picker.image,
        (),
        args=_args(ctx, picker.replicas, config.experimental),
        env=(EnvVar("NAMESPACE", field_path="metadata.namespace"), EnvVar("POD_NAME", field_path="metadata.name")),
        ports=(Port("grpc", GRPC_PORT), Port("grpc-health", HEALTH_PORT), Port("metrics", METRICS_PORT)),
        resources=Resources({"cpu": str(picker.cpu), "memory": str(picker.memory)}, {"memory": str(picker.memory)}),
        mounts=(config_mount, Mount("tmp", "/tmp")),
        probes=None,
        security=pods.helper_security()._replace(run_as_user=EPP_USER),
    )._replace(command=None, liveness_probe=liveness, readiness_probe=readiness)
    pod = pods.pod(
        ctx.profile,
        ctx.placement,
        labels=labels,
        containers=(container,),
        volumes=(config_volume, tmp),
        annotations={CONFIG_HASH_ANNOTATION: config_digest(config)},
        on_gpu_node=False,
        service_account=ctx.names.epp,
    )
    security = pod.security._replace(run_as_non_root=True, run_as_user=EPP_USER, run_as_group=EPP_USER)
    return pod._replace(security=security, termination_grace=GRACE_SECONDS)


def _policy(ctx: Context, kind, selector: dict[str, str]) -> NetworkPolicy | None:
    """ext-proc from the Gateway's proxies, metrics from monitoring; nothing else reaches the EPP
    (the kubelet's gRPC probes come from the node)."""
    profile = ctx.profile
    if not profile.security.network_policy:
        return None
    rules = [Ingress(profile.gateway.proxy_cidrs, proxy_namespaces(ctx), ports=(GRPC_PORT,))]
    if profile.monitoring.enabled:
        rules.append(Ingress(namespaces=(profile.monitoring.namespace,), ports=(METRICS_PORT,)))
    return NetworkPolicy(ctx.meta(kind, ctx.names.epp), selector, tuple(rules))


def _monitor(ctx: Context, kind, selector: dict[str, str]) -> PodMonitor | None:
    profile = ctx.profile
    if not profile.monitoring.enabled:
        return None
    return PodMonitor(
        ctx.meta(kind, ctx.names.epp, labels=profile.monitoring.prometheus_labels),
        selector,
        "metrics",
        "/metrics",
        profile.monitoring.interval,
        None,
    )


def endpoint_picker(ctx: Context, kind) -> EndpointPicker | None:
    if not picks(ctx):
        return None
    names, picker = ctx.names, ctx.profile.gateway.endpoint_picker
    selector = naming.endpoint_picker_pods(ctx.profile.name)
    meta = ctx.meta(kind, names.epp)
    config = picker_config(ctx)
    return EndpointPicker(
        Named(meta),
        Rules(meta, _rules(picker.replicas)),
        Binding(meta, names.epp, names.epp),
        meta,
        CONFIG_FILE,
        config,
        Workload(meta, picker.replicas, selector, _pod(ctx, {**meta.labels, **selector}, config)),
        Service(
            meta,
            "ClusterIP",
            selector,
            (
                ServicePort("grpc", GRPC_PORT, "grpc", app_protocol="kubernetes.io/h2c"),
                ServicePort("metrics", METRICS_PORT, "metrics"),
            ),
            None,
        ),
        _policy(ctx, kind, selector),
        _monitor(ctx, kind, selector),
    )
