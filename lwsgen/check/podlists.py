"""The list-shaped pod hatches of one role (check/pods.py merges them): volumes and their mounts,
sidecars and init containers (each through check/containers.py), their names and ports, and a list
that names one thing twice."""

from __future__ import annotations

import re

from lwsgen.check import containers
from lwsgen.check.delivery import CACHE_MOUNT
from lwsgen.check.pods import OWN_VOLUMES, SIDES, Entry, PodSettings
from lwsgen.load.source import Source
from lwsgen.problems import Problem
from lwsgen.profile import Profile
from lwsgen.runtimes.base import SCRIPTS_MOUNT, TOOLS_MOUNT

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
PORT_NAME = re.compile(r"(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # IANA_SVC_NAME, at most 15


# Volumes a pod's own API objects and the kubelet provide (Pod Security "restricted" allows these;
# csi is left out: an inline CSI volume is whatever the node's driver does; image volumes too: the
# node pulls them, and they carry programs). Every other source the node mounts for the pod.
POD_VOLUME_SOURCES = (
    *("configMap", "secret", "emptyDir", "persistentVolumeClaim", "projected", "downwardAPI", "ephemeral"),
    *("hostPath", "gitRepo"),  # said by their own rules (security.allowHostPath; never gitRepo)
)


def node_volume_sources(profile: Profile, volume: dict) -> list[str]:
    """The fields of a volume that make the node mount storage for the pod, unless the profile allows it."""
    if profile.security.allow_node_volumes or not isinstance(volume, dict):
        return []
    return [key for key in volume if key != "name" and key not in POD_VOLUME_SOURCES]


def node_volume_message(source: str) -> str:
    return (
        f"a {source} volume is mounted by the node with its own credentials or drivers; use a persistentVolumeClaim "
        "(its PersistentVolume is the cluster admin's), or set security.allowNodeVolumes"
    )


def own_mounts(profile: Profile) -> dict[str, str]:
    """Mount path -> what lwsgen mounts there."""
    mounts = {"/dev/shm": "shared memory", SCRIPTS_MOUNT: "the launch scripts", TOOLS_MOUNT: "the tools"}
    if profile.storage is not None:
        mounts[profile.storage.mount_path] = "the model (storage.mountPath)"
        mounts[CACHE_MOUNT] = "the local model cache"
    return mounts


def _dns_label(src: Source, entry: Entry, name: object) -> list[Problem]:
    """A volume's or container's name is a DNS-1123 label."""
    if DNS_LABEL.fullmatch(str(name)) and len(str(name)) <= 63:
        return []
    message = f"{name!r} is not a DNS-1123 label: lower-case letters, digits and '-', at most 63"
    return [src.problem((*entry.path, "name"), message, "bad-name")]


def volumes(profile: Profile, src: Source, pod: PodSettings) -> list[Problem]:
    out, names = [], set(OWN_VOLUMES)
    for entry in pod.volumes:
        name = entry.value.get("name")
        if name in OWN_VOLUMES:
            out.append(src.problem((*entry.path, "name"), f"lwsgen names a volume {name!r}; choose another", "taken"))
        else:
            out += _dns_label(src, entry, name)
        claim = (entry.value.get("persistentVolumeClaim") or {}).get("claimName")
        if profile.storage is not None and claim == profile.storage.claim_name:
            message = f"{claim!r} is the model's claim (storage.claimName): lwsgen mounts it, as storage.readOnly says"
            out.append(src.problem((*entry.path, "persistentVolumeClaim", "claimName"), message, "taken"))
        if "gitRepo" in entry.value:
            message = "a gitRepo volume runs git on the node; clone in an init container"
            out.append(src.problem((*entry.path, "gitRepo"), message, "host-access", key=True))
        sources = (entry.value.get("projected") or {}).get("sources") or []
        if any(isinstance(s, dict) and "serviceAccountToken" in s for s in sources):
            message = "a ServiceAccount token is the pod's launcher's, not a sidecar's"
            out.append(src.problem((*entry.path, "projected"), message, "token"))
        if "hostPath" in entry.value and not profile.security.allow_host_path:
            message = "a hostPath volume reaches into the node's filesystem; set security.allowHostPath to allow it"
            out.append(src.problem((*entry.path, "hostPath"), message, "host-access", key=True))
        for source in node_volume_sources(profile, entry.value):
            out.append(src.problem((*entry.path, source), node_volume_message(source), "host-access", key=True))
        names.add(name)
    taken_paths = own_mounts(profile)
    for entry in pod.volume_mounts:
        out += _mount(src, entry.path, entry.value, names)
        path = str(entry.value.get("mountPath", ""))
        taken = next((what for mount, what in taken_paths.items() if overlaps(path, mount)), None)
        if (why := program_mount(path, engine=True)) is not None:  # the image's programs: said first
            out.append(src.problem((*entry.path, "mountPath"), why, "program-mount"))
        elif taken:
            message = f"{path} overlaps where lwsgen mounts {taken}; mount elsewhere"
            out.append(src.problem((*entry.path, "mountPath"), message, "taken"))
    for entry in pod.sidecars:
        for index, mount in enumerate(entry.value.get("volumeMounts") or []):
            out += _mount(src, (*entry.path, "volumeMounts", index), mount, names)
            if isinstance(mount, dict) and (why := program_mount(str(mount.get("mountPath", "")), False)):
                out.append(src.problem((*entry.path, "volumeMounts", index, "mountPath"), why, "program-mount"))
    return out


def _mount(src: Source, at: tuple, mount: dict, names: set) -> list[Problem]:
    """A mount names a volume of the pod, and mounts lwsgen's own volumes read-only."""
    name = mount.get("name")
    if name not in names:
        allowed = ", ".join(sorted(n for n in names if n not in OWN_VOLUMES)) or "none"
        message = f"no volume {name!r} in this pod; volumes of the profile: {allowed}"
        return [src.problem((*at, "name"), message, "unknown-volume")]
    if name in OWN_VOLUMES and mount.get("readOnly") is not True:
        message = f"lwsgen's volume {name!r} is mounted read-only by anything but lwsgen (set readOnly: true)"
        return [src.problem((*at, "name"), message, "read-only")]
    return []


def _normal(path: str) -> str:
    """A mount path as the runtime resolves it: `//lwsgen`, `/./lwsgen` and `/dev//shm` are
    /lwsgen and /dev/shm (posixpath keeps a leading `//`, POSIX leaves it to the system: Linux
    reads it as `/`). `..` is kept as written: the API server refuses it in a mountPath."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return "/" + "/".join(parts)


# Where the NVIDIA toolkit's volume-mounts strategy reads the devices a container gets.
DEVICE_LIST_DIRS = ("/var/run/nvidia-container-devices", "/run/nvidia-container-devices")
# The image's programs, libraries and what the loader and shells read at start: a mount there in
# the engine's container replaces what it runs (the engines' own trees: Triton's, llama.cpp's /app,
# SGLang's /sgl-workspace). Data under /etc, /opt or /workspace (chat templates, say) stays.
PROGRAM_DIRS = (
    *("/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/opt/tritonserver", "/app", "/sgl-workspace"),
    *("/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.cache", "/etc/profile"),
    *("/etc/profile.d", "/etc/bash.bashrc", "/etc/environment"),
)
ABOVE_PROGRAMS = ("/", "/etc", "/opt", "/workspace", "/var", "/run")


def program_mount(path: str, engine: bool) -> str | None:
    """Why a mount at path may not be, or None: in the engine's container, never over its image's
    programs; in any container, never where the toolkit lists the container's GPUs."""
    normal = _normal(path)
    hit = next((d for d in PROGRAM_DIRS if overlaps(path, d)), normal if normal in ABOVE_PROGRAMS else None)
    if engine and hit is not None:
        return f"{path} would replace the engine image's {hit} (what it runs); mount data elsewhere (/data, /mnt/...)"
    if any(overlaps(path, d) for d in DEVICE_LIST_DIRS):
        return f"{path} is where the NVIDIA toolkit reads which GPUs a container gets; a pod's GPUs come from node.gpus"
    return None


def overlaps(path: str, mount: str) -> bool:
    """One path is the other or lies under it (a mount there would hide or be hidden by the other);
    `/` lies above every path."""
    path, mount = _normal(path), _normal(mount)
    return path == mount or path.startswith(mount.rstrip("/") + "/") or mount.startswith(path.rstrip("/") + "/")


def _container(
    profile: Profile, src: Source, entry: Entry, taken: set[str], engine_ports: dict[str, int]
) -> list[Problem]:
    spec, path = entry.value, entry.path
    out = [
        src.place(finding._replace(path=(*path, *finding.path)))
        for finding in containers.container(profile, spec, final=False, added=True)
    ]
    name = spec.get("name")
    if name in taken:
        out.append(src.problem((*path, "name"), f"lwsgen names a container {name!r}; choose another", "taken"))
    for index, port in enumerate(spec.get("ports") or []):
        if isinstance(port, dict) and port.get("name") in engine_ports:
            message = f"the engine's container has a port named {port['name']!r}; a pod's port names are unique"
            out.append(src.problem((*path, "ports", index, "name"), message, "taken"))
        if isinstance(port, dict) and port.get("containerPort") in engine_ports.values():
            message = (
                f"port {port['containerPort']} is the engine's (a pod's containers share one network): choose another"
            )
            out.append(src.problem((*path, "ports", index, "containerPort"), message, "taken"))
    return out


def sidecars(
    profile: Profile, src: Source, pod: PodSettings, own: set[str], engine_ports: dict[str, int]
) -> list[Problem]:
    out, seen, ports = [], set(), set()
    for entry in pod.sidecars:
        name = entry.value.get("name")
        if name in seen:
            out.append(src.problem((*entry.path, "name"), f"a second container named {name!r}", "duplicate"))
        else:
            out += _dns_label(src, entry, name)
        seen.add(name)
        out += _container(profile, src, entry, own, engine_ports)
        out += _port_names(src, entry, ports)
    return out


def _port_names(src: Source, entry: Entry, seen: set) -> list[Problem]:
    out = []
    for index, port in enumerate(entry.value.get("ports") or []):
        name = port.get("name") if isinstance(port, dict) else None
        if name is None:
            continue
        at = (*entry.path, "ports", index, "name")
        if not PORT_NAME.fullmatch(str(name)) or len(str(name)) > 15:
            message = f"{name!r} is not a port name: lower-case letters, digits and '-' with a letter, at most 15"
            out.append(src.problem(at, message, "bad-name"))
        elif name in seen:
            out.append(src.problem(at, f"a second port named {name!r} in this pod", "duplicate"))
        seen.add(name)
    return out


LISTS = (("volumes", "name"), ("volumeMounts", "mountPath"), ("initContainers", "name"), ("containers", "name"))


def duplicates(src: Source) -> list[Problem]:
    """One list naming the same thing twice: the later entry would silently replace the earlier."""
    out = []
    for owner in ((), *((side,) for side in SIDES)):
        fields = src.data if not owner else (src.data.get(owner[0]) or {})
        for field, key in LISTS:
            seen = set()
            for index, item in enumerate(fields.get(field) or []):
                value = item.get(key) if isinstance(item, dict) else None
                if isinstance(value, (str, int)) and value in seen:
                    message = f"a second entry with {key} {value!r}"
                    out.append(src.problem((*owner, field, index, key), message, "duplicate"))
                seen.add(value)
    return out
