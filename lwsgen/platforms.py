"""What KServe v0.20.0 does with the objects lwsgen writes for `platform: kserve` (an
LLMInferenceService) and `platform: kserve-isvc` (an InferenceService with a ServingRuntime that
carries workerSpec): the names and labels its controller gives what it creates, the group size and
GPU arithmetic it recomputes, and the model URI forms it takes. Facts from kserve/kserve@v0.20.0
(commit 1fb78105), cited per line; ../shared/reference/kserve_facts.md has them with context.
Check (refusals) and derive (the objects) both read them from here, so they cannot disagree."""

from lwsgen.profile import Profile

LWS, KSERVE, KSERVE_ISVC = "lws", "kserve", "kserve-isvc"

# --- LLMInferenceService (pkg/controller/v1alpha2/llmisvc) ---
# The LeaderWorkerSet KServe makes: <name>-kserve-mn (workload_multi_node.go#L138-L186, #L663-L669).
LLMISVC_LWS_SUFFIX = "-kserve-mn"
# Every preset's engine container is `main`; the service's template merges into it by that name
# (config/llmisvcconfig/*.yaml; kserve_facts.md b.2).
LLMISVC_CONTAINER = "main"
# The workload pods' labels the scheduler preset's InferencePool selects on
# (config/llmisvcconfig/config-llm-scheduler.yaml#L1-L24): the pool's targetPorts is [8000].
LLMISVC_PART_OF = "llminferenceservice"
LLMISVC_WORKLOAD = "workload"
LLMISVC_PORT = 8000
# What config-llm-worker-data-parallel.yaml adds to container main's capabilities; the service cannot
# take them back: KServe merges through Go structs (config_merge.go#L779-L827), whose omitempty drops an
# empty list (found on the real controller, make test-cluster).
DATA_PARALLEL_CAPABILITIES = ("IPC_LOCK", "SYS_RAWIO", "NET_RAW")
DATA_PARALLEL_SHM = "8Gi"  # its dshm emptyDir's sizeLimit, which a pod without one keeps
KSERVE_MODEL_DIR = "/mnt/models"  # where KServe mounts a storageUri (constants.DefaultModelLocalMountPath)
# Model URIs only KServe delivers, into KSERVE_MODEL_DIR of container main on every pod (storageInitializer
# on; workload_storage.go#L131-L202): s3:// by its storage initializer (#L404-L457), oci:// by its
# modelcar, a sidecar that links KSERVE_MODEL_DIR into the image's /models once it runs, after main has
# started, with main on an emptyDir at /mnt, as uid 1010 where configured (pkg/utils/storage.go#L564-L613;
# enableModelcar and uidModelcar 1010 in config/configmap/inferenceservice.yaml#L659-L662). lwsgen's engine reads
# KSERVE_MODEL_DIR; under a modelcar it waits for the link (await-modelcar.sh) with a HOME it can write.
KSERVE_DELIVERED = ("s3://", "oci://")
MODELCAR_MOUNT = "/mnt"  # the emptyDir KServe mounts at KSERVE_MODEL_DIR's parent for the link
MODELCAR_HOME = "/tmp"  # writable by any user: HOME for an engine run as uid 1010
# No preset for pipeline parallelism ships in v0.20.0 (config_merge.go#L90-L95, absent from
# config/llmisvcconfig/kustomization.yaml#L6-L16): without this config reconciliation stops with
# ConfigNotFound (config_merge.go#L157-L160); it is looked up in the service's namespace first
# (config_merge.go#L741-L758).
PIPELINE_PRESET = "kserve-config-llm-worker-pipeline-parallel"
# With spec.prefill (P/D) the pipeline-parallel presets are the prefill and decode variants, unshipped too
# (config_merge.go#L228-L265): role -> the preset a pipeline-parallel role of that name needs.
PD_PIPELINE_PRESETS = {
    "prefill": "kserve-config-llm-prefill-worker-pipeline-parallel",
    "decode": "kserve-config-llm-decode-worker-pipeline-parallel",
}
# P/D: KServe makes <name>-kserve-mn-prefill for spec.prefill (workload_multi_node.go#L663-L669) and labels
# every pod of a workload with its role, `both` without prefill (#L149-L159, #L294-L300; constants.go#L431-L434).
LLMISVC_PREFILL_SUFFIX = "-prefill"
LLMD_ROLE_LABEL = "llm-d.ai/role"
# The decode data-parallel preset puts llm-d's routing sidecar on the leader's port 8000 (an init container
# named llm-d-routing-sidecar, restartPolicy Always) and sends it on to vLLM on 8001
# (config/llmisvcconfig/config-llm-decode-worker-data-parallel.yaml#L9-L70, main on 8001 #L71-L76): a
# decode engine serves on 8001 behind a sidecar on 8000, KServe's or (no preset for a pipeline) lwsgen's.
LLMISVC_DECODE_ENGINE_PORT = 8001
# The Gateway a router with no gateway.refs attaches to: ingress.kserveIngressGateway in the
# inferenceservice-config KServe installs (config/configmap/inferenceservice.yaml#L307, #L690).
LLMISVC_DEFAULT_GATEWAY = ("kserve", "kserve-ingress-gateway")

