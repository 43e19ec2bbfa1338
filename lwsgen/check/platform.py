"""platform: kserve and kserve-isvc. What KServe v0.20.0's webhooks refuse, what its controller
silently drops or recomputes differently, and the profile fields that have no KServe equivalent:
each said at the profile line, naming the platform and the layout that works (docs/kserve.md).
The facts are lwsgen/platforms.py's, cited there."""

from __future__ import annotations

from typing import Any

from lwsgen import naming, platforms, registry
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.registry import PROFILE

KSERVE, ISVC = platforms.KSERVE, platforms.KSERVE_ISVC
BOTH = (KSERVE, ISVC)
SERVICES = "KServe creates the Services in front of the pods itself"
NOT_ITS_WORKLOAD = "KServe's controller creates the workload, so lwsgen cannot place this on it"
# KServe copies leaderworkerset.sigs.k8s.io/* and kueue.x-k8s.io annotations and labels from an
# LLMInferenceService onto its LeaderWorkerSet (workload_multi_node.go#L616-L660), not Volcano's.
VOLCANO_ON_KSERVE = (
    "KServe copies LeaderWorkerSet and Kueue metadata onto the LeaderWorkerSet it makes, not Volcano's "
    "(workload_multi_node.go#L616-L660): use scheduler kueue or default"
)

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
    (("scheduling", "scheduler"), (ISVC,), "default", f"{NOT_ITS_WORKLOAD} (gang scheduling annotations)"),
    (("scheduling", "scheduler"), (KSERVE,), ("default", "kueue"), VOLCANO_ON_KSERVE),
    (("scheduling", "queue"), (ISVC,), None, NOT_ITS_WORKLOAD),
    (("scheduling", "queueCapacity"), BOTH, None, NOT_ITS_WORKLOAD),
    (("scheduling", "podGroupAnnotations"), BOTH, None, NOT_ITS_WORKLOAD),
    (("scheduling", "exclusiveTopology"), (ISVC,), None, NOT_ITS_WORKLOAD),
    (("scheduling", "requiredTopology"), (ISVC,), None, NOT_ITS_WORKLOAD),
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
        taken = () if allowed is None else allowed if isinstance(allowed, tuple) else (allowed,)
        if profile.platform in where and written and (allowed is None or value not in taken):
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
        "KServe renders the pod spec as a Go template (an LLMInferenceService's merged spec, "
        "config_merge.go#L607-L722; an InferenceService's head container, utils.go#L324-L336), failing on or "
        "replacing any '{{ }}': write it "
        "without '{{'"
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
            "lws, or a layout over several nodes"
        )
        return [src.problem(("parallelism",), message, "kserve-refuses")]
    if profile.node.gpu_resource not in platforms.KNOWN_GPU_RESOURCES:
        message = (
            f"KServe's webhook knows the GPU resources {', '.join(platforms.KNOWN_GPU_RESOURCES)} only "
            "(constants.go#L309-L322): use one of them"
        )
        return [src.problem(("node", "gpuResource"), message, "kserve-refuses")]
    return []


def _isvc_native(profile: Profile, src: Source) -> list[Problem]:
    """launch.mode native: KServe's mp backend sizes the group as pipeline pods of tensor GPUs
    (components/predictor.go#L759-L766), and its worker Deployment's pods have no index to give
    vLLM as --node-rank: one worker, whose rank is 1, is the group lwsgen can launch."""
    if profile.launch.mode != "native":
        return []
    par, gpus = profile.parallelism, profile.node.gpus
    if par.tensor != gpus:
        message = (
            f"KServe's mp backend gives each pod tensor GPUs ({par.tensor}) and sizes the group as pipeline pods "
            f"(components/predictor.go#L759-L766): set tensor to the node's GPUs ({gpus}), or leave launch.mode "
            "out (Ray)"
        )
        return [src.problem(("parallelism", "tensor"), message, "kserve-refuses")]
    if par.pipeline != 2:
        message = (
            f"vLLM's own launch needs each pod's --node-rank, and the {par.pipeline - 1} pods of KServe's worker "
            "Deployment have no index to take it from: with launch.mode native a group is the head and one "
            "worker (pipeline 2); leave launch.mode out to form the group with Ray"
        )
        return [src.problem(("launch", "mode"), message, "not-on-platform")]
    return []


