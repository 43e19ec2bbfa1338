"""The NetworkPolicy of a LeaderWorkerSet: serving ports from the allowed sources, everything between
the pods of this LWS (Ray, NCCL, MPI, SGLang dist-init and llama.cpp RPC use many, often dynamic,
ports; none of them authenticates, so Ray's ports open to the cluster are a remote-code-execution
hole), the metrics port from the monitoring namespace, and no other ingress."""

from lwsgen.derive.context import Context
from lwsgen.derive.model import Meta
from lwsgen.derive.naming import own_pods
from lwsgen.records import Record


class Ingress(Record):
    """One ingress rule: from these peers (none: any source) to these ports (none: every port)."""

    cidrs: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    pods: tuple[dict[str, str], ...] = ()
    ports: tuple[str | int, ...] = ()


class NetworkPolicy(Record):
    meta: Meta
    pods: dict[str, str]
    ingress: tuple[Ingress, ...]


def networkpolicy(ctx: Context, kind) -> NetworkPolicy | None:
    profile = ctx.profile
    if not profile.security.network_policy:
        return None
    caps, service = ctx.caps, profile.service
    pods = own_pods(profile.name)
    rules = [
        Ingress(service.allowed_sources, service.allowed_namespaces, ports=ctx.parts.service_ports),
        Ingress(pods=(pods,)),
    ]
    if profile.monitoring.enabled and caps.metrics:
        rules.append(Ingress(namespaces=(profile.monitoring.namespace,), ports=(caps.metrics_port,)))
    return NetworkPolicy(ctx.meta(kind, profile.name), pods, tuple(rules))
