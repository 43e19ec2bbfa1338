"""What every builder of an output kind reads: the typed profile, the runtime's parts, the derived
names and placement, and the metadata rule (labels, annotations, Argo CD sync wave)."""

from types import ModuleType

from lwsgen.check.profile import Profile
from lwsgen.derive import naming
from lwsgen.derive.model import Meta
from lwsgen.derive.scheduling import Placement
from lwsgen.records import Record
from lwsgen.runtimes.base import Capabilities, RuntimeParts

SYNC_WAVE_ANNOTATION = "argocd.argoproj.io/sync-wave"


class Context(Record):
    profile: Profile
    plugin: ModuleType
    caps: Capabilities  # the runtime's facts for the engine version the profile runs
    parts: RuntimeParts
    names: naming.Names
    placement: Placement

    def meta(
        self, kind, name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
    ) -> Meta:
        """Metadata of an object of `kind` (a kinds.Kind): our labels over the profile's, the
        profile's annotations, and the kind's sync wave when Argo CD waves are on."""
        p = self.profile
        merged = {**p.annotations, **(annotations or {})}
        if p.gitops.argocd.sync_waves and kind.wave is not None:
            merged[SYNC_WAVE_ANNOTATION] = str(kind.wave)
        return Meta(
            name,
            p.namespace,
            naming.labels(p.name, p.runtime, kind.component, {**p.labels, **(labels or {})}),
            merged or None,
        )

    @property
    def scripts_hash(self) -> str:
        """Changes whenever a launch script does, so the pods roll when their scripts change."""
        return naming.scripts_digest(self.parts.scripts)

    @property
    def api_access(self) -> bool:
        return self.parts.leader.api_access or self.parts.worker.api_access