def _isvc_model(profile: Profile, src: Source) -> list[Problem]:
    """storageUri pvc:// or oci:// only (inference_service_validation.go#L406-L413); KServe mounts it at
    /mnt/models itself (storage_initializer_injector.go#L514-L540), beside the profile's claim."""
    uri = platforms.model_uri(profile)
    if uri is not None and uri.startswith("pvc://"):
        if profile.storage.mount_path.rstrip("/") == platforms.KSERVE_MODEL_DIR:
            message = (
                f"KServe mounts the storageUri's claim at {platforms.KSERVE_MODEL_DIR} itself, and a pod may not "
                "mount two volumes at one path: mount the claim elsewhere (/models)"
            )
            return [src.problem(("storage", "mountPath"), message, "kserve-refuses")]
        return []
    if profile.model.path.startswith(platforms.KSERVE_DELIVERED):
        message = (
            "lwsgen writes an s3:// or oci:// model, which KServe delivers itself, on platform kserve only: use "
            "platform kserve, or download the weights onto a ReadWriteMany claim with model.source and storage"
        )
        return [src.problem(("model", "path"), message, "not-on-platform")]
    said = f"{uri} is not a storageUri it takes" if uri else "the weights are on no claim of the profile"
    message = (
        f"KServe's webhook takes only a pvc:// or oci:// storageUri for a multi-node InferenceService "
        f"(\"Multinode only supports 'pvc' and 'oci' Storage Protocol\"), and {said}: download the weights onto "
        "a ReadWriteMany claim with model.source and storage (lwsgen's model delivery), or use platform kserve, "
        "which takes hf://"
    )
    return [src.problem(("model", "path"), message, "kserve-refuses")]


def _llmisvc_model(profile: Profile, src: Source) -> list[Problem]:
    storage = profile.storage
    if platforms.delivered_by_kserve(profile) and storage is not None:
        # where KServe mounts the model (s3: workload_storage.go#L404-L457) or the modelcar's link
        # directory (oci: pkg/utils/storage.go#L579-L584)
        taken = platforms.MODELCAR_MOUNT if platforms.modelcar(profile) else platforms.KSERVE_MODEL_DIR
        if storage.mount_path.rstrip("/") == taken:
            message = (
                f"KServe mounts its own volume at {taken} for the model it delivers, and a pod may not mount two "
                "volumes at one path: mount the claim elsewhere (/models)"
            )
            return [src.problem(("storage", "mountPath"), message, "kserve-refuses")]
    if platforms.model_uri(profile) is not None:
        return []
    message = (
        "an LLMInferenceService needs model.uri: keep the weights on the profile's claim (model.path under "
        "storage.mountPath) or give a hub id"
    )
    return [src.problem(("model", "path"), message, "kserve-refuses")]


# Resources KServe's webhook does not count as a GPU type (utils.go#L354-L391 HasUnknownGpuResourceType).
BASIC_RESOURCES = ("cpu", "memory", "storage", "ephemeral-storage")
# What KServe puts on the pods itself; the service's spec.labels are copied over them
# (workload_multi_node.go#L153-L159, then #L262-L267), which would take the pods out of its selectors.
KSERVE_POD_LABELS = {
    KSERVE: ("app.kubernetes.io/name", "app.kubernetes.io/part-of", "app.kubernetes.io/component",
             "kserve.io/component", "llm-d.ai/role"),
    ISVC: ("app", "component", platforms.ISVC_LABEL, "isvc.generation"),
}  # fmt: skip
BLOCKED_ENV = ("PYTHONPATH",)  # pkg/validation/env_policy.go DefaultBlockedEnvVars, on an InferenceService


def _pod_fields(profile: Profile, src: Source) -> list[Problem]:
    """One set of pod labels and annotations for leader and workers on KServe (spec.labels and
    annotations); pod labels KServe sets itself; on an InferenceService, no sidecars (a runtime has
    its head's container and one worker container) and the env its webhook blocks."""
    out = []
    for side in ("leader", "worker"):
        for key in ("podLabels", "podAnnotations"):
            if _written(src.data, (side, key))[0]:
                message = (
                    f"platform {profile.platform} has no equivalent: KServe takes one set of pod labels and "
                    f"annotations for the leader and the workers; use {key} (for both)"
                )
                out.append(src.problem((side, key), message, "not-on-platform"))
    for key in KSERVE_POD_LABELS[profile.platform]:
        if key in profile.pod_labels:
            message = (
                "KServe sets this pod label itself and the profile's would replace it, taking the pods out of what "
                "KServe's Services and router select: use another key"
            )
            out.append(src.problem(("podLabels", key), message, "kserve-refuses"))
    if profile.platform == ISVC:
        for where in (("containers",), ("leader", "containers"), ("worker", "containers")):
            if _written(src.data, where)[1]:
                message = (
                    "platform kserve-isvc has no equivalent: a ServingRuntime holds the head's container and one "
                    "worker container (components/predictor.go#L602); use platform kserve for sidecars"
                )
                out.append(src.problem(where, message, "not-on-platform"))
        for name in BLOCKED_ENV:
            if name in profile.env:
                message = (
                    f"KServe's webhook refuses {name} in a container's env (pkg/validation/env_policy.go): leave it out"
                )
                out.append(src.problem(("env", name), message, "kserve-refuses"))
    return out


