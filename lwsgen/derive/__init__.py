"""Stage 3, derive: the typed profile -> the values of every output kind it emits, from the one
table of output kinds (kinds.py) and the runtime plugin's parts."""

from lwsgen import naming, platforms, runtimes
from lwsgen.derive import delivery, disaggregation, kinds
from lwsgen.derive.context import Context, inference_service, single
from lwsgen.derive.model import Deployment, Meta, Several
from lwsgen.derive.network import serving_port
from lwsgen.derive.scheduling import placement
from lwsgen.profile import Profile
from lwsgen.records import Record


class UserKind(Record):
    """What the template of a kind the profile's `templates:` adds sees as `v` (docs/escape-hatches.md)."""

    meta: Meta  # name <name>-<key>, the namespace, lwsgen's labels (component <key>) and annotations
    profile: Profile  # the checked profile, fields in snake_case (v.profile.node.gpus)
    names: naming.Names  # lws, service, launch, launcher, epp, nccl_test
    leader_selector: dict[str, str]  # the leader pods of this LWS
    pod_selector: dict[str, str]  # every pod of this LWS
    serving_port: int  # the leader's serving container port
    group_size: int


def context(profile: Profile) -> Context:
    plugin = runtimes.get(profile.runtime)
    if profile.platform == platforms.KSERVE:  # vLLM (check/platform.py), on the port KServe's pool targets
        parts = plugin.parts(platforms.engine_profile(profile), serving_port=platforms.LLMISVC_PORT)
        group = single(platforms.llmisvc_lws(profile.name))  # the LeaderWorkerSet KServe makes
    elif profile.platform == platforms.KSERVE_ISVC:
        parts, group = plugin.parts(profile), inference_service(profile.name)
    else:
        parts, group = plugin.parts(profile), single(profile.name)
    parts = parts._replace(scripts={**parts.scripts, **delivery.scripts(profile)})
    return Context(
        profile,
        plugin,
        runtimes.capabilities(profile),
        parts,
        naming.object_names(profile.name),
        placement(profile),
        group,
    )


def _user_kind(ctx: Context, key: str) -> UserKind:
    kind = kinds.Kind(key, (), "", "", lambda _ctx, _kind: None, key, wave=0)
    profile = ctx.profile
    return UserKind(
        ctx.meta(kind, f"{profile.name}-{key}"),
        profile,
        ctx.names,
        naming.leader_selector(profile.name),
        naming.own_pods(profile.name),
        serving_port(ctx).number,
        profile.group_size,
    )


def _per_role(ctx: Context, kind: kinds.Kind):
    """A per-role kind of a set: each role's object, the same object once."""
    items = []
    for role_ctx in ctx.roles.values():
        values = kind.build(role_ctx, kind)
        if values is not None and values not in items:
            items.append(values)
    return Several(tuple(items)) if items else None


def derive(profile: Profile, source: str, user_kinds: tuple[str, ...] = ()) -> Deployment:
    """Profile (checked) -> Deployment: kind key -> template values, for every kind it emits and
    every kind the profile's templates add (user_kinds). A profile with roles: what the set shares
    from its context, the per-role kinds from each role's (derive/disaggregation.py)."""
    ctx = disaggregation.set_context(profile) if profile.roles else context(profile)
    objects = {}
    for kind in kinds.KINDS:
        values = _per_role(ctx, kind) if kind.per_role and ctx.roles else kind.build(ctx, kind)
        if values is not None:
            objects[kind.key] = values
    for key in user_kinds:
        objects[key] = _user_kind(ctx, key)
    listed = tuple(sorted(kinds.file_of(key) for key in objects if kinds.listed(key)))
    objects[kinds.KUSTOMIZATION] = kinds.Kustomization(listed)
    return Deployment(profile, source, objects)
