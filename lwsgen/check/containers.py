"""What any container lwsgen writes may ask for, whichever hatch it came through: a profile sidecar
or init container (check/pods.py, positioned at the profile) or a container a patch or template
produced (output/guards/, positioned at the hatch). Each rule gives (path inside the
container, what is wrong, code).

- security: privilege, privilege escalation and capabilities only as security.* allows; never an
  unconfined seccomp or AppArmor profile or an unmasked /proc; not root where security.runAsUser
  makes the pods non-root;
- no hostPort (the node's ports are not a container's to take);
- no Secret on a command line: $(VAR) of a variable from a Secret (secretKeyRef, or any variable
  an envFrom secretRef may define);
- a container lwsgen did not derive states CPU and memory limits and requests only what it limits
  (the GPU pods are Guaranteed QoS), and never a GPU, EFA or RDMA device (those are the engine's)."""

from __future__ import annotations

from typing import Any

from lwsgen.load.source import Source
from lwsgen.naming import LWS_ENV, OWN_ENV, OWN_ENV_PREFIX
from lwsgen.problems import Finding, Problem
from lwsgen.profile import Profile
from lwsgen.profile import kept_capabilities as own_capabilities
from lwsgen.quantity import HELP as QUANTITY_HELP
from lwsgen.quantity import parse as parse_quantity

