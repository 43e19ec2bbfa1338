"""Stage 3, derive: the typed profile -> the values of every output kind it emits, from the one
table of output kinds (kinds.py) and the runtime plugin's parts."""

from lwsgen import runtimes
from lwsgen.check.profile import Profile
from lwsgen.derive import delivery, kinds, naming
from lwsgen.derive.context import Context
from lwsgen.derive.model import Deployment
from lwsgen.derive.scheduling import placement


def context(profile: Profile) -> Context:
    plugin = runtimes.get(profile.runtime)
    parts = plugin.parts(profile)
    parts = parts._replace(scripts={**parts.scripts, **delivery.scripts(profile)})
    return Context(
        profile,
        plugin,
        runtimes.capabilities(profile),
        parts,
        naming.object_names(profile.name),
        placement(profile),
    )


def derive(profile: Profile, source: str) -> Deployment:
    """Profile (checked) -> Deployment: kind key -> template values, for every kind it emits."""
    ctx = context(profile)
    objects = {}
    for kind in kinds.KINDS:
        values = kind.build(ctx, kind)
        if values is not None:
            objects[kind.key] = values
    listed = tuple(sorted(kinds.BY_KEY[key].file for key in objects if kinds.BY_KEY[key].in_kustomization))
    objects[kinds.KUSTOMIZATION] = kinds.Kustomization(listed)
    return Deployment(profile, source, objects)
