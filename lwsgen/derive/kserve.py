"""platform: kserve. The LLMInferenceService KServe runs as the LeaderWorkerSet <name>-kserve-mn,
with lwsgen's own leader and worker pods as its template and worker, and the
LLMInferenceServiceConfig a pipeline-parallel group needs (KServe v0.20.0 ships none).

KServe merges a preset (kserve-config-llm-template, -worker-data-parallel) under the service's spec,
container `main` into container `main` (platforms.py). Whatever the preset sets and the pod would
not, the merge keeps, so the pods here say what would change how the engine runs: the command, the
probes' scheme, and that the container may run as root (the preset says runAsNonRoot). What the
merge cannot take back, the capabilities the data-parallel preset adds, is said at the profile
(check/platform.py). The engine serves on
KServe's port 8000, which the scheduler preset's InferencePool targets and the preset's liveness
probe checks. lwsgen's pods bring the model as on a LeaderWorkerSet (the claim mounted, or the hub id
downloaded by the engine), so KServe's own model handling is off (storageInitializer.enabled false:
workload_storage.go#L97-L104): no second download of a hub id into /mnt/models, no second mount of
the claim under a name a kustomize namePrefix would not follow in model.uri. Only a model the pods
cannot bring, an s3:// one, is KServe's to deliver (storageInitializer on: platforms.delivered_by_kserve).
With roles, decode is the service's own workload and prefill spec.prefill (docs/kserve.md)."""

from lwsgen import platforms
from lwsgen.derive import delivery, workload
from lwsgen.derive.context import Context
from lwsgen.derive.model import Meta, Pod, Probe
from lwsgen.records import Record
from lwsgen.runtimes.base import SCRIPTS_MOUNT, plain_env
from lwsgen.runtimes.launchers import DP_RPC_PORT

LIVENESS_FAILURES = 10  # the preset's own (config-llm-worker-data-parallel.yaml livenessProbe)
# The modelcar's image is on the node before the engine starts (its init container pulled it:
# pkg/utils/storage.go#L604-L607): the link follows within seconds of the sidecar's start.
MODELCAR_LINK_SECONDS = 600


class GatewayRef(Record):
    name: str
    namespace: str | None
    section_name: str | None


class Router(Record):
    """router: a managed HTTPRoute, the Gateway (the profile's parentRefs, or KServe's default) and
    KServe's scheduler (InferencePool and endpoint picker)."""

    gateway_refs: tuple[GatewayRef, ...]


class Parallelism(Record):
    """spec.parallelism: data with dataLocal (its ranks per pod), or pipeline, and tensor (None: not written)."""

    tensor: int
    pipeline: int | None = None
    data: int | None = None
    data_local: int | None = None
    data_rpc_port: int | None = None
    expert: bool | None = None


class WorkloadSpec(Record):
    """What the service's spec (decode, with prefill) and spec.prefill each say of their LeaderWorkerSet."""

    replicas: int
    parallelism: Parallelism
    labels: dict[str, str] | None  # the workload's, which KServe puts on its pods
    annotations: dict[str, str] | None
    template: Pod
    worker: Pod
    # the service's spec.storageInitializer.enabled, placed with its own workload (None: spec.prefill's)
    storage_initializer: bool | None = None


class LLMInferenceService(Record):
    meta: Meta
    model_uri: str
    model_name: str
    main: WorkloadSpec
    prefill: WorkloadSpec | None
    router: Router | None


class Preset(Record):
    meta: Meta


class KServeLLM(Record):
    service: LLMInferenceService
    presets: tuple[Preset, ...]  # the pipeline-parallel presets KServe v0.20.0 does not ship


def _parallelism(ctx: Context) -> Parallelism:
    """A group over several nodes (check/platform.py): data ranks on each pod, or a pipeline stage per pod."""
    profile = ctx.profile
    par = profile.parallelism
    if par.data > 1:  # lwsgen's --data-parallel-rpc-port, said to KServe too
        local = platforms.data_per_pod(profile)
        return Parallelism(par.tensor, None, par.data, local, DP_RPC_PORT, True if par.expert else None)
    return Parallelism(par.tensor, par.pipeline)


