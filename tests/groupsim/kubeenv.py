"""A container's environment and `$(VAR)` expansion, as the kubelet builds them, for the pod simulator.

Ported from kubernetes/kubernetes (read through the code index, not a checkout):

- `expand` is `Expand` / `tryReadVariableName` of third_party/forked/golang/expansion/expand.go
  (commit fde22c3f9aacfd260225a9741de123a41157b7c0, the version that decodes a whole rune after `$`;
  Python strings are code points, so this port behaves like that version). Its test table,
  expand_test.go (commit 490ffa432a878f5a75e5b5906d820d06e672556e), is ported in test_expansion.py.
- `container_env` is `makeEnvironmentVariables` of pkg/kubelet/kubelet_pods.go
  (commit 001a80e975bb880d0fe60b304d30950fe661f278).
- `expand_command` is `ExpandContainerCommandAndArgs` and `expand_probe_command` is
  `ExpandContainerCommandOnlyStatic`, both of pkg/kubelet/container/helpers.go; the latter is what
  pkg/kubelet/prober/prober.go applies to an exec probe's command.

The LeaderWorkerSet pod webhook, read in kubernetes-sigs/lws at commit
060ab4da17eea1f0865fcbd3236bb1075e2cea32 (v0.10.0-11-g060ab4d; v0.10.0 = 2161f38f has the same code):

- pkg/webhooks/pod_webhook.go `Default` ends with `podutils.AddLWSVariables(pod)` (after the TPU
  variables), on pod CREATE only.
- pkg/utils/pod/pod_utils.go `AddLWSVariables` builds, in this order, LWS_LEADER_ADDRESS =
  fmt.Sprintf("%s-%s.%s.%s", lwsName, groupIndex, pod.Spec.Subdomain, pod.Namespace) (no
  `.svc.cluster.local`), LWS_GROUP_SIZE = the size annotation, LWS_WORKER_INDEX = the worker-index
  label, for every container and init container.
- `addEnvVarsIfNotExists` PREPENDS those three and then appends the container's own entries whose
  name is not yet taken: a user's own LWS_* entry is dropped, and so is every later duplicate of a
  user's name (the first one wins) -- `lws_webhook_env` here.
- pod.Spec.Subdomain is the StatefulSet's serviceName: the LWS name with the default subdomainPolicy
  Shared (pkg/controllers/leaderworkerset_controller.go and pod_controller.go), the leader pod's name
  `<lws>-<group>` with UniquePerReplica (pod_controller.go; pod_webhook.go sets it on the leader).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

OPERATOR, OPENER, CLOSER = "$", "(", ")"


def syntax_wrap(name: str) -> str:
    return OPERATOR + OPENER + name + CLOSER


def mapping_for(*contexts: Mapping[str, str]) -> Callable[[str], str | None]:
    """MappingFuncFor: the first context holding the name answers. Contexts are read at call time,
    so a dict that grows while env entries are resolved is seen as it grows, as Go's maps are."""

    def lookup(name: str) -> str | None:
        for context in contexts:
            if name in context:
                return context[name]
        return None

    return lookup


def _try_read_variable_name(text: str) -> tuple[str, bool, int]:
    """What follows a `$`: (the text to emit or the variable's name, whether it is a name, characters used)."""
    first = text[0]
    if first == OPERATOR:
        return first, False, 1  # `$$` is one `$`
    if first == OPENER:
        closer = text.find(CLOSER, 1)
        if closer != -1:
            return text[1:closer], True, closer + 1
        # Unterminated: keep `$(`, consume only the `(`, and go on scanning after it
        return OPERATOR + OPENER, False, 1
    return OPERATOR + first, False, 1


