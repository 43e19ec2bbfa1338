"""platform: kserve-isvc. The ServingRuntime (its spec.workerSpec switches multi-node on) and the
InferenceService that names it, which KServe runs as a head Deployment <name>-predictor and a
worker Deployment <name>-predictor-worker (kserve/kserve@v0.20.0
pkg/controller/v1beta1/inferenceservice/components/predictor.go#L187-L239).

The engine is lwsgen's vLLM, in the profile's image, from lwsgen's own pod builder: the runtime
holds the containers (named as KServe looks them up) and their volumes, the InferenceService the
pod-level fields, the model's storageUri and the sizes (as fields: KServe's webhook refuses them as
env). lwsgen's launch scripts read the group size, the pod's index and the head's address that
LeaderWorkerSet would give. Over Ray (the default) they come from what KServe's controller injects:
RAY_NODE_COUNT and HEAD_SVC (components/predictor.go#L624-L677). With launch.mode native (KServe's
mp backend, the runtime's spec.annotations) the group is the head and one worker (check/platform.py),
so the size and index are known here, and both pods name the head's and the worker's headless
Services from their own labels (the service's name and generation), which KServe puts on them."""

from lwsgen import platforms
from lwsgen.derive import workload
from lwsgen.derive.context import Context
from lwsgen.derive.model import Container, EnvVar, Meta, Pod
from lwsgen.records import Record
from lwsgen.runtimes import launchers
from lwsgen.runtimes.base import SCRIPTS_MOUNT

MODEL_FORMAT = "huggingface"  # the format KServe's own multi-node runtime serves (runtime autoSelect off)
HEAD_ENV = 'export LWS_GROUP_SIZE="${RAY_NODE_COUNT:?set by KServe}"; exec /bin/bash "$0" "$@"'
NAMESPACE = EnvVar("POD_NAMESPACE", field_path="metadata.namespace")
# Two Deployments, not a group LeaderWorkerSet recreates: the worker watches the head (ray-worker.sh,
# await-leader.sh), and natively the head its worker
WATCH_EACH_OTHER = EnvVar("LWSGEN_WATCH_EACH_OTHER", "1")
WORKER_ENV = 'export LWS_LEADER_ADDRESS="${HEAD_SVC:?set by KServe}.${POD_NAMESPACE:?}.svc"; exec /bin/bash "$0" "$@"'


class ServingRuntime(Record):
    meta: Meta
    annotations: dict[str, str] | None  # spec.annotations, where KServe reads the executor backend
    model_format: str
    head: Container
    head_pod: Pod  # its volumes
    worker: Container
    worker_pod: Pod
    tensor: int
    pipeline: int


class InferenceService(Record):
    meta: Meta
    runtime: str
    model_format: str
    storage_uri: str
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    head: Pod  # pod-level fields and init containers
    worker: Pod
    tensor: int
    pipeline: int


class KServeIsvc(Record):
    runtime: ServingRuntime
    service: InferenceService


def _through(engine: Container, name: str, exported: str, env: tuple[EnvVar, ...] = ()) -> Container:
    """lwsgen's launch script run with what it reads from LeaderWorkerSet taken from KServe's env."""
    script = engine.command[-1]
    assert script.startswith(SCRIPTS_MOUNT), script  # a Ray launch script (vllm on Ray)
    return engine._replace(name=name, command=("/bin/bash", "-c", exported, script), env=(*engine.env, *env))


def _isvc_address(service) -> str:
    """A headless Service of this InferenceService, named from the pod's own labels (kubelet's $(VAR)),
    completed by the pod's DNS search path whatever the cluster's domain (as LeaderWorkerSet's addresses are)."""
    return f"{service('$(LWSGEN_ISVC_NAME)', '$(LWSGEN_ISVC_GENERATION)')}.$(POD_NAMESPACE).svc"


def _group_env(index: int) -> tuple[EnvVar, ...]:
    """What LeaderWorkerSet would give lwsgen's native launch (await-leader.sh), for a group of the
    head (index 0) and one worker (1); before the engine's own env, which the kubelet expands in order."""
    own = (
        EnvVar("LWSGEN_ISVC_NAME", field_path=f"metadata.labels['{platforms.ISVC_LABEL}']"),
        EnvVar("LWSGEN_ISVC_GENERATION", field_path=f"metadata.labels['{platforms.ISVC_GENERATION_LABEL}']"),
        NAMESPACE,
        EnvVar("LWS_GROUP_SIZE", "2"),
        EnvVar("LWS_WORKER_INDEX", str(index)),
        EnvVar("LWS_LEADER_ADDRESS", _isvc_address(platforms.isvc_head_service)),
        WATCH_EACH_OTHER,
    )
    if index == 0:  # the worker's Service: the head waits for and watches its one worker there (lib.sh)
        return (*own, EnvVar("LWSGEN_WORKER_ADDRESS", _isvc_address(platforms.isvc_worker_service)))
    return own


def _native(engine: Container, name: str, index: int) -> Container:
    ports = engine.ports if index else (*engine.ports, launchers.beacon_port())  # the worker watches the head's
    return engine._replace(name=name, env=(*_group_env(index), *engine.env), ports=ports)


def inferenceservice(ctx: Context, kind) -> KServeIsvc | None:
    profile = ctx.profile
    if profile.platform != platforms.KSERVE_ISVC:
        return None
    par = profile.parallelism
    leader = workload.role_pod(ctx, "leader", ctx.parts.leader)
    worker = workload.role_pod(ctx, "worker", ctx.parts.worker)
    if profile.launch.mode == "native":
        head = _native(leader.containers[0], platforms.ISVC_HEAD_CONTAINER, 0)
        joiner = _native(worker.containers[0], platforms.ISVC_WORKER_CONTAINER, 1)
        backend = dict((platforms.EXECUTOR_BACKEND,))
    else:
        head = _through(leader.containers[0], platforms.ISVC_HEAD_CONTAINER, HEAD_ENV)
        worker_env = (NAMESPACE, WATCH_EACH_OTHER)
        joiner = _through(worker.containers[0], platforms.ISVC_WORKER_CONTAINER, WORKER_ENV, worker_env)
        backend = None
    meta = ctx.meta(kind, profile.name)
    runtime = ServingRuntime(meta, backend, MODEL_FORMAT, head, leader, joiner, worker, par.tensor, par.pipeline)
    modes = dict((platforms.DEPLOYMENT_MODE, platforms.AUTOSCALER_CLASS))
    pod_labels = {k: v for k, v in leader.labels.items() if k in profile.pod_labels}
    service = InferenceService(
        ctx.meta(kind, profile.name, annotations=modes),
        profile.name,
        MODEL_FORMAT,
        platforms.model_uri(profile),
        pod_labels or None,
        leader.annotations,
        leader,
        worker,
        par.tensor,
        par.pipeline,
    )
    return KServeIsvc(runtime, service)