def _devices(profile: Profile, src: Source) -> list[Problem]:
    """kserve-isvc: KServe's webhooks take every resource beyond cpu, memory and storage for an unknown
    GPU type and refuse the runtime (servingruntime_webhook.go#L225-L246)."""
    out = []
    if profile.node.efa:
        out.append(("node", "efa"))
    if profile.node.rdma_resource:
        out.append(("node", "rdmaResource"))
    for side in ("leader", "worker"):
        for name in getattr(profile, side).resources:
            if name not in BASIC_RESOURCES and name not in platforms.KNOWN_GPU_RESOURCES:
                out.append((side, "resources", name))
    message = (
        "KServe's webhook counts every resource but cpu, memory and storage as a GPU type and refuses a runtime "
        "asking for one it does not know (utils.go#L354-L391): leave it out on platform kserve-isvc, or use "
        "platform kserve"
    )
    return [src.problem(path, message, "kserve-refuses") for path in out]


def _name(profile: Profile, src: Source) -> list[Problem]:
    """KServe's names are longer than lwsgen's: <name>-kserve-mn as the LeaderWorkerSet (its pods'
    revision label), isvc.<name>-predictor-worker as a pod label (constants.go#L755-L762)."""
    if getattr(src, "in_set", False):  # a role's: the set's rule judges the names KServe gives each role
        return []
    if profile.platform == KSERVE:
        limit = naming.name_budget(profile.highest_group_index) - len(platforms.LLMISVC_LWS_SUFFIX)
        made = f"the LeaderWorkerSet {platforms.llmisvc_lws('<name>')}"
    else:
        limit = 63 - len(platforms.isvc_worker_app(""))
        made = f"the pod label {platforms.isvc_worker_app('<name>')}"
    if len(profile.name) <= limit or len(profile.name) > naming.name_budget(profile.highest_group_index):
        return []  # it fits, or lwsgen's own rule says it does not (check/rules.py)
    message = f"{len(profile.name)} characters is too long on platform {profile.platform}: at most {limit} fit {made}"
    return [src.problem(("name",), message, "name-too-long")]


@registry.rule("not-on-platform", "kserve-refuses", "name-too-long", scope=PROFILE, severity=ERROR)
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
    problems = _unsupported(profile, src) + _pod_fields(profile, src) + _name(profile, src) + _templated(src)
    # not whole nodes: lwsgen's own rule says so (check/rules.py), and no layout of KServe's is one
    whole = profile.world_size <= profile.node.gpus or profile.world_size % profile.node.gpus == 0
    if profile.platform == KSERVE:
        layout = _llmisvc_layout(profile, src) if whole else []
        return problems + layout + _llmisvc_model(profile, src)
    layout = (_isvc_layout(profile, src) or _isvc_native(profile, src)) if whole else []
    return problems + layout + _isvc_model(profile, src) + _devices(profile, src)


@registry.rule("kserve-adds", scope=PROFILE, severity=WARNING)
def preset_capabilities(profile: Profile, src: Source) -> list[Problem]:
    """platform kserve with data parallelism: KServe's data-parallel preset adds capabilities to the
    engine container that the LLMInferenceService cannot take back."""
    if profile.platform != KSERVE or not platforms.data_parallel_preset(profile):
        return []
    out = []
    added = [c for c in platforms.DATA_PARALLEL_CAPABILITIES if c not in profile.security.add_capabilities]
    if added:
        message = (
            f"KServe's data-parallel preset adds the capabilities {', '.join(added)} to the engine container, and "
            "KServe's merge of the preset cannot be told to drop them: a namespace that enforces the restricted Pod "
            "Security Standard refuses these pods; list them in security.addCapabilities to say you accept them"
        )
        out.append(src.problem(("parallelism", "data"), message, "kserve-adds"))
    if profile.node.shm_size is None:
        message = (
            f"KServe's data-parallel preset bounds /dev/shm to {platforms.DATA_PARALLEL_SHM} where the pod says no "
            "size (unbounded on a LeaderWorkerSet): set node.shmSize"
        )
        out.append(src.problem(("node",), message, "kserve-adds"))
    return out


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
