"""Stage 2, a profile with `roles`: every role checked as a profile of its own (check/roles.py),
then the rules of one DisaggregatedSet of them: the LeaderWorkerSet release that has the API, an
engine that moves KV cache between roles, roles that can exchange it, names that fit, and what the
DisaggregatedSet controller refuses (its webhook, kubernetes-sigs/lws v0.10.0
pkg/webhooks/disaggregatedset/disaggregatedset_webhook.go)."""

from __future__ import annotations

from collections.abc import Callable

from lwsgen import naming, platforms, registry, runtimes
from lwsgen.check import schema
from lwsgen.check.roles import RoleSource, role_data, role_names
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Finding, Problem, ProblemsError
from lwsgen.profile import FrozenDict, Profile, from_data
from lwsgen.registry import ROLES

MIN_LWS = (0, 10)  # disaggregatedset.x-k8s.io/v1 first shipped in LeaderWorkerSet v0.10.0


def check(src: Source, typed: Callable) -> tuple[Profile, list[Problem]]:
    problems, warnings, profiles = [], [], {}
    for role in role_names(src.data):
        try:
            profile, said = typed(RoleSource(src, role))
        except ProblemsError as err:
            problems += err.problems
            continue
        profiles[role] = profile
        warnings += said
    problems += set_problems(src)
    if problems:
        raise ProblemsError(list(dict.fromkeys(problems)))
    top = platforms.kserve_served_name(from_data(schema.with_defaults(src.data))._replace(roles=FrozenDict(profiles)))
    problems = [src.place(f) for f in registry.run(ROLES, ERROR, top)]
    if problems:
        raise ProblemsError(problems)
    warnings += [src.place(f._replace(severity=WARNING)) for f in registry.run(ROLES, WARNING, top)]
    return top, list(dict.fromkeys(warnings))


def _plugin(src: Source):
    return runtimes.get(src.data.get("runtime"))


def set_problems(src: Source) -> list[Problem]:
    """What no role's own check sees: the set's API, engine, escape hatches and placement."""
    data, out = src.data, []
    if data.get("platform") == platforms.KSERVE:
        out += _on_kserve(src)
    version = str((data.get("lws") or {}).get("version", "0.10"))
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) < MIN_LWS and data.get("platform") != platforms.KSERVE:
        message = (
            f"roles need a DisaggregatedSet, which LeaderWorkerSet 0.10 and newer serve (disaggregatedset.x-k8s.io/v1 "
            f"first shipped in v0.10.0); lws.version is {version}: upgrade the controller and set lws.version 0.10"
        )
        out.append(src.problem(("lws", "version"), message, "needs-newer-lws"))
    plugin = _plugin(src)
    if plugin is not None and plugin.kv_transfer is None:
        able = ", ".join(sorted(name for name, p in runtimes.REGISTRY.items() if p.kv_transfer is not None))
        message = (
            f"{plugin.name} has no prefill/decode disaggregation lwsgen can derive (no KV-cache transfer between "
            f"servers); runtimes with it: {able}"
        )
        out.append(src.problem(("runtime",), message, "no-disaggregation"))
    for field in ("patches", "templates"):
        if data.get(field):
            message = (
                f"{field} do not reach into a DisaggregatedSet's roles yet; with roles, use the pod fields "
                "(podAnnotations, containers, volumes, ...) and leader:/worker:, which every role takes"
            )
            out.append(src.problem((field,), message, "not-with-roles"))
    if (data.get("lws") or {}).get("partition") is not None:
        message = "the DisaggregatedSet controller rolls its roles out itself and refuses a partition: leave it out"
        out.append(src.problem(("lws", "partition"), message, "not-with-roles"))
    return out + _placement_problems(src)


# What a DisaggregatedSet has and an LLMInferenceService with spec.prefill does not: KServe makes one
# LeaderWorkerSet per role itself (workload_multi_node.go#L88-L110) and its decode preset brings the
# routing sidecar (platforms.py).
NOT_ON_KSERVE = {
    "slices": "KServe makes one LeaderWorkerSet per role, not slices of a DisaggregatedSet: leave it out",
    "placement": "KServe places each role's LeaderWorkerSet itself: leave it out (scheduling.exclusiveTopology "
    "reaches both)",
    "sidecarImage": "KServe's data-parallel decode preset brings llm-d's routing sidecar: leave it out (it names "
    "lwsgen's own sidecar, which only a pipeline-parallel decode role runs)",
}


