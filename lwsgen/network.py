"""The NetworkPolicy of a LeaderWorkerSet: serving ports from the allowed sources, everything between
the pods of this LWS (Ray, NCCL, MPI, SGLang dist-init and llama.cpp RPC use many, often dynamic,
ports; none of them authenticates, so Ray's ports open to the cluster are a remote-code-execution
hole), the metrics port from the monitoring namespace, and no other ingress."""

from __future__ import annotations

from typing import Any

from lwsgen.naming import LWS_NAME_LABEL
from lwsgen.runtimes.base import Capabilities, RuntimeParts

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _serving_sources(service: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Peers allowed on the serving ports; None (no `from`) means any source."""
    peers = [{"ipBlock": {"cidr": cidr}} for cidr in service["allowedSources"]]
    peers += [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: ns}}} for ns in service["allowedNamespaces"]]
    return peers or None


def spec(profile: dict[str, Any], parts: RuntimeParts, caps: Capabilities) -> dict[str, Any]:
    own_pods = {"matchLabels": {LWS_NAME_LABEL: profile["name"]}}
    rules = [
        {"from": _serving_sources(profile["service"]), "ports": [{"port": p, "protocol": "TCP"} for p in parts.service_ports]},
        {"from": [{"podSelector": own_pods}]},
    ]
    monitoring = profile["monitoring"]
    if monitoring["enabled"] and caps.metrics:
        rules.append({"from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: monitoring["namespace"]}}}],
                      "ports": [{"port": caps.metrics_port, "protocol": "TCP"}]})
    return {"podSelector": own_pods, "policyTypes": ["Ingress"], "ingress": rules}
