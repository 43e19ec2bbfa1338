"""KServe v0.20.0's admission webhooks, ported: what they refuse of the objects lwsgen writes for
platform kserve and kserve-isvc (and of hand edits to them, under `lwsgen validate`), with KServe's
own messages. Each rule names the kserve/kserve@v0.20.0 function and lines it follows. The schemas
in schemas/ hold the objects' shape; these hold what the webhooks decide."""

from collections.abc import Iterator
from typing import Any

from lwsgen import platforms
from lwsgen.problems import Finding

SIZE_ENV = ("TENSOR_PARALLEL_SIZE", "PIPELINE_PARALLEL_SIZE")
WORKER_CONTAINER = "worker-container"  # pkg/constants/constants.go#L500; utils/utils.go#L485-L495


def _workloads(spec: dict[str, Any]) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(path, workload) of the service's own workload and of spec.prefill, which KServe treats alike."""
    yield ("spec",), spec
    if isinstance(spec.get("prefill"), dict):
        yield ("spec", "prefill"), spec["prefill"]


def llm_inference_service(obj: dict[str, Any]) -> Iterator[Finding]:
    """pkg/apis/serving/v1alpha2/llm_inference_service_validation.go#L244-L333, validateParallelismConstraints:
    validateWorkloadParallelism of spec and of spec.prefill."""
    for at, workload in _workloads(obj["spec"]):
        yield from _workload_parallelism(at, workload)


def _workload_parallelism(at: tuple, workload: dict[str, Any]) -> Iterator[Finding]:
    par = workload.get("parallelism") or {}
    if not isinstance(par, dict):
        return
    data, local, pipeline = par.get("data") is not None, par.get("dataLocal") is not None, par.get("pipeline")
    if workload.get("worker") is not None and not (data or local or pipeline is not None):
        yield Finding(
            (*at, "worker"),
            "when worker is specified, parallelism must be configured for either data parallelism or pipeline "
            "parallelism",
        )
    if pipeline is not None and (data or local):
        why = "cannot set both pipeline parallelism and data parallelism (data or dataLocal) simultaneously"
        yield Finding((*at, "parallelism", "pipeline"), why)
    if data and not local:
        yield Finding((*at, "parallelism", "dataLocal"), "dataLocal must be set when data is set")
    if local and not data:
        yield Finding((*at, "parallelism", "data"), "data must be set when dataLocal is set")


