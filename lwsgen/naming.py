"""Every object name and label set derived from a profile, decided in one place."""

from __future__ import annotations

LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"

# Suffixes of derived object names: <name><suffix>.
SUFFIXES = {"service": "-leader", "launch": "-launch", "launcher": "-launcher"}

# StatefulSet pods carry controller-revision-hash = "<statefulset>-<10 chars>", at most 63;
# worker StatefulSets are named "<name>-<group>".
_REVISION_LABEL_ROOM = 63 - len("-") - len("-") - 10
_DNS_LABEL = 63


def name_budget(highest_group_index: int) -> int:
    """Longest profile name whose derived names and LWS pod labels all stay within limits."""
    by_revision_label = _REVISION_LABEL_ROOM - len(str(highest_group_index))
    by_suffix = _DNS_LABEL - max(len(s) for s in SUFFIXES.values())
    return min(by_revision_label, by_suffix)


def object_names(name: str) -> dict[str, str]:
    return {"lws": name, **{key: name + suffix for key, suffix in SUFFIXES.items()}}


def labels(name: str, runtime: str, component: str, extra: dict[str, str]) -> dict[str, str]:
    """Labels of every object; extra (profile labels) never overrides ours and is never selected on."""
    ours = {
        "app.kubernetes.io/name": runtime,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "lwsgen",
    }
    return {**extra, **ours}


def leader_selector(name: str) -> dict[str, str]:
    """Leaders of this LeaderWorkerSet only: what its Service and monitors select."""
    return {LWS_NAME_LABEL: name, WORKER_INDEX_LABEL: "0"}