# --- InferenceService + ServingRuntime (pkg/controller/v1beta1/inferenceservice) ---
ISVC_HEAD_CONTAINER = "kserve-container"  # pkg/constants/constants.go#L493
ISVC_WORKER_CONTAINER = "worker-container"  # constants.go#L500; looked up by name (utils/utils.go#L485-L495)
# Without Standard the ISVC resolves to the kustomize default Serverless, whose branch drops the
# worker (components/predictor.go#L224-L239, config/configmap/inferenceservice.yaml#L743-L746).
DEPLOYMENT_MODE = ("serving.kserve.io/deploymentMode", "Standard")
# "Multinode only supports 'none' autoscaler" (inference_service_validation.go#L415-L417).
AUTOSCALER_CLASS = ("serving.kserve.io/autoscalerClass", "none")
# Head pods app=isvc.<name>-predictor, workers app=isvc.<name>-predictor-worker
# (reconcilers/deployment/deployment_reconciler.go; constants.go#L806-L808).
ISVC_APP_LABEL = "app"
# On head and worker pods both (components/predictor.go#L498-L512, #L533-L545).
ISVC_LABEL = "serving.kserve.io/inferenceservice"
# The pods' generation label, in the Services' names: <name>-head-<generation> selects the head,
# <name>-workers-<generation> the workers, both publishing not-ready addresses
# (constants.go#L62, #L765-L774; reconcilers/service/service_reconciler.go#L195-L240).
ISVC_GENERATION_LABEL = "isvc.generation"
# In the runtime's spec.annotations, vLLM's own multi-node launch in place of Ray: then the group is
# pipeline pods of tensor GPUs each (constants.go#L743-L744; components/predictor.go#L608-L620, #L759-L766).
EXECUTOR_BACKEND = ("multinode/executor-backend", "mp")
# The group's sizes, as workerSpec fields of the runtime and the InferenceService (the service's
# taken over the runtime's: components/predictor.go#L561-L576).
ISVC_SIZE_FIELDS = ("tensorParallelSize", "pipelineParallelSize")
# GPU resource names the webhook knows without an annotation (constants.go#L309-L322).
KNOWN_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "habana.ai/gaudi")


def llmisvc_lws(name: str, role: str | None = None) -> str:
    """The LeaderWorkerSet KServe makes: of the service (decode, with prefill), or of its prefill role."""
    return f"{name}{LLMISVC_LWS_SUFFIX}{LLMISVC_PREFILL_SUFFIX if role == 'prefill' else ''}"