def _templated(node: Any, at: tuple) -> Iterator[Finding]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _templated(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _templated(value, (*at, index))
    elif isinstance(node, str) and "{{" in node:
        yield Finding(at, "KServe renders this as a Go template (config_merge.go#L607-L722): write it without '{{'")


NO_MAIN = "no container named main: KServe's preset adds its own vllm serve container `main` beside these"


def lwsgen_pods(obj: dict[str, Any]) -> Iterator[Finding]:
    """What KServe would run besides the pods written: its presets merge into container `main`
    (config/llmisvcconfig/*.yaml); a template or worker without it gets the preset's own `vllm serve`
    container beside its engine."""
    spec = obj["spec"]
    for at, workload in _workloads(spec):
        for side in ("template", "worker"):
            pod = workload.get(side)
            if isinstance(pod, dict):
                names = [c.get("name") for c in pod.get("containers") or [] if isinstance(c, dict)]
                if "main" not in names:
                    yield Finding((*at, side, "containers"), NO_MAIN)
    yield from _templated(spec, ("spec",))


def _flag(args: list, flag: str) -> str | None:
    """The value given to --flag (`--flag value` or `--flag=value`) in an argument list."""
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return str(args[index + 1])
        if isinstance(arg, str) and arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
    return None


def _sizes_match(pod: Any, sizes: dict[str, Any], at: tuple, fields: str) -> Iterator[Finding]:
    """The engine's own flags (vLLM's) say the sizes KServe sizes the group from: a hand edit of one
    without the other is a group of one shape running an engine that waits for another."""
    containers = pod.get("containers") if isinstance(pod, dict) else None
    main = next((c for c in containers or [] if isinstance(c, dict)), None)
    args = [str(a) for a in (main or {}).get("args") or []]
    for flag, value in sizes.items():
        said = _flag(args, flag)
        if value is not None and said is not None and said != str(value):
            yield Finding(at, f"{fields} says {flag.removeprefix('--')} {value}, the engine's {flag} {said}")


def engine_sizes(obj: dict[str, Any]) -> Iterator[Finding]:
    """An LLMInferenceService's parallelism, and an InferenceService's workerSpec sizes, against the
    flags of the engine lwsgen wrote."""
    spec = obj["spec"]
    if obj["kind"] == "LLMInferenceService":
        for at, workload in _workloads(spec):
            par = workload.get("parallelism") or {}
            flags = {
                "--tensor-parallel-size": par.get("tensor"),
                "--pipeline-parallel-size": par.get("pipeline"),
                "--data-parallel-size": par.get("data"),
                "--data-parallel-size-local": par.get("dataLocal"),
            }
            yield from _sizes_match(workload.get("template"), flags, (*at, "parallelism"), "parallelism")
    elif obj["kind"] == "ServingRuntime":
        worker = spec.get("workerSpec") or {}
        flags = {
            "--tensor-parallel-size": worker.get("tensorParallelSize"),
            "--pipeline-parallel-size": worker.get("pipelineParallelSize"),
        }
        yield from _sizes_match(spec, flags, ("spec", "workerSpec"), "workerSpec")


def mp_gpus(obj: dict[str, Any]) -> Iterator[Finding]:
    """lwsgen's own: on KServe's mp backend the controller sets each pod's GPUs to tensorParallelSize
    (components/predictor.go#L759-L766, deployment_reconciler.go#L91-L134), over what the containers
    ask for: a pod sized otherwise runs an engine on GPUs it was not sized for."""
    spec = obj["spec"]
    annotations = spec.get("annotations") if isinstance(spec.get("annotations"), dict) else {}
    worker = spec.get("workerSpec")
    key, mp = platforms.EXECUTOR_BACKEND
    if annotations.get(key) != mp or not isinstance(worker, dict):
        return
    tensor = worker.get("tensorParallelSize", 1)
    sides = [
        (("spec", "containers"), spec.get("containers")),
        (("spec", "workerSpec", "containers"), worker.get("containers")),
    ]
    for at, containers in sides:
        for index, container in enumerate(containers or []):
            limits = (container.get("resources") or {}).get("limits") if isinstance(container, dict) else None
            gpus = {k: v for k, v in (limits or {}).items() if k in platforms.KNOWN_GPU_RESOURCES}
            for name, value in gpus.items():
                if str(value) != str(tensor):
                    message = (
                        f"KServe's mp backend gives each pod tensorParallelSize ({tensor}) GPUs, and this container "
                        f"asks for {value}: set {name} to {tensor}, or tensorParallelSize to the GPUs of a pod"
                    )
                    yield Finding((*at, index, "resources", "limits", name), message)


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
    for field in platforms.ISVC_SIZE_FIELDS:
        value = worker.get(field)
        if isinstance(value, int) and value < 1:
            yield Finding((*at, "workerSpec", field), f"{field} must be at least 1")


def serving_runtime(obj: dict[str, Any]) -> Iterator[Finding]:
    """pkg/webhook/admission/servingruntime/servingruntime_webhook.go#L210-L267, validateMultiNodeSpec;
    the worker container looked up by name (utils/utils.go#L485-L495)."""
    spec = obj["spec"]
    heads = [c for c in spec.get("containers") or [] if isinstance(c, dict) and c.get("name") == "kserve-container"]
    if spec.get("workerSpec") is not None and not heads:  # utils/utils.go#L485-L495
        yield Finding(("spec", "containers"), "failed to find kserve-container in ServingRuntime containers")
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
    for field in platforms.ISVC_SIZE_FIELDS:
        value = worker.get(field)
        if isinstance(value, int) and value < 1:
            yield Finding(("spec", "workerSpec", field), f"{field} must be at least 1")


def _both(*rules):
    def run(obj: dict[str, Any]) -> Iterator[Finding]:
        for rule in rules:
            yield from rule(obj)

    return run


RULES = {
    "LLMInferenceService": _both(llm_inference_service, lwsgen_pods, engine_sizes),
    "InferenceService": inference_service,
    "ServingRuntime": _both(serving_runtime, engine_sizes, mp_gpus),
}