def _on_kserve(src: Source) -> list[Problem]:
    """platform kserve: spec.prefill and the service's own workload as decode; no encode role."""
    out = []
    if "encode" in (src.data.get("roles") or {}):
        message = (
            "platform kserve has no equivalent: an LLMInferenceService has a prefill and a decode workload "
            "(spec.prefill and its own), no encoder: use platform lws"
        )
        out.append(src.problem(("roles", "encode"), message, "not-on-platform"))
    decode = role_data(src.data, "decode")[0] if "decode" in (src.data.get("roles") or {}) else {}
    pipelined = ((decode.get("parallelism") or {}).get("data") or 1) == 1  # lwsgen's sidecar: derive/disaggregation.py
    for key, why in NOT_ON_KSERVE.items():
        if key == "sidecarImage" and pipelined:
            continue
        if key in (src.data.get("disaggregation") or {}):
            message = f"platform kserve has no equivalent: {why}"
            out.append(src.problem(("disaggregation", key), message, "not-on-platform"))
    return out


def _placement_problems(src: Source) -> list[Problem]:
    placement = (src.data.get("disaggregation") or {}).get("placement") or {}
    kind = placement.get("type", "None")
    if kind == "None":
        return []
    out = []
    if not placement.get("topologyKey"):
        message = f"placement type {kind} needs topologyKey, the node label that names a domain"
        out.append(src.problem(("disaggregation", "placement", "type"), message, "missing-field"))
    if (src.data.get("scheduling") or {}).get("exclusiveTopology"):
        message = (
            f"the DisaggregatedSet webhook refuses LeaderWorkerSet exclusive topology together with placement type "
            f"{kind} (both place groups in domains, so a slice would never schedule): keep one"
        )
        out.append(src.problem(("scheduling", "exclusiveTopology"), message, "conflict"))
    return out


@registry.rule("needs-gateway", "needs-newer-engine", "needs-prefix-cache", "not-supported", scope=ROLES)
def runtime_role_rules(top: Profile) -> list[Finding]:
    """What the runtime needs of a profile with roles (its contract's kv_problems): an engine version
    with the KV transfer the roles use, and the front door its prefill/decode routing runs behind."""
    return runtimes.get(top.runtime).kv_problems(top)


@registry.rule("kv-layout", scope=ROLES, severity=WARNING)
def runtime_role_warnings(top: Profile) -> list[Finding]:
    """What the runtime says of valid roles (its contract's warnings_of_roles)."""
    return runtimes.get(top.runtime).warnings_of_roles(top)


@registry.rule("kv-mismatch", scope=ROLES)
def kv_layout_matches(top: Profile) -> list[Finding]:
    """The engine flags that set the KV cache layout (the runtime's kv_matching) are equal on every role
    that exchanges KV cache, or one role cannot read what the other writes."""
    return matching_flag_problems(top, runtimes.get(top.runtime).kv_matching)


@registry.rule("derived-flag", scope=ROLES)
def role_flags_not_derived(top: Profile) -> list[Finding]:
    """No role's extraArgs repeats a flag lwsgen derives for each role from roles and disaggregation."""
    return _derived_flag_problems(top, runtimes.get(top.runtime))


@registry.rule("not-with-roles", "replicas-mismatch", scope=ROLES)
def role_scaling(top: Profile) -> list[Finding]:
    """How roles scale is what the DisaggregatedSet takes: one slice while a role autoscales, no role
    scaling to zero or on the endpoint picker's pool-wide metrics, fixed replicas all zero or none."""
    out, roles = [], top.roles
    if top.platform == platforms.KSERVE:  # no DisaggregatedSet; KServe refuses the autoscalers (check/platform.py)
        return out
    scaled = [role for role, p in roles.items() if p.autoscaling.enabled]
    if scaled and top.disaggregation.slices > 1:
        message = (
            "the DisaggregatedSet webhook refuses slices above 1 while a role scales through its "
            f"DisaggregatedSetRoleScaler ({', '.join(scaled)} autoscale): one slice, or fixed replicas"
        )
        out.append(Finding(("disaggregation", "slices"), message, "not-with-roles"))
    for role in scaled:
        scaling = roles[role].autoscaling
        if scaling.to_zero:
            message = (
                "a role cannot scale to zero: the other role would hold requests no group of this one can finish; "
                "minReplicas and idleReplicas at least 1"
            )
            out.append(Finding(("roles", role, "autoscaling", "minReplicas"), message, "not-with-roles"))
        if scaling.metric.startswith("router-"):
            message = (
                f"{scaling.metric} is the endpoint picker's average over its whole pool, prefill and decode alike; "
                "a role scales on its own engines' records: queue-length, kv-cache-usage or gpu-utilization"
            )
            out.append(Finding(("roles", role, "autoscaling", "metric"), message, "not-with-roles"))
    fixed = {role: p.replicas for role, p in roles.items() if not p.autoscaling.enabled}
    if fixed and 0 in fixed.values() and any(fixed.values()):
        message = "the DisaggregatedSet takes fixed replicas all zero or all above zero (its CRD rule): " + ", ".join(
            f"{role} {n}" for role, n in fixed.items()
        )
        out.append(Finding(("roles",), message, "replicas-mismatch"))
    return out