def expand(text: str, mapping: Callable[[str], str | None]) -> str:
    """Replace each `$(NAME)` by mapping(NAME); an unknown name stays `$(NAME)` (MappingFuncFor's syntaxWrap)."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        # A `$` that ends the text is kept as it is
        if text[cursor] == OPERATOR and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            read, is_name, advance = _try_read_variable_name(text[cursor + 1 :])
            if is_name:
                value = mapping(read)
                out.append(syntax_wrap(read) if value is None else value)
            else:
                out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


# apimachinery IsEnvVarName (strict form), which kubelets before v1.30 applied to envFrom keys
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def is_env_var_name(name: str) -> bool:
    return bool(_ENV_VAR_NAME.fullmatch(name)) and name not in (".", "..") and not name.startswith("..")


def lws_env(
    lws_name: str, namespace: str, group_index: int, worker_index: int, size: int, subdomain: str | None = None
) -> list[tuple[str, str]]:
    """The variables the LWS pod webhook prepends, in its order. subdomain defaults to the LWS name
    (subdomainPolicy Shared); with UniquePerReplica pass the leader's name, f"{lws_name}-{group_index}"."""
    leader = f"{lws_name}-{group_index}"
    return [
        ("LWS_LEADER_ADDRESS", f"{leader}.{subdomain or lws_name}.{namespace}"),
        ("LWS_GROUP_SIZE", str(size)),
        ("LWS_WORKER_INDEX", str(worker_index)),
    ]


def lws_webhook_env(prepend: list[tuple[str, str]], env: list[dict]) -> list[dict]:
    """addEnvVarsIfNotExists: `prepend` first, then each of env's entries whose name is not taken yet."""
    if not prepend:
        return list(env)  # no webhook ran: the pod's env as written
    result = [{"name": name, "value": value} for name, value in prepend]
    taken = {name for name, _ in prepend}
    for entry in env:
        if entry["name"] not in taken:
            result.append(entry)
            taken.add(entry["name"])
    return result


def container_env(
    container: dict,
    pod: dict,
    *,
    prepend: list[tuple[str, str]],
    field_values: dict[str, str],
    secret_values: dict[tuple[str, str], str],
    config_map_values: dict[tuple[str, str], str],
    service_env: Mapping[str, str] | None = None,
    skip_invalid_env_from_keys: bool = True,
) -> list[tuple[str, str]]:
    """One container's environment as makeEnvironmentVariables builds it.

    envFrom first (later sources override earlier ones), then env in order (after the LWS webhook's
    rewrite, when prepend is given): a `value` is expanded against what is defined so far -- envFrom,
    earlier env entries, service_env -- so a reference to a variable defined later stays `$(NAME)`.

    The kubelet keeps the variables in a map and returns `for k, v := range tmpEnv`, i.e. in Go's
    randomised map order (service variables not shadowed come after). A redefinition replaces the value
    and there is no "position" upstream; this returns a dict's order (first definition's place, last
    value) so results are stable, and no caller should depend on that order.

    A ConfigMap or Secret "exists" when some (name, key) of it is given. Keys of an envFrom source
    that are not IsEnvVarName are skipped, as kubelets before v1.30 did (with an
    InvalidEnvironmentVariableNames event); the current kubelet no longer checks (KEP-4369, relaxed
    names): pass skip_invalid_env_from_keys=False for that.
    """
    namespace = pod.get("metadata", {}).get("namespace", "default")
    services = dict(service_env or {})
    defined: dict[str, str] = {}
    for source in container.get("envFrom", []):
        defined.update(_env_from(source, namespace, secret_values, config_map_values, skip_invalid_env_from_keys))

    lookup = mapping_for(defined, services)
    for entry in lws_webhook_env(prepend, container.get("env", [])):
        if entry.get("value"):
            defined[entry["name"]] = expand(entry["value"], lookup)
            continue
        value = _value_from(entry.get("valueFrom"), pod, namespace, field_values, secret_values, config_map_values)
        if value is not None:  # None: an optional source is missing, and the variable is left out
            defined[entry["name"]] = value
    return list(defined.items()) + [(name, value) for name, value in services.items() if name not in defined]


