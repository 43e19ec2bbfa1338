"""The NetworkPolicy of a LeaderWorkerSet: serving ports from the allowed sources, everything between
the pods of this LWS (Ray, NCCL, MPI, SGLang dist-init and llama.cpp RPC use many, often dynamic,
ports; none of them authenticates, so Ray's ports open to the cluster are a remote-code-execution
hole), the metrics port from the monitoring namespace, and no other ingress.

Behind a gateway (gateway.enabled) the serving port is open to the Gateway's proxies and the
endpoint picker (which also reads the metrics port), and to service.allowedSources/Namespaces only
where those are set: no longer from anywhere."""

from lwsgen import platforms
from lwsgen.derive.context import Context
from lwsgen.derive.model import Meta
from lwsgen.naming import endpoint_picker_pods, router_pods
from lwsgen.records import Record
from lwsgen.runtimes.base import Port


class Ingress(Record):
    """One ingress rule: from these peers (none: any source) to these ports (none: every port)."""

    cidrs: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    pods: tuple[dict[str, str], ...] = ()
    ports: tuple[str | int, ...] = ()
    udp_ports: tuple[str | int, ...] = ()


class NetworkPolicy(Record):
    meta: Meta
    pods: dict[str, str]
    ingress: tuple[Ingress, ...]


def networkpolicy(ctx: Context, kind) -> NetworkPolicy | None:
    profile = ctx.profile
    if not profile.security.network_policy:
        return None
    caps, service = ctx.caps, profile.service
    workload = ctx.workload
    rules = [Ingress(pods=(workload.peers, *workload.more_peers))]
    # Behind a gateway an internal Service is reached through the Gateway only; a Service the profile
    # exposes itself (LoadBalancer, NodePort) keeps its sources. A role of a set is reached through
    # its router only (which takes the Service's sources).
    fronted = profile.gateway.enabled and service.type == "ClusterIP"
    if workload.set_name is None and (not fronted or service.allowed_sources or service.allowed_namespaces):
        rules.insert(0, _serving_rule(ctx))
    if ctx.kv is not None and ctx.kv.router == "sglang-router":
        rules.append(Ingress(pods=(router_pods(workload.set_name),), ports=_router_ports(ctx)))
    elif profile.gateway.enabled:
        rules += _gateway_rules(ctx)
    if profile.monitoring.enabled and caps.metrics:
        rules.append(Ingress(namespaces=(profile.monitoring.namespace,), ports=(caps.metrics_port,)))
    return NetworkPolicy(ctx.meta(kind, profile.name), workload.pods, tuple(rules))


def _router_ports(ctx: Context) -> tuple[str, ...]:
    """What the SGLang router reaches on a role's leaders: serving (requests, /health) and, on prefill, bootstrap."""
    return tuple(dict.fromkeys((serving_port(ctx).name, *(p.name for p in ctx.kv.leader_ports))))


def _serving_rule(ctx: Context) -> Ingress:
    """The serving ports and the Service's extra ports, from the allowed sources."""
    service = ctx.profile.service
    extra = [(p.name if p.target_port is None else p.target_port, p.protocol) for p in service.extra_ports]
    tcp = (*ctx.parts.service_ports, *(port for port, protocol in extra if protocol == "TCP"))
    udp = tuple(port for port, protocol in extra if protocol == "UDP")
    return Ingress(service.allowed_sources, service.allowed_namespaces, ports=tcp, udp_ports=udp)


def serving_port(ctx: Context) -> Port:
    """The port the pool targets: the leader's first serving port (the HTTP API), or the port of
    the routing sidecar in front of a decode engine (KvTransfer.sidecar_port)."""
    if ctx.kv is not None and ctx.kv.sidecar_port is not None:
        return Port("routing", ctx.kv.sidecar_port)
    by_name = {p.name: p for p in ctx.parts.leader.ports}
    return by_name[ctx.parts.service_ports[0]]


def metrics_port(ctx: Context) -> int:
    by_name = {p.name: p.number for p in ctx.parts.leader.ports}
    return by_name[ctx.caps.metrics_port]


def proxy_namespaces(ctx: Context) -> tuple[str, ...]:
    """Where the Gateway's proxies run: gateway.proxyNamespaces, else the namespaces of parentRefs."""
    gateway = ctx.profile.gateway
    if gateway.proxy_namespaces:
        return gateway.proxy_namespaces
    if not gateway.parent_refs and ctx.profile.platform == platforms.KSERVE:  # KServe's default Gateway's
        return (platforms.LLMISVC_DEFAULT_GATEWAY[0],)
    return tuple(dict.fromkeys(ref.get("namespace") or ctx.profile.namespace for ref in gateway.parent_refs))


def _gateway_rules(ctx: Context) -> list[Ingress]:
    port = serving_port(ctx)
    # a sidecar the platform adds is no port of lwsgen's pod, by name: its number
    serving = port.number if ctx.kv is not None and ctx.kv.sidecar_by_platform else port.name
    picker_ports = tuple(dict.fromkeys((serving, ctx.caps.metrics_port)))
    if ctx.profile.platform == platforms.KSERVE:  # KServe's own picker (router.scheduler), the service's
        picker = platforms.llmisvc_scheduler_labels(ctx.workload.service or ctx.profile.name)
    else:
        picker = endpoint_picker_pods(ctx.workload.set_name or ctx.profile.name)
    return [
        Ingress(ctx.profile.gateway.proxy_cidrs, proxy_namespaces(ctx), ports=(serving,)),
        Ingress(pods=(picker,), ports=picker_ports),
    ]
