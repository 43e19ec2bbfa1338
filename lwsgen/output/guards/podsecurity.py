"""What a pod that a patch or template produced may not get, read on its pod specs (LWS templates,
Deployments, Jobs, MPIJobs, the user's own kinds): host access and privilege beyond security.*,
the node's PID or one process namespace, volumes that reach the node (hostPath, gitRepo) or a
ServiceAccount token, the model's claim mounted anew, a new mount over a path lwsgen mounts, and
for every container check/containers.py's rules (sidecar rules for all but the engine's).
`before` is lwsgen's object, if the hatch changed one: what lwsgen itself wrote there is not the
hatch's (guards.no_new_holes subtracts it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwsgen.check import containers, podlists
from lwsgen.check.podlists import overlaps
from lwsgen.problems import Finding
from lwsgen.profile import Profile

HOST_FIELDS = {"hostNetwork": "security.allowHostNetwork", "hostIPC": "security.allowHostIPC"}


def pod_specs(value: Any, at: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            yield at, value
        for key, child in value.items():
            yield from pod_specs(child, (*at, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from pod_specs(child, (*at, index))


def _mounts(spec: dict) -> list[dict]:
    return [
        m
        for group in ("initContainers", "containers")
        for c in spec.get(group) or []
        if isinstance(c, dict)
        for m in c.get("volumeMounts") or []
        if isinstance(m, dict)
    ]


def holes(profile: Profile, obj: dict, before: dict | None = None) -> Iterator[Finding]:
    """(path, what is wrong) for every way the object's pods get more than the profile allows."""
    derived = dict(pod_specs(before)) if before is not None else {}
    for at, spec in pod_specs(obj):
        theirs = derived.get(at)
        yield from _pod_holes(profile, spec, at, theirs)
        for group in ("initContainers", "containers"):
            for index, container in enumerate(spec.get(group) or []):
                if not isinstance(container, dict):
                    continue
                # lwsgen's engine: its amounts are the node shape's (guarded); an added kind has none
                engine = theirs is not None and group == "containers" and index == 0
                for finding in containers.container(profile, container, final=True, added=not engine):
                    yield Finding((*at, group, index, *finding.path), finding.message)


def _pod_holes(profile: Profile, spec: dict, at: tuple, before: dict | None) -> Iterator[Finding]:
    security = profile.security
    allowed = {"hostNetwork": security.allow_host_network, "hostIPC": security.allow_host_ipc}
    for field, setting in HOST_FIELDS.items():
        if spec.get(field) and not allowed[field]:
            yield Finding((*at, field), f"{field} is not allowed for this profile; set {setting} to allow it")
    for field, why in (("hostPID", "the node's PID namespace"), ("shareProcessNamespace", "one process namespace")):
        if spec.get(field):
            yield Finding((*at, field), f"lwsgen never runs a pod's containers in {why}")
    if spec.get("nodeName"):
        yield Finding(
            (*at, "nodeName"),
            "nodeName skips the scheduler (gang scheduling, node.gpuProduct); set node.nodeSelector",
        )
    if spec.get("ephemeralContainers"):
        yield Finding(
            (*at, "ephemeralContainers"), "ephemeral containers are kubectl debug's; the API server refuses them here"
        )
    if spec.get("resourceClaims"):
        yield Finding(
            (*at, "resourceClaims"), "a pod's devices come from node.* (DRA claims are not lwsgen's to hand out)"
        )
    yield from _volume_holes(profile, spec, at, before)
    context = spec.get("securityContext") or {}
    for finding in containers.confinement(profile, context, ("securityContext",)):
        yield Finding((*at, *finding.path), finding.message)


def _volume_holes(profile: Profile, spec: dict, at: tuple, before: dict | None) -> Iterator[Finding]:
    claim = profile.storage.claim_name if profile.storage is not None else None
    own_volumes = {v.get("name"): v for v in (before or {}).get("volumes") or [] if isinstance(v, dict)}
    for index, volume in enumerate(spec.get("volumes") or []):
        if not isinstance(volume, dict):
            continue
        if "hostPath" in volume and not profile.security.allow_host_path:
            yield Finding((*at, "volumes", index, "hostPath"), "hostPath is not allowed; set security.allowHostPath")
        for source in podlists.node_volume_sources(profile, volume):
            yield Finding((*at, "volumes", index, source), podlists.node_volume_message(source))
        if "gitRepo" in volume:
            yield Finding(
                (*at, "volumes", index, "gitRepo"),
                "a gitRepo volume runs git on the node; clone in an init container",
            )
        tokens = [s for s in (volume.get("projected") or {}).get("sources") or [] if isinstance(s, dict)]
        if any("serviceAccountToken" in s for s in tokens) and own_volumes.get(volume.get("name")) != volume:
            yield Finding(
                (*at, "volumes", index, "projected"), "a ServiceAccount token is the pod's launcher's, not a hatch's"
            )
        mine = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim and mine == claim and own_volumes.get(volume.get("name")) != volume:
            yield Finding((*at, "volumes", index), f"the model's claim {claim!r} is lwsgen's to mount (storage.*)")
    yield from _mount_holes(spec, at, before, set(own_volumes))


def _mount_holes(spec: dict, at: tuple, before: dict | None, own_volumes: set) -> Iterator[Finding]:
    """A mount the hatch added: never over a path lwsgen mounts, lwsgen's volumes read-only."""
    existing = [(m.get("name"), m.get("mountPath"), m.get("subPath")) for m in _mounts(before or {})]
    paths = [str(path) for _, path, _ in existing if path]
    for group in ("initContainers", "containers"):
        for c, container in enumerate(spec.get(group) or []):
            mounts = container.get("volumeMounts") if isinstance(container, dict) else None
            for m, mount in enumerate(mounts or []):
                if not isinstance(mount, dict):
                    continue
                key = (mount.get("name"), mount.get("mountPath"), mount.get("subPath"))
                if key in existing:
                    continue
                where = (*at, group, c, "volumeMounts", m)
                path = str(mount.get("mountPath", ""))
                over = next((p for p in paths if overlaps(path, p)), None)
                engine = before is not None and group == "containers" and c == 0
                if over is not None:
                    yield Finding((*where, "mountPath"), f"{path} overlaps {over}, where lwsgen mounts its own")
                elif (why := podlists.program_mount(path, engine)) is not None:
                    yield Finding((*where, "mountPath"), why)
                elif mount.get("name") in own_volumes and mount.get("readOnly") is not True:
                    yield Finding(
                        (*where, "readOnly"),
                        f"lwsgen's volume {mount.get('name')!r} is mounted read-only (readOnly: true)",
                    )
