"""The pod escape hatches' rules, per role: the merged settings (check/pods.py) against what the
runtime's own containers need, their lists (check/podlists.py) and the env lwsgen reserves."""

from __future__ import annotations

from lwsgen import registry, runtimes
from lwsgen.check import containers, podlists
from lwsgen.check.containers import env_problems
from lwsgen.check.metadata import ANNOTATIONS_BYTES, key_problem, label_value_problem
from lwsgen.check.pods import (
    GPU_PRODUCT_LABEL,
    OWN_CONTAINERS,
    POD_LABEL_PREFIXES,
    SIDES,
    PodSettings,
    annotation_owner,
    settings,
    uses_hatches,
)
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE


def metadata(src: Source, pod: PodSettings) -> list[Problem]:
    out = []
    for key, entry in pod.labels.items():
        why = key_problem(key) or label_value_problem(str(entry.value))
        if key.startswith(POD_LABEL_PREFIXES):
            why = "set by lwsgen, LeaderWorkerSet or Kueue (selectors and queues use it); use your own label key"
        if why:
            out.append(src.problem(entry.path, f"pod label {key!r}: {why}", "reserved-label", key=True))
    for key, entry in pod.annotations.items():
        owner = annotation_owner(key)
        why = key_problem(key) or owner
        if why:
            out.append(src.problem(entry.path, f"pod annotation {key!r}: {why}", "reserved-annotation", key=True))
    size = sum(len(k.encode()) + len(str(e.value).encode()) for k, e in pod.annotations.items())
    if size > ANNOTATIONS_BYTES:
        message = f"pod annotations total {size} bytes; Kubernetes allows at most {ANNOTATIONS_BYTES} per object"
        out.append(src.problem(next(iter(pod.annotations.values())).path[:-1], message, "too-large"))
    return out


def spread(src: Source, pod: PodSettings) -> list[Problem]:
    entry = pod.topology_spread
    return [
        src.problem((*entry.path, index, "maxSkew"), "maxSkew must be 1 or more", "bad-value")
        for index, constraint in enumerate(entry.value if entry is not None else ())
        if isinstance(constraint.get("maxSkew"), int) and constraint["maxSkew"] < 1
    ]


def affinity(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    if pod.affinity is None or profile.node.gpu_product is None:
        return []
    required = (
        (pod.affinity.value.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    ) or {}
    for index, term in enumerate(required.get("nodeSelectorTerms") or []):
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") == GPU_PRODUCT_LABEL:
                at = (*pod.affinity.path, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
                message = f"{GPU_PRODUCT_LABEL} is required from node.gpuProduct in every term; set it there"
                return [src.problem((*at, "nodeSelectorTerms", index), message, "derived")]
    return []


def resources(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    out = []
    for resource, entry in pod.resources.items():
        if containers.is_device(profile, resource):
            field = containers.DEVICE_FIELDS.get(resource, "node.gpus and parallelism")
            message = f"{resource} comes from the node shape; set {field} instead"
            out.append(src.problem(entry.path, message, "derived", key=True))
    return out


@registry.rule(
    "bad-name",
    "bad-quantity",
    "bad-value",
    "capability",
    "derived",
    "duplicate",
    "host-access",
    "no-limit",
    "not-applicable",
    "not-guaranteed",
    "program-mount",
    "read-only",
    "reserved-annotation",
    "reserved-env",
    "reserved-label",
    "root",
    "secret-on-command-line",
    "taken",
    "token",
    "too-large",
    "unknown-volume",
    scope=PROFILE,
    severity=ERROR,
)
def check(profile: Profile, src: Source) -> list[Problem]:
    """The pod escape hatches of each role (shared and per role, merged) do not undo what lwsgen derives
    or open a hole: reserved labels, annotations and env, the engine's ports and volumes, device
    resources, privileges and capabilities, and the lists' names and mounts."""
    if not uses_hatches(profile):
        return []
    parts = runtimes.get(profile.runtime).parts(profile)
    out = podlists.duplicates(src)
    for side in SIDES:
        pod, role = settings(profile, side), getattr(parts, side)
        own = {*OWN_CONTAINERS, *(name for name, _image, _command in role.tool_installers)}
        engine_ports = {port.name: port.number for port in role.ports}
        out += (
            metadata(src, pod)
            + podlists.volumes(profile, src, pod)
            + podlists.sidecars(profile, src, pod, own, engine_ports)
        )
        out += affinity(profile, src, pod) + resources(profile, src, pod) + spread(src, pod)
        out += env_problems(src, (side, "env"), getattr(profile, side).env)
        if pod.args and not role.args:
            message = (
                f"the {profile.runtime} {side} runs no command of its own to take arguments (it joins the "
                "leader's group); engine flags go in model.extraArgs"
            )
            out.append(src.problem((side, "args"), message, "not-applicable"))
    return list(dict.fromkeys(out))  # a shared field's problem once, not once per role


@registry.rule("host-access", "shares-token", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """Valid pod hatches worth saying: hostPath volumes, and a sidecar that shares the launcher's token."""
    out = []
    if profile.security.allow_host_path:
        message = (
            "hostPath volumes reach into the node's filesystem: a compromised container can read or change the node"
        )
        out.append(src.problem(("security", "allowHostPath"), message, "host-access"))
    if not uses_hatches(profile):
        return out
    parts = runtimes.get(profile.runtime).parts(profile)
    for side in SIDES:
        entries = settings(profile, side).sidecars
        if entries and getattr(parts, side).api_access:
            message = (
                f"the {side} pod mounts its launcher's ServiceAccount token (pods/exec on the group) into every "
                "container: this sidecar can exec into the workers"
            )
            out.append(src.problem(entries[0].path, message, "shares-token"))
    return list(dict.fromkeys(out))
