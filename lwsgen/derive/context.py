"""What every builder of an output kind reads: the typed profile, the runtime's parts, the derived
names and placement, and the metadata rule (labels, annotations, Argo CD sync wave)."""

from types import ModuleType
from typing import Any

from lwsgen import naming, platforms
from lwsgen.derive.model import Meta
from lwsgen.derive.scheduling import Placement
from lwsgen.profile import Profile
from lwsgen.records import Record
from lwsgen.runtimes.base import Capabilities, RuntimeParts

SYNC_WAVE_ANNOTATION = "argocd.argoproj.io/sync-wave"


class Workload(Record):
    """What lwsgen's objects select and target: one LeaderWorkerSet, or one role of a DisaggregatedSet
    (whose pods the controller labels with the set and role, naming.SET_NAME_LABEL, ROLE_LABEL)."""

    pods: dict[str, str]  # every pod of it
    leaders: dict[str, str]  # its leader pods
    peers: dict[str, str]  # the pods its pods take any port from: its own, or every role of the set
    target_labels: tuple[str, ...]  # pod labels the PodMonitor copies onto every series
    scale_target: tuple[str, str, str]  # apiVersion, kind, name of what an autoscaler scales
    set_name: str | None = None
    role: str | None = None
    # Pods that are no LeaderWorkerSet's (KServe's InferenceService Deployments): the pod labels that
    # name the group, and the ones only its leader carries (empty: a LeaderWorkerSet's, worker index 0)
    group_keys: tuple[str, ...] = ()
    leader_only: tuple[tuple[str, str], ...] = ()
    service: str | None = None  # a role of an LLMInferenceService (KServe P/D): the service's name
    more_peers: tuple[dict[str, str], ...] = ()  # and these (the other role of a KServe P/D service)

    @property
    def series(self) -> dict[str, str]:
        """The series of its pods, by the labels the PodMonitor copied (kube_pod_labels: ksm)."""
        keys = (naming.LWS_NAME_LABEL,) if self.set_name is None else (naming.SET_NAME_LABEL, naming.ROLE_LABEL)
        keys = self.group_keys or keys
        return {naming.series_label(k): self.pods[k] for k in keys}

    @property
    def role_label(self) -> str:
        """The pod label that names its role: the DisaggregatedSet's, or llm-d's on KServe's pods."""
        return platforms.LLMD_ROLE_LABEL if self.service is not None else naming.ROLE_LABEL

    @property
    def ksm(self) -> dict[str, str]:
        return {f"label_{k}": v for k, v in self.series.items()}


def single(name: str) -> Workload:
    pods = naming.own_pods(name)
    return Workload(
        pods,
        naming.leader_selector(name),
        pods,
        (naming.LWS_NAME_LABEL, naming.GROUP_INDEX_LABEL),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", name),
    )


def inference_service(name: str) -> Workload:
    """The head and worker Deployments KServe runs for an InferenceService (platforms.py): one group."""
    pods = {platforms.ISVC_LABEL: name}
    head = (platforms.ISVC_APP_LABEL, platforms.isvc_head_app(name))
    return Workload(
        pods,
        {**pods, head[0]: head[1]},
        pods,
        (platforms.ISVC_LABEL,),
        ("serving.kserve.io/v1beta1", "InferenceService", name),
        group_keys=(platforms.ISVC_LABEL,),
        leader_only=(head,),
    )


def role_of_llmisvc(name: str, role: str) -> Workload:
    """One role of an LLMInferenceService with spec.prefill: the LeaderWorkerSet KServe makes for it,
    whose pods take any port from either role's pods (NIXL's side channel and transfers, the sidecar's prefill)."""
    other = platforms.llmisvc_lws(name, "decode" if role == "prefill" else "prefill")
    lws = single(platforms.llmisvc_lws(name, role))
    return lws._replace(role=role, more_peers=(naming.own_pods(other),), service=name)


def role_of_set(set_name: str, role: str) -> Workload:
    return Workload(
        naming.role_pods(set_name, role),
        naming.role_leaders(set_name, role),
        naming.set_pods(set_name),
        (naming.LWS_NAME_LABEL, naming.GROUP_INDEX_LABEL, naming.SET_NAME_LABEL, naming.ROLE_LABEL),
        ("disaggregatedset.x-k8s.io/v1", "DisaggregatedSetRoleScaler", f"{set_name}-{role}"),
        set_name,
        role,
    )


class Context(Record):
    profile: Profile
    plugin: ModuleType
    caps: Capabilities  # the runtime's facts for the engine version the profile runs
    parts: RuntimeParts
    names: naming.Names
    placement: Placement
    workload: Workload
    roles: dict[str, "Context"] | None = None  # a disaggregated profile's set: each role's own context
    kv: Any = None  # runtimes.base.KvTransfer of a role of a disaggregated profile
    model_job: str | None = None  # a role's: the name of the set's model download Job (derive/delivery.py)

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