Found = tuple[tuple, str, str]
DEVICE_FIELDS = {"vpc.amazonaws.com/efa": "node.efa"}
UNCONFINED = "Unconfined"
# What Pod Security "baseline" allows as an SELinux type; the variables that hand a container GPUs.
SELINUX_TYPES = ("container_t", "container_init_t", "container_kvm_t", "container_engine_t")
GPU_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VISIBLE_DEVICES")
# What makes a process run code its image does not: the dynamic loader's search path, preload and
# audit libraries (ld.so(8)), glibc's gconv modules, what bash sources or runs (BASH_ENV, ENV,
# SHELLOPTS=xtrace with PS4), the command search path, and Python's, Perl's and Node's startup
# files. LD_LIBRARY_PATH and PYTHONPATH stay: EFA's libfabric and NCCL's aws-ofi-nccl plugin are
# found through them (profiles/triton-llama3-405b.yaml); what they may point at is the open part.
RUN_ENV = (
    *("LD_PRELOAD", "LD_AUDIT", "GCONV_PATH"),  # the loader and glibc
    *("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "PATH"),  # the shell (set -x runs PS4)
    *("PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PERL5OPT", "PERL5LIB", "NODE_OPTIONS"),
)
# Every NVIDIA_* variable is the NVIDIA container toolkit's to read (devices, IMEX channels, MOFED,
# GDS, GDRCOPY, NVSWITCH: nvidia-container-toolkit internal/config/image): none is a profile's.
GPU_ENV_PREFIX = "NVIDIA_"


def kept_capabilities(profile: Profile) -> set[str]:
    """What lwsgen's own containers keep (profile.kept_capabilities): all a hatch's may add."""
    return set(own_capabilities(profile))


def is_device(profile: Profile, resource: str) -> bool:
    node = profile.node
    return resource in (node.gpu_resource, *DEVICE_FIELDS, *node.rdma_resource) or resource.startswith("nvidia.com/")


def security(profile: Profile, context: Any, final: bool) -> list[Found]:
    """final: the container as written out (an absent allowPrivilegeEscalation is true there, and
    every capability must be dropped); otherwise lwsgen still fills in its defaults."""
    allowed, out, at = profile.security.allow_privileged, [], ("securityContext",)
    if not isinstance(context, dict) or not isinstance(context.get("capabilities") or {}, dict):
        return [Finding(at, "a securityContext is a mapping (capabilities too)", "bad-value")]
    for key in ("privileged", "allowPrivilegeEscalation"):
        if context.get(key) and not allowed:
            out.append(
                Finding(
                    (*at, key),
                    f"{key} gives the container the node; set security.allowPrivileged to allow it",
                    "host-access",
                )
            )
    if final and not allowed and context.get("allowPrivilegeEscalation") is not False:
        out.append(
            Finding((*at, "allowPrivilegeEscalation"), "must be false (Kubernetes' default is true)", "host-access")
        )
    capabilities = context.get("capabilities") or {}
    for index, capability in enumerate(capabilities.get("add") or []):
        if capability not in kept_capabilities(profile):
            message = f"capability {capability} is not kept for this profile; list it in security.addCapabilities"
            out.append(Finding((*at, "capabilities", "add", index), message, "capability"))
    if final and "ALL" not in (capabilities.get("drop") or []):
        out.append(
            Finding((*at, "capabilities", "drop"), "must drop ALL, as every container lwsgen writes does", "capability")
        )
    return out + confinement(profile, context, at)


def confinement(profile: Profile, context: dict, at: tuple) -> list[Found]:
    """A container's or a pod's securityContext: no unconfined profile, no root in a non-root profile."""
    out = []
    for key in ("seccompProfile", "appArmorProfile"):
        if (context.get(key) or {}).get("type") == UNCONFINED:
            out.append(Finding((*at, key, "type"), f"{UNCONFINED} lifts the runtime's default {key}", "host-access"))
    selinux = context.get("seLinuxOptions") or {}
    if isinstance(selinux, dict) and selinux.get("type") not in (None, *SELINUX_TYPES):
        out.append(
            Finding((*at, "seLinuxOptions", "type"), f"SELinux type {selinux['type']} lifts confinement", "host-access")
        )
    for key in ("user", "role") if isinstance(selinux, dict) else ():
        if selinux.get(key):  # Pod Security baseline: seLinuxOptions.user and .role stay unset
            message = f"an SELinux {key} is the node's to assign; set only seLinuxOptions.type (container_t, ...)"
            out.append(Finding((*at, "seLinuxOptions", key), message, "host-access"))
    windows = context.get("windowsOptions")
    if isinstance(windows, dict) and windows.get("hostProcess"):
        message = "a host process runs on the node itself, outside any container"
        out.append(Finding((*at, "windowsOptions", "hostProcess"), message, "host-access"))
    if context.get("procMount") == "Unmasked":
        out.append(Finding((*at, "procMount"), "an unmasked /proc shows the node's kernel interfaces", "host-access"))
    if profile.security.run_as_user and (context.get("runAsUser") == 0 or context.get("runAsNonRoot") is False):
        message = "security.runAsUser makes these pods non-root; a container cannot run as root in them"
        out.append(Finding((*at, "runAsUser" if context.get("runAsUser") == 0 else "runAsNonRoot"), message, "root"))
    return out


ANY_UNSET = "\0any"  # in secret_variables: any variable the container does not set itself


def references(text: str) -> list[str]:
    """The variables the kubelet expands in text, as its expansion does (kubernetes v1.31
    third_party/forked/golang/expansion/expand.go): `$$` is a literal `$`, `$(NAME)` a reference,
    anything else after `$` is literal. Every reference counts, not only the first."""
    found, index = [], 0
    while index < len(text) - 1:
        if text[index] != "$":
            index += 1
        elif text[index + 1] == "$":
            index += 2
        elif text[index + 1] == "(" and (end := text.find(")", index + 2)) != -1:
            found.append(text[index + 2 : end])
            index = end + 1
        else:
            index += 1
    return found


def secret_variables(container: dict) -> tuple[set[str], set[str]]:
    """(the variables that may hold a Secret, those set plainly): a secretKeyRef one, one whose
    value expands such a variable (env: {B: "$(SECRET)"} copies it), and with an envFrom
    secretRef (ANY_UNSET) any the container does not set plainly itself."""
    env = [e for e in container.get("env") or [] if isinstance(e, dict)]
    from_secret = any(isinstance(s, dict) and s.get("secretRef") for s in container.get("envFrom") or [])
    secret: set[str] = set()
    plain: set[str] = set()
    for entry in env:  # in order: a value expands only the variables defined before it
        name, value_from = entry.get("name"), entry.get("valueFrom") or {}
        refs = references(str(entry.get("value"))) if "value" in entry else []
        if isinstance(value_from, dict) and value_from.get("secretKeyRef"):
            secret.add(name)
        elif any(ref in secret or (from_secret and ref not in plain) for ref in refs):
            secret.add(name)  # a copy of a Secret's variable, an envFrom one included
        elif "value" in entry or (isinstance(value_from, dict) and value_from.get("fieldRef")):
            plain.add(name)
    return secret | ({ANY_UNSET} if from_secret else set()), plain


def secret_references(container: dict) -> list[tuple[str, int, str]]:
    """(command or args, index, variable) where the kubelet would expand a variable that may come
    from a Secret into the command line."""
    secret, plain = secret_variables(container)
    any_unset = ANY_UNSET in secret
    return [
        (field, index, name)
        for field in ("command", "args")
        for index, arg in enumerate(container.get(field) or [])
        for name in dict.fromkeys(references(str(arg)))
        if name in secret or (any_unset and name not in plain)
    ]


def secret_message(name: str) -> str:
    return (
        f"$({name}) puts a Secret on the process's command line (any process of the node sees it in ps, and "
        f"programs log their arguments); read {name} from the environment inside the program, or write $$({name}) "
        "for the literal text"
    )


def _amount(quantity: object) -> object:
    amount = parse_quantity(quantity)
    return str(quantity) if amount is None else amount


def resources(profile: Profile, spec: dict) -> list[Found]:
    """A container lwsgen did not derive: CPU and memory limits, requests = limits, no devices."""
    written = spec.get("resources") or {}
    limits, requests, out = written.get("limits") or {}, written.get("requests") or {}, []
    if not isinstance(limits, dict) or not isinstance(requests, dict):
        return [Finding(("resources",), "limits and requests are mappings of resource names to amounts", "bad-value")]
    for side, amounts in (("limits", limits), ("requests", requests)):
        for resource, amount in amounts.items():
            if parse_quantity(amount) is None:
                message = f"{amount!r} is not {QUANTITY_HELP}"
                out.append(Finding(("resources", side, resource), message, "bad-quantity"))
    missing = [r for r in ("cpu", "memory") if r not in limits]
    if missing:
        message = (
            f"needs resources.limits.{missing[0]}: the GPU pods are Guaranteed QoS (every container limits CPU and "
            "memory and requests what it limits), and an unlimited container can take the node from the engine"
        )
        out.append(Finding(("resources",) if written else (), message, "no-limit"))
    for resource, amount in requests.items():
        if resource not in limits or _amount(amount) != _amount(limits[resource]):
            message = f"requests {resource} below or without its limit: give limits only (Guaranteed QoS)"
            out.append(Finding(("resources", "requests", resource), message, "not-guaranteed"))
    devices = sorted(r for r in {**limits, **requests} if is_device(profile, r))
    if devices:
        message = f"{devices[0]} is the engine's: a pod's devices come from node.gpus, node.efa and node.rdmaResource"
        out.append(Finding(("resources",), message, "derived"))
    return out


def container(profile: Profile, spec: dict[str, Any], *, final: bool, added: bool) -> list[Found]:
    """Every rule for one container; added: lwsgen did not derive it (a sidecar, a hatch's own)."""
    out = security(profile, spec.get("securityContext") or {}, final)
    for index, port in enumerate(spec.get("ports") or []):
        if isinstance(port, dict) and port.get("hostPort"):
            out.append(
                Finding(
                    ("ports", index, "hostPort"), "a hostPort takes a port of the node; use a Service", "host-access"
                )
            )
    out += [
        Finding((field, index), secret_message(name), "secret-on-command-line")
        for field, index, name in secret_references(spec)
    ]
    if isinstance(spec.get("resources"), dict) and spec["resources"].get("claims"):
        out.append(Finding(("resources", "claims"), "a pod's devices come from node.*, not claims", "derived"))
    return out + environment(spec, added) + (resources(profile, spec) if added else [])


def environment(spec: dict[str, Any], added: bool) -> list[Found]:
    """No container chooses GPUs, by any path (env, envFrom); and the engine's process runs its
    image's code only: no loader or shell variable, no lifecycle hook (added: not the engine)."""
    out = []
    for index, env in enumerate(spec.get("env") or []):
        name = env.get("name") if isinstance(env, dict) else None
        if added and name == "NVIDIA_VISIBLE_DEVICES" and env.get("value") == "void" and "valueFrom" not in env:
            continue  # no GPU at all: what lwsgen writes into every container it did not derive
        if name in GPU_ENV or str(name).startswith(GPU_ENV_PREFIX):
            out.append(Finding(("env", index, "name"), gpu_env_message(name), "derived"))
        elif not added and name in RUN_ENV:
            out.append(Finding(("env", index, "name"), run_env_message(name), "derived"))
    for index, source in enumerate(spec.get("envFrom") or []):
        prefix = str(source.get("prefix") or "") if isinstance(source, dict) else ""
        reached = [n for n in (*GPU_ENV, *(() if added else RUN_ENV)) if n.startswith(prefix)]
        reached += [GPU_ENV_PREFIX + "*"] if prefix.startswith(GPU_ENV_PREFIX) else []
        if reached:
            message = (
                f"envFrom could set {reached[0]} (whatever its ConfigMap or Secret holds); give it a prefix no such "
                "variable starts with (prefix: APP_), or list the variables under env"
            )
            out.append(Finding(("envFrom", index), message, "derived"))
    hooks = spec.get("lifecycle") if not added and isinstance(spec.get("lifecycle"), dict) else {}
    for hook, handler in hooks.items():
        if isinstance(handler, dict) and "exec" in handler:  # sleep and httpGet run nothing in it
            message = "an exec hook runs a command in the engine's container beside the engine; run it in a sidecar"
            out.append(Finding(("lifecycle", hook, "exec"), message, "derived"))
    return out


def gpu_env_message(name: str) -> str:
    return (
        f"{name} chooses the node's GPUs past the device plugin (the NVIDIA toolkit takes the last value: 'all' is "
        "every GPU of the node, other tenants' too); a pod's GPUs come from node.gpus only"
    )


def run_env_message(name: str) -> str:
    return f"{name} changes what the engine's process runs (the loader or the shell reads it); build it into the image"


RESERVED_ENV = (*LWS_ENV, *OWN_ENV)  # and any name that starts with OWN_ENV_PREFIX


def env_problems(src: Source, field: tuple, env) -> list[Problem]:
    out = []
    for name in env:
        if name in RESERVED_ENV or name.startswith(OWN_ENV_PREFIX):
            message = f"{name} is set by lwsgen or LeaderWorkerSet; reserved names: {', '.join(RESERVED_ENV)}"
        elif name in GPU_ENV or name.startswith(GPU_ENV_PREFIX):
            message = gpu_env_message(name)
        elif name in RUN_ENV:
            message = run_env_message(name)
        else:
            continue
        out.append(src.problem((*field, name), message, "reserved-env", key=True))
    return out
