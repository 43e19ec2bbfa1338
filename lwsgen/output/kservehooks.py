"""KServe v0.20.0's admission webhooks, ported: what they refuse of the objects lwsgen writes for
platform kserve and kserve-isvc (and of hand edits to them, under `lwsgen validate`), with KServe's
own messages. Each rule names the kserve/kserve@v0.20.0 function and lines it follows. The schemas
in schemas/ hold the objects' shape; these hold what the webhooks decide."""

from collections.abc import Iterator
from typing import Any

from lwsgen.problems import Finding

SIZE_ENV = ("TENSOR_PARALLEL_SIZE", "PIPELINE_PARALLEL_SIZE")
WORKER_CONTAINER = "worker-container"  # pkg/constants/constants.go#L500; utils/utils.go#L485-L495


def llm_inference_service(obj: dict[str, Any]) -> Iterator[Finding]:
    """pkg/apis/serving/v1alpha2/llm_inference_service_validation.go#L244-L333, validateParallelism."""
    spec = obj["spec"]
    par = spec.get("parallelism") or {}
    if not isinstance(par, dict):
        return
    data, local, pipeline = par.get("data") is not None, par.get("dataLocal") is not None, par.get("pipeline")
    if spec.get("worker") is not None and not (data or local or pipeline is not None):
        yield Finding(
            ("spec", "parallelism"),
            "when worker is specified, parallelism must be configured for either data parallelism or pipeline "
            "parallelism",
        )
    if pipeline is not None and (data or local):
        why = "cannot set both pipeline parallelism and data parallelism (data or dataLocal) simultaneously"
        yield Finding(("spec", "parallelism", "pipeline"), why)
    if data and not local:
        yield Finding(("spec", "parallelism", "dataLocal"), "dataLocal must be set when data is set")
    if local and not data:
        yield Finding(("spec", "parallelism", "data"), "data must be set when dataLocal is set")


def _size_env(container: Any, at: tuple) -> Iterator[Finding]:
    env = container.get("env") if isinstance(container, dict) else None
    for index, var in enumerate(env or []):
        if isinstance(var, dict) and var.get("name") in SIZE_ENV:
            yield Finding((*at, "env", index, "name"), f"{var['name']} must not be set as env: use workerSpec's field")


def inference_service(obj: dict[str, Any]) -> Iterator[Finding]:
    """pkg/apis/serving/v1beta1/inference_service_validation.go#L385-L442, validateMultiNodeVariables
    (messages: component.go#L46-L54); and the deployment mode without which the controller drops the
    worker (components/predictor.go#L224-L239)."""
    predictor = obj["spec"].get("predictor") or {}
    worker = predictor.get("workerSpec") if isinstance(predictor, dict) else None
    if not isinstance(worker, dict):
        return
    at = ("spec", "predictor")
    if len(worker.get("containers") or []) > 1:
        yield Finding((*at, "workerSpec", "containers"), "only one worker container is allowed for multinode")
    model = predictor.get("model") or {}
    yield from _size_env(model, (*at, "model"))
    uri = model.get("storageUri") if isinstance(model, dict) else None
    if not uri:
        yield Finding((*at, "model", "storageUri"), "StorageURI must be set for multinode enabled")
    elif not str(uri).startswith(("pvc://", "oci://")):
        yield Finding((*at, "model", "storageUri"), "Multinode only supports 'pvc' and 'oci' Storage Protocol")
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if annotations.get("serving.kserve.io/autoscalerClass") != "none":
        at_annotations = ("metadata", "annotations")
        yield Finding(at_annotations, "Multinode only supports 'none' autoscaler: serving.kserve.io/autoscalerClass")
    if annotations.get("serving.kserve.io/deploymentMode") not in ("Standard", "RawDeployment"):
        why = (
            "serving.kserve.io/deploymentMode must be Standard: in KServe's default mode (Serverless) the "
            "controller drops the worker"
        )
        yield Finding(("metadata", "annotations"), why)
    for field in ("tensorParallelSize", "pipelineParallelSize"):
        value = worker.get(field)
        if isinstance(value, int) and value < 1:
            yield Finding((*at, "workerSpec", field), f"{field} must be at least 1")


def serving_runtime(obj: dict[str, Any]) -> Iterator[Finding]:
    """pkg/webhook/admission/servingruntime/servingruntime_webhook.go#L210-L267, validateMultiNodeSpec;
    the worker container looked up by name (utils/utils.go#L485-L495)."""
    spec = obj["spec"]
    for index, container in enumerate(spec.get("containers") or []):
        if isinstance(container, dict) and container.get("name") == "kserve-container":
            yield from _size_env(container, ("spec", "containers", index))
    worker = spec.get("workerSpec")
    if not isinstance(worker, dict):
        return
    containers = worker.get("containers") or []
    if len(containers) > 1:
        yield Finding(("spec", "workerSpec", "containers"), "only one worker container is allowed for multinode")
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if WORKER_CONTAINER not in names:
        why = f"failed to find {WORKER_CONTAINER} in ServingRuntime containers: name the worker's container so"
        yield Finding(("spec", "workerSpec", "containers"), why)
    for field in ("tensorParallelSize", "pipelineParallelSize"):
        value = worker.get(field)
        if isinstance(value, int) and value < 1:
            yield Finding(("spec", "workerSpec", field), f"{field} must be at least 1")


RULES = {
    "LLMInferenceService": llm_inference_service,
    "InferenceService": inference_service,
    "ServingRuntime": serving_runtime,
}