@registry.rule("name-too-long", scope=ROLES)
def role_names_fit(top: Profile) -> list[Finding]:
    """The name leaves room for the names the DisaggregatedSet gives each role's LeaderWorkerSet, its
    pods' revision labels and its Service."""
    if top.platform == platforms.KSERVE:
        return _kserve_names_fit(top)
    out = []
    for role, profile in top.roles.items():
        child = naming.child_lws_name(top.name, top.disaggregation.slices - 1, role)
        budget = naming.name_budget(profile.highest_group_index)
        limit = min(budget, naming.DNS_LABEL - len(naming.ROLE_SERVICE_SUFFIX))
        if len(child) > limit:
            message = (
                f"{len(top.name)} characters is too long with roles: the DisaggregatedSet names role {role}'s "
                f"LeaderWorkerSet '<name>-<slice>-<8-char revision>-{role}' ({len(child)} characters here), which "
                f"must stay within {limit} (its pods' StatefulSet revision labels and its '-prv' Service)"
            )
            out.append(Finding(("name",), message, "name-too-long"))
            break
    return out


def _kserve_names_fit(top: Profile) -> list[Finding]:
    """The LeaderWorkerSets KServe names <name>-kserve-mn and <name>-kserve-mn-prefill (platforms.py)."""
    for role, profile in top.roles.items():
        made = platforms.llmisvc_lws(top.name, role)
        limit = naming.name_budget(profile.highest_group_index) - (len(made) - len(top.name))
        if len(top.name) > limit:
            message = (
                f"{len(top.name)} characters is too long on platform kserve with roles: at most {limit} fit the "
                f"LeaderWorkerSet {platforms.llmisvc_lws('<name>', role)} KServe makes"
            )
            return [Finding(("name",), message, "name-too-long")]
    return []


def _derived_flag_problems(top: Profile, plugin) -> list[Finding]:
    out = []
    for role, profile in top.roles.items():
        for index, arg in enumerate(profile.model.extra_args):
            flag = str(arg).split("=", 1)[0]
            if flag in plugin.kv_flags:
                shared = len(top.model.extra_args)
                path = ("model", "extraArgs", index) if index < shared else ("roles", role, "extraArgs", index - shared)
                message = f"{flag} is derived for each role from roles and disaggregation: leave it out"
                out.append(Finding(path, message, "derived-flag"))
    return list(dict.fromkeys(out))


def _flag_value(args: tuple, flag: str) -> tuple[int, str] | None:
    """(index, value) of flag in args (--flag value or --flag=value), the last one if repeated."""
    found = None
    for index, arg in enumerate(args):
        text = str(arg)
        if text == flag and index + 1 < len(args):
            found = (index, str(args[index + 1]))
        elif text.startswith(flag + "="):
            found = (index, text.split("=", 1)[1])
    return found


def _where_set(values: dict[str, tuple[int, str] | None], shared: int) -> tuple:
    """Where a differing flag is written: the first role that sets it (or its value) in its own
    extraArgs, else the shared model.extraArgs (a flag there whose value a role's args supply)."""
    for role, found in values.items():
        if found and found[0] >= shared:
            return ("roles", role, "extraArgs", found[0] - shared)
    for role, found in values.items():
        if found and found[0] + 1 >= shared:
            return ("roles", role, "extraArgs", 0)
    index = next((v[0] for v in values.values() if v), 0)
    return ("model", "extraArgs", index)


def matching_flag_problems(top: Profile, flags: tuple[str, ...]) -> list[Finding]:
    """Engine flags that must be equal on every role (the KV cache layout both sides agree on)."""
    out, shared = [], len(top.model.extra_args)
    for flag in flags:
        # the KV cache moves from prefill to decode; an encoder hands embeddings over, not KV pages
        values = {role: _flag_value(p.model.extra_args, flag) for role, p in top.roles.items() if role != "encode"}
        said = {role: (v[1] if v else None) for role, v in values.items()}
        if len(set(said.values())) < 2:
            continue
        listed = ", ".join(f"{r} {v if v is not None else '(engine default)'}" for r, v in said.items())
        message = (
            f"{flag} must be the same on every role, or the KV cache one role writes is not the layout the other "
            f"reads: {listed}"
        )
        out.append(Finding(_where_set(values, shared), message, "kv-mismatch"))
    return out
