"""platform: kserve and kserve-isvc. What KServe v0.20.0's webhooks refuse, what its controller
silently drops or recomputes differently, and the profile fields that have no KServe equivalent:
each said at the profile line, naming the platform and the layout that works (docs/kserve.md).
The facts are lwsgen/platforms.py's, cited there."""

from __future__ import annotations

from typing import Any

from lwsgen import platforms, registry
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

KSERVE, ISVC = platforms.KSERVE, platforms.KSERVE_ISVC
BOTH = (KSERVE, ISVC)
SERVICES = "KServe creates the Services in front of the pods itself"
NOT_ITS_WORKLOAD = "KServe's controller creates the workload, so lwsgen cannot place this on it"

# (field path, the platforms it has no equivalent on, why, and what to do); a field counts when the
# profile (or a base it extends) writes it, whatever its value, except where a value is given: then
# only a field with another value.
UNSUPPORTED: tuple[tuple[tuple[str, ...], tuple[str, ...], Any, str], ...] = (
    (
        ("autoscaling", "enabled"),
        (KSERVE,),
        False,
        "an LLMInferenceService scales through its own spec.scaling (KServe's workload variant autoscaler), "
        "which lwsgen does not write: leave autoscaling off and set replicas",
    ),
    (
        ("autoscaling", "enabled"),
        (ISVC,),
        False,
        "KServe's webhook refuses an autoscaler on a multi-node InferenceService (\"Multinode only supports "
        "'none' autoscaler\", inference_service_validation.go#L415-L417): leave autoscaling off",
    ),
    (("service", "type"), BOTH, "ClusterIP", f"{SERVICES}: leave service.type out"),
    (("service", "port"), BOTH, None, f"{SERVICES}: leave service.port out"),
    (("service", "annotations"), BOTH, None, f"{SERVICES}: leave service.annotations out"),
    (("service", "extraPorts"), BOTH, None, f"{SERVICES}: leave service.extraPorts out"),
    (("service", "loadBalancerSourceRanges"), BOTH, None, f"{SERVICES}: leave it out"),
    (("service", "externalTrafficPolicy"), BOTH, None, f"{SERVICES}: leave it out"),
    (
        ("gateway", "enabled"),
        (ISVC,),
        False,
        "an InferenceService has no inference gateway (InferencePool, endpoint picker): use platform kserve, "
        "whose router gives one, or leave the gateway off",
    ),
    (("gateway", "hostnames"), (KSERVE,), None, "KServe's managed HTTPRoute takes no hostnames: leave them out"),
    (("gateway", "path"), (KSERVE,), None, "KServe's managed HTTPRoute matches its own paths: leave it out"),
    (("gateway", "requestTimeout"), (KSERVE,), None, "KServe's managed HTTPRoute sets its own timeouts"),
    (("gateway", "failureMode"), (KSERVE,), None, "KServe's scheduler preset configures the pool's picker"),
    (("gateway", "endpointPicker"), (KSERVE,), None, "KServe runs its own endpoint picker (router.scheduler)"),
    (("scheduling", "scheduler"), BOTH, "default", f"{NOT_ITS_WORKLOAD} (gang scheduling annotations)"),
    (("scheduling", "queue"), BOTH, None, NOT_ITS_WORKLOAD),
    (("scheduling", "queueCapacity"), BOTH, None, NOT_ITS_WORKLOAD),
    (("scheduling", "podGroupAnnotations"), BOTH, None, NOT_ITS_WORKLOAD),
    (("scheduling", "exclusiveTopology"), BOTH, None, f"{NOT_ITS_WORKLOAD} (the LeaderWorkerSet's annotation)"),
    (("scheduling", "requiredTopology"), BOTH, None, f"{NOT_ITS_WORKLOAD} (the LeaderWorkerSet's annotation)"),
    (("scheduling", "networkTopology"), BOTH, None, NOT_ITS_WORKLOAD),
    *(
        (("lws", key), BOTH, None, f"{NOT_ITS_WORKLOAD}: KServe sets the LeaderWorkerSet's policies")
        for key in ("restartPolicy", "startupPolicy", "maxUnavailable", "maxSurge", "partition")
    ),
    (
        ("replicas",),
        (ISVC,),
        1,
        "a multi-node InferenceService runs exactly one head (one group): use platform kserve for several groups",
    ),
    (
        ("launch", "mode"),
        (ISVC,),
        "ray",
        "the worker Deployment's pods have no node rank for vLLM's native launch (--node-rank), so lwsgen "
        "forms an InferenceService's group with Ray: leave launch.mode out",
    ),
)