def llmisvc_workload_labels(name: str) -> dict[str, str]:
    """What KServe's LLMInferenceService controller puts on every pod of its workload, leader and
    worker (the labels the scheduler preset's pool selects: config-llm-scheduler.yaml#L1-L24)."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": LLMISVC_PART_OF,
        "kserve.io/component": LLMISVC_WORKLOAD,
    }


def llmisvc_scheduler_labels(name: str) -> dict[str, str]:
    """The labels of the endpoint picker's pods KServe runs for router.scheduler
    (pkg/controller/v1alpha2/llmisvc/scheduler.go#L1623-L1629, SchedulerLabels)."""
    return {
        "app.kubernetes.io/component": "llminferenceservice-router-scheduler",
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": LLMISVC_PART_OF,
    }


def isvc_head_app(name: str) -> str:
    return f"isvc.{name}-predictor"


def isvc_worker_app(name: str) -> str:
    return f"isvc.{name}-predictor-worker"


def isvc_head_service(name: str, generation: str) -> str:
    return f"{name}-head-{generation}"


def isvc_worker_service(name: str, generation: str) -> str:
    return f"{name}-workers-{generation}"


def data_per_pod(profile: Profile) -> int:
    """vLLM data-parallel ranks on one pod: the pod's GPUs over each rank's tensor x pipeline."""
    par = profile.parallelism
    return max(profile.gpus_per_pod // (par.tensor * par.pipeline), 1)


def llmisvc_size(profile: Profile) -> int:
    """The LeaderWorkerSet size KServe computes from the parallelism lwsgen writes
    (v1alpha2/llm_inference_service_types_func.go#L102-L117): data / dataLocal with integer
    division where data is set, else pipeline; tensor never counts."""
    par = profile.parallelism
    if par.data > 1:
        return max(par.data // data_per_pod(profile), 1)
    return par.pipeline


def data_parallel_preset(profile: Profile) -> bool:
    """KServe merges its shipped data-parallel preset (-worker-data-parallel, and with prefill its
    prefill/decode variants, the decode one with the routing sidecar) under a data-parallel workload;
    a pipeline-parallel one gets the unshipped preset lwsgen writes (PIPELINE_PRESET, PD_PIPELINE_PRESETS)."""
    return profile.parallelism.data > 1


def delivered_by_kserve(profile: Profile) -> bool:
    """model.path an s3:// or oci:// URI on platform kserve: KServe puts the weights in KSERVE_MODEL_DIR."""
    model = profile.model
    return profile.platform == KSERVE and model.source is None and model.path.startswith(KSERVE_DELIVERED)


def modelcar(profile: Profile) -> bool:
    """An oci:// model KServe's modelcar brings (KSERVE_DELIVERED)."""
    return delivered_by_kserve(profile) and profile.model.path.startswith("oci://")


def kserve_served_name(profile: Profile) -> Profile:
    """The engine reads KSERVE_MODEL_DIR where KServe delivers the model: it serves under KServe's
    default model.name, the service's name (v1alpha2/llm_inference_service_defaults.go#L31-L34), not that
    path, unless model.servedName says otherwise."""
    if not delivered_by_kserve(profile) or profile.model.served_name:
        return profile
    return profile._replace(model=profile.model._replace(served_name=profile.name))


def engine_profile(profile: Profile) -> Profile:
    """The profile the engine's command is built from: its model in KSERVE_MODEL_DIR where KServe
    delivers it, else the profile itself."""
    if not delivered_by_kserve(profile):
        return profile
    return profile._replace(model=profile.model._replace(path=KSERVE_MODEL_DIR))


def is_hub_id(path: str) -> bool:
    """model.path written as a Hub repository id (org/name), not a file system path."""
    return not path.startswith(("/", ".")) and path.count("/") == 1


def model_uri(profile: Profile) -> str | None:
    """model.uri for KServe: the s3:// or oci:// URI KServe delivers, pvc://<claim>/<path in it> for
    weights on the profile's claim, hf://<id> for a hub id; None when the weights are elsewhere (baked
    into the image)."""
    if delivered_by_kserve(profile):
        return profile.model.path
    path, storage, source = profile.model.path, profile.storage, profile.model.source
    if storage is not None and source is not None:  # the snapshot model.source downloads into the claim
        return f"pvc://{storage.claim_name}/{source.repo}/{source.revision}"
    if storage is not None:
        root = storage.mount_path.rstrip("/")
        if path == root:
            return f"pvc://{storage.claim_name}"
        if path.startswith(f"{root}/"):
            return f"pvc://{storage.claim_name}/{path[len(root) + 1 :]}"
    if is_hub_id(path):
        return f"hf://{path}"
    return None