def _env_from(
    source: dict,
    namespace: str,
    secret_values: dict[tuple[str, str], str],
    config_map_values: dict[tuple[str, str], str],
    skip_invalid: bool,
) -> dict[str, str]:
    if "configMapRef" in source:  # the kubelet's switch looks at configMapRef first
        ref, values, kind = source["configMapRef"], config_map_values, "ConfigMap"
    elif "secretRef" in source:
        ref, values, kind = source["secretRef"], secret_values, "Secret"
    else:
        return {}
    data = {key: value for (name, key), value in values.items() if name == ref["name"]}
    if not data:
        if ref.get("optional"):
            return {}
        raise KeyError(f"envFrom: {kind} {namespace}/{ref['name']} not found")
    named = {source.get("prefix", "") + key: value for key, value in data.items()}
    return {name: value for name, value in named.items() if not skip_invalid or is_env_var_name(name)}


def _value_from(
    value_from: dict | None,
    pod: dict,
    namespace: str,
    field_values: dict[str, str],
    secret_values: dict[tuple[str, str], str],
    config_map_values: dict[tuple[str, str], str],
) -> str | None:
    if not value_from:
        return ""  # neither value nor valueFrom: defined, empty
    if "fieldRef" in value_from:
        return _field_value(value_from["fieldRef"]["fieldPath"], pod, field_values)
    if "resourceFieldRef" in value_from:
        raise NotImplementedError("resourceFieldRef is not simulated")
    if "configMapKeyRef" in value_from:
        return _key_ref(value_from["configMapKeyRef"], config_map_values, "ConfigMap", namespace)
    if "secretKeyRef" in value_from:
        return _key_ref(value_from["secretKeyRef"], secret_values, "Secret", namespace)
    raise NotImplementedError(f"valueFrom {sorted(value_from)} is not simulated")


def _key_ref(ref: dict, values: dict[tuple[str, str], str], kind: str, namespace: str) -> str | None:
    name, key = ref["name"], ref["key"]
    if (name, key) in values:
        return values[name, key]
    if ref.get("optional"):
        return None
    if not any(held == name for held, _ in values):
        raise KeyError(f"{kind} {namespace}/{name} not found")
    raise KeyError(f"couldn't find key {key} in {kind} {namespace}/{name}")  # the kubelet's words


_SUBSCRIPTED = re.compile(r"metadata\.(labels|annotations)\['(.*)'\]")


def _field_value(path: str, pod: dict, field_values: dict[str, str]) -> str:
    """field_values first; else what the pod dict itself says (status.* and the node must be given)."""
    if path in field_values:
        return field_values[path]
    metadata, spec = pod.get("metadata", {}), pod.get("spec", {})
    from_pod = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
    }
    if from_pod.get(path) is not None:
        return from_pod[path]
    subscripted = _SUBSCRIPTED.fullmatch(path)
    if subscripted:
        # fieldpath.ExtractFieldPathAsString: a missing label or annotation is ""
        return metadata.get(subscripted[1], {}).get(subscripted[2], "")
    raise KeyError(f"fieldRef {path}: no value given in field_values and none in the pod")


def expand_command(args: list[str], env: list[tuple[str, str]]) -> list[str]:
    """ExpandContainerCommandAndArgs: each element expanded against the container's final env (the last
    value of a name wins, EnvVarsToMap). The kubelet's env there also holds device-plugin variables."""
    lookup = mapping_for(dict(env))
    return [expand(arg, lookup) for arg in args]


def expand_probe_command(command: list[str], container: dict) -> list[str]:
    """ExpandContainerCommandOnlyStatic, used for exec probes: only the spec's env entries, with their raw
    `value` (not expanded, and "" for a valueFrom entry), no envFrom."""
    lookup = mapping_for({entry["name"]: entry.get("value", "") for entry in container.get("env", [])})
    return [expand(part, lookup) for part in command]