def _modelcar(engine):
    """Under KServe's modelcar (platforms.py): the launch waits for the model's link, with a HOME the
    engine can write as uid 1010 (vLLM's caches), unless the profile's env sets one."""
    command = ("/bin/bash", f"{SCRIPTS_MOUNT}/{delivery.SCRIPTS['modelcar']}", *engine.command)
    env = (
        plain_env("LWSGEN_MODEL_LINK", platforms.KSERVE_MODEL_DIR),
        plain_env("LWSGEN_MODEL_LINK_SECONDS", MODELCAR_LINK_SECONDS),
        *(() if any(e.name == "HOME" for e in engine.env) else (plain_env("HOME", platforms.MODELCAR_HOME),)),
    )
    return engine._replace(command=command, env=(*engine.env, *env))


def _main(pod: Pod, modelcar: bool = False) -> Pod:
    """The engine container named as KServe's presets name theirs, saying what the preset would
    otherwise keep: HTTP probes, root allowed unless the profile runs as a user, its capabilities."""
    engine = pod.containers[0]
    if modelcar:
        engine = _modelcar(engine)
    security = engine.security
    # add cannot be emptied: KServe's merge drops an empty list (check/platform.py warns of the preset's)
    security = security._replace(
        run_as_non_root=security.run_as_non_root or False,
        read_only_root=security.read_only_root or False,
    )

    def http(probe: Probe | None) -> Probe | None:
        return None if probe is None or probe.path is None else probe._replace(scheme="HTTP")

    readiness = http(engine.readiness_probe)
    liveness = None if readiness is None else readiness._replace(failure_threshold=LIVENESS_FAILURES)
    engine = engine._replace(
        name=platforms.LLMISVC_CONTAINER,
        security=security,
        startup_probe=http(engine.startup_probe),
        readiness_probe=readiness,
        liveness_probe=liveness if engine.readiness_probe is not None else None,
    )
    return pod._replace(containers=(engine, *pod.containers[1:]), labels={}, annotations=None)


def _router(ctx: Context) -> Router | None:
    gateway = ctx.profile.gateway
    if not gateway.enabled:
        return None
    refs = tuple(GatewayRef(r["name"], r.get("namespace"), r.get("sectionName")) for r in gateway.parent_refs)
    return Router(refs)


def _workload_spec(ctx: Context) -> WorkloadSpec:
    """A LeaderWorkerSet's worth of the service: the profile's, or one role's of a P/D profile."""
    profile = ctx.profile
    leader = workload.role_pod(ctx, "leader", ctx.parts.leader)
    worker = workload.role_pod(ctx, "worker", ctx.parts.worker)
    pod_labels = {k: v for k, v in leader.labels.items() if k in profile.pod_labels}
    modelcar = platforms.modelcar(profile)
    return WorkloadSpec(
        profile.replicas,
        _parallelism(ctx),
        pod_labels or None,
        leader.annotations,
        _main(leader, modelcar),
        _main(worker, modelcar),
    )


def _presets(ctx: Context, kind) -> tuple[Preset, ...]:
    """The unshipped pipeline-parallel preset each pipeline-parallel workload is merged with (platforms.py)."""
    workloads = ctx.roles or {None: ctx}  # the profile's own, or each role's
    names = {None: platforms.PIPELINE_PRESET, **platforms.PD_PIPELINE_PRESETS}
    return tuple(
        Preset(ctx.meta(kind, names[role]))
        for role, workload in workloads.items()
        if not platforms.data_parallel_preset(workload.profile)
    )


def llminferenceservice(ctx: Context, kind) -> KServeLLM | None:
    """The service: the profile's workload, or with roles decode as the service's own and prefill as
    spec.prefill (KServe makes <name>-kserve-mn and <name>-kserve-mn-prefill of them)."""
    profile = ctx.profile
    if profile.platform != platforms.KSERVE:
        return None
    # KServe's own model delivery only for what lwsgen's pods cannot bring themselves (platforms.py)
    delivered = platforms.delivered_by_kserve(profile)
    main = _workload_spec(ctx.roles["decode"] if ctx.roles else ctx)._replace(storage_initializer=delivered)
    prefill = _workload_spec(ctx.roles["prefill"]) if ctx.roles else None
    # exclusive topology and Kueue's queue: KServe copies them onto its LeaderWorkerSets (platforms.py)
    placed = ctx.placement
    meta = ctx.meta(kind, profile.name, labels=placed.lws_labels, annotations=placed.lws_annotations)
    service = LLMInferenceService(meta, platforms.model_uri(profile), profile.served_name, main, prefill, _router(ctx))
    return KServeLLM(service, _presets(ctx, kind))
