"""The profile's pod escape hatches as parts of the leader and worker pods (check/pods.py merges
and checks them): sidecars and init containers hardened like lwsgen's own unless they say
otherwise (within what security.* allows, checked), the role's env and args as literal text, its
resources over the node shape's."""

from __future__ import annotations

from typing import Any

from lwsgen.check import pods as settings_of
from lwsgen.derive import pods
from lwsgen.derive.model import EnvVar, Resources
from lwsgen.profile import Profile
from lwsgen.profile import thaw as _thaw
from lwsgen.records import Record
from lwsgen.runtimes.base import literal


class Field(Record):
    """A key of a profile structure placed as written (the key through the quoting filter too)."""

    key: str
    value: Any


def _fields(written: dict[str, Any], own: tuple[str, ...]) -> tuple[Field, ...]:
    return tuple(Field(k, v) for k, v in written.items() if k not in own)


class SidecarSecurity(Record):
    """A profile container's securityContext: what it says, and lwsgen's defaults where it says nothing."""

    written: tuple[Field, ...]  # the other keys, as written
    escalation: bool
    drop: tuple[str, ...]
    add: tuple[str, ...] | None
    non_root: bool | None
    user: int | None


class Sidecar(Record):
    """A container of the profile's initContainers or containers (templates/_k8s.yaml.j2 `sidecar`)."""

    name: str
    written: tuple[Field, ...]  # every other key, as written
    env: tuple  # its env entries, as written; the template adds NVIDIA_VISIBLE_DEVICES=no_gpus last
    no_gpus: str
    pull_policy: str
    security: SidecarSecurity


OWN_KEYS = ("name", "env", "imagePullPolicy", "securityContext")
# Its image may say NVIDIA_VISIBLE_DEVICES=all (the CUDA images do): on a node whose runtime is
# NVIDIA's, that is every GPU of the node. void hands it none (nvidia-container-toolkit).
NO_GPUS = "void"
OWN_CONTEXT = ("allowPrivilegeEscalation", "capabilities", "runAsNonRoot", "runAsUser")


def hardened(profile: Profile, container: dict[str, Any]) -> Sidecar:
    """A profile container with lwsgen's defaults where it says nothing: every capability dropped,
    no privilege escalation, the profile's user, the default pull policy (what it may say instead
    is bounded by security.*: check/pods.py)."""
    spec = _thaw(container)
    context = spec.get("securityContext") or {}
    capabilities = context.get("capabilities") or {}
    user = context.get("runAsUser", profile.security.run_as_user or None)
    return Sidecar(
        spec["name"],
        _fields(spec, OWN_KEYS),
        tuple(spec.get("env") or ()),
        NO_GPUS,
        spec.get("imagePullPolicy", pods.PULL_POLICY),
        SidecarSecurity(
            _fields(context, OWN_CONTEXT),
            bool(context.get("allowPrivilegeEscalation", context.get("privileged", False))),
            tuple(capabilities.get("drop", ("ALL",))),
            tuple(capabilities["add"]) if capabilities.get("add") else None,
            context.get("runAsNonRoot", True if profile.security.run_as_user else None),
            user,
        ),
    )


def extras(profile: Profile, side: str) -> pods.PodExtras:
    pod = settings_of.settings(profile, side)
    return pods.PodExtras(
        labels={k: e.value for k, e in pod.labels.items()},
        annotations={k: e.value for k, e in pod.annotations.items()},
        affinity=None if pod.affinity is None else _thaw(pod.affinity.value),
        topology_spread=None if pod.topology_spread is None else tuple(_thaw(pod.topology_spread.value)),
        dns_config=None if pod.dns_config is None else _thaw(pod.dns_config.value),
        init_containers=tuple(hardened(profile, e.value) for e in pod.init_containers),
        containers=tuple(hardened(profile, e.value) for e in pod.containers),
        volumes=tuple(_thaw(e.value) for e in pod.volumes),
    )


def mounts(profile: Profile, side: str) -> tuple[dict[str, Any], ...]:
    return tuple(_thaw(e.value) for e in settings_of.settings(profile, side).volume_mounts)


def env(profile: Profile, side: str) -> tuple[EnvVar, ...]:
    """The role's own env, after the profile's (a name in both: the role's, since Kubernetes takes the last)."""
    return pods.env_values(dict(getattr(profile, side).env))


def args(profile: Profile, side: str) -> tuple[str, ...]:
    return tuple(literal(str(arg)) for arg in getattr(profile, side).args)


def resources(profile: Profile, side: str) -> Resources:
    """The node shape's amounts with the role's over them, requested as limited."""
    own = {name: str(amount) for name, amount in getattr(profile, side).resources.items()}
    return pods.equal({**pods.node_amounts(profile), **own})