def _written(data: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return False, None
        data = data[key]
    return True, data


def _unsupported(profile: Profile, src: Source) -> list[Problem]:
    out = []
    for path, where, allowed, why in UNSUPPORTED:
        written, value = _written(src.data, path)
        if profile.platform in where and written and (allowed is None or value != allowed):
            message = f"platform {profile.platform} has no equivalent: {why}"
            out.append(src.problem(path, message, "not-on-platform"))
    return out


def _llmisvc_layout(profile: Profile, src: Source) -> list[Problem]:
    """An LLMInferenceService's group is data / dataLocal pods, or pipeline pods; KServe's webhook
    (v1alpha2/llm_inference_service_validation.go#L244-L333) refuses pipeline with data."""
    par, gpus = profile.parallelism, profile.node.gpus
    if par.data > 1 and par.pipeline > 1:
        message = (
            "KServe's webhook refuses pipeline with data parallelism on an LLMInferenceService: use data "
            "(with tensor) or pipeline, not both"
        )
        return [src.problem(("parallelism", "pipeline"), message, "kserve-refuses")]
    if profile.group_size == 1:
        message = (
            "one pod holds this group: KServe runs a one-pod LLMInferenceService as a Deployment from its "
            "single-node presets, not the LeaderWorkerSet lwsgen writes templates for (and ignores "
            "parallelism.pipeline there, kserve/kserve#6044); use platform lws, or a layout over several nodes"
        )
        return [src.problem(("parallelism",), message, "not-on-platform")]
    if par.data > 1:
        return []  # data / dataLocal pods, as lwsgen's group (check/sizing.py keeps them whole)
    if par.tensor > gpus:
        if par.pipeline == 1:
            layout = f"pipeline {par.tensor // gpus} with tensor {gpus}" if par.tensor % gpus == 0 else ""
            message = (
                f"tensor parallelism across nodes alone ({par.tensor} GPUs over {gpus}-GPU nodes) cannot be "
                "expressed on an LLMInferenceService: KServe sizes the group from data or pipeline only and "
                "would start one pod that waits for the rest forever (kserve/kserve#4946); use "
                f"{layout or 'pipeline parallelism (tensor = node.gpus)'}, or data parallelism with expert, "
                "or platform lws"
            )
            return [src.problem(("parallelism", "tensor"), message, "kserve-refuses")]
    if par.tensor != gpus and par.data == 1:
        message = (
            f"an LLMInferenceService puts one pipeline stage on each pod (group size = pipeline = {par.pipeline}), "
            f"so tensor must be the node's GPUs ({gpus}), not {par.tensor}: set tensor {gpus} and pipeline "
            f"{profile.world_size // gpus}"
        )
        return [src.problem(("parallelism", "tensor"), message, "kserve-refuses")]
    size = platforms.llmisvc_size(profile)
    if size != profile.group_size:  # whatever layout the rules above did not foresee
        message = (
            f"KServe would size this group {size} pods (data / dataLocal, or pipeline), lwsgen's is "
            f"{profile.group_size}: use whole pods of data ranks, or one pipeline stage per pod"
        )
        return [src.problem(("parallelism",), message, "kserve-refuses")]
    return []


def _go_templates(data: Any, path: tuple = ()) -> list[tuple]:
    """Paths of strings holding '{{', which KServe would render as a Go template."""
    if isinstance(data, dict):
        return [p for key, value in data.items() for p in _go_templates(value, (*path, key))]
    if isinstance(data, list):
        return [p for index, value in enumerate(data) for p in _go_templates(value, (*path, index))]
    return [path] if isinstance(data, str) and "{{" in data else []


def _templated(src: Source) -> list[Problem]:
    message = (
        "KServe renders an LLMInferenceService's merged spec as a Go template, failing on any name it does not "
        "know (config_merge.go#L607-L722, missingkey=error): write it without '{{'"
    )
    return [src.problem(path, message, "kserve-refuses") for path in _go_templates(src.data)]


def _isvc_layout(profile: Profile, src: Source) -> list[Problem]:
    par = profile.parallelism
    if par.data > 1:
        message = (
            "an InferenceService's workerSpec has tensorParallelSize and pipelineParallelSize only: use platform "
            "kserve for data parallelism"
        )
        return [src.problem(("parallelism", "data"), message, "kserve-refuses")]
    if profile.group_size == 1:
        message = (
            "a one-pod group needs no workerSpec, and KServe's controller would make it head-only: use platform "
            "kserve (an LLMInferenceService without worker) or lws"
        )
        return [src.problem(("parallelism",), message, "kserve-refuses")]
    if profile.node.gpu_resource not in platforms.KNOWN_GPU_RESOURCES:
        message = (
            f"KServe's webhook knows the GPU resources {', '.join(platforms.KNOWN_GPU_RESOURCES)} only "
            "(constants.go#L309-L322): use one of them"
        )
        return [src.problem(("node", "gpuResource"), message, "kserve-refuses")]
    return []


def _isvc_model(profile: Profile, src: Source) -> list[Problem]:
    """storageUri pvc:// or oci:// only (inference_service_validation.go#L406-L413)."""
    uri = platforms.model_uri(profile)
    if uri is not None and uri.startswith("pvc://"):
        return []
    said = f"{uri} is not a storageUri it takes" if uri else "the weights are on no claim of the profile"
    message = (
        f"KServe's webhook takes only a pvc:// or oci:// storageUri for a multi-node InferenceService "
        f"(\"Multinode only supports 'pvc' and 'oci' Storage Protocol\"), and {said}: download the weights onto "
        "a ReadWriteMany claim with model.source and storage (lwsgen's model delivery), or use platform kserve, "
        "which takes hf://"
    )
    return [src.problem(("model", "path"), message, "kserve-refuses")]


def _llmisvc_model(profile: Profile, src: Source) -> list[Problem]:
    if platforms.model_uri(profile) is not None:
        return []
    message = (
        "an LLMInferenceService needs model.uri: keep the weights on the profile's claim (model.path under "
        "storage.mountPath) or give a hub id"
    )
    return [src.problem(("model", "path"), message, "kserve-refuses")]


@registry.rule("not-on-platform", "kserve-refuses", scope=PROFILE, severity=ERROR)
def check(profile: Profile, src: Source) -> list[Problem]:
    """platform kserve and kserve-isvc: runtime vllm, no field KServe has no equivalent for, a layout
    KServe's webhook takes and its controller sizes as lwsgen does, and a model URI it accepts."""
    if profile.platform not in BOTH:
        return []
    if profile.runtime != "vllm":
        message = (
            f"platform {profile.platform} runs vLLM (KServe's presets and multi-node runtime are vLLM's): "
            "use runtime vllm, or platform lws"
        )
        return [src.problem(("runtime",), message, "not-on-platform")]
    problems = _unsupported(profile, src)
    if profile.platform == KSERVE:
        return problems + _llmisvc_layout(profile, src) + _llmisvc_model(profile, src) + _templated(src)
    return problems + _isvc_layout(profile, src) + _isvc_model(profile, src)


@registry.rule("kserve-adds", scope=PROFILE, severity=WARNING)
def preset_capabilities(profile: Profile, src: Source) -> list[Problem]:
    """platform kserve with data parallelism: KServe's data-parallel preset adds capabilities to the
    engine container that the LLMInferenceService cannot take back."""
    if profile.platform != KSERVE or profile.parallelism.data == 1:
        return []
    added = [c for c in platforms.DATA_PARALLEL_CAPABILITIES if c not in profile.security.add_capabilities]
    if not added:
        return []
    message = (
        f"KServe's data-parallel preset adds the capabilities {', '.join(added)} to the engine container, and "
        "KServe's merge of the preset cannot be told to drop them: a namespace that enforces the restricted Pod "
        "Security Standard refuses these pods; list them in security.addCapabilities to say you accept them"
    )
    return [src.problem(("parallelism", "data"), message, "kserve-adds")]


@registry.rule("kserve-regression", scope=PROFILE, severity=WARNING)
def isvc_regression(profile: Profile, src: Source) -> list[Problem]:
    """platform kserve-isvc: KServe v0.20.0 deletes what a multi-node InferenceService needs on every
    reconcile, so its group never forms there."""
    if profile.platform != ISVC:
        return []
    message = (
        "KServe v0.20.0 deletes a multi-node InferenceService's worker Deployment and headless Services on every "
        "reconcile (kserve/kserve#6113, a regression of v0.20.0 fixed on its master by kserve/kserve#5899; seen on "
        "its real controller in make test-cluster): the group never forms there; run KServe v0.19 or a release "
        "with the fix, or use platform kserve"
    )
    return [src.problem(("platform",), message, "kserve-regression")]
