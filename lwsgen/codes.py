"""Every problem code lwsgen reports (`--format json`'s "code"), what it means and how to fix it: the
one catalog docs/rules.md is generated from (`make docs`). A rule names the codes it reports
(lwsgen/registry.py); tests/test_rules.py holds the catalog to the codes in the source, both ways."""

from lwsgen.records import Record

# Where a code is reported: the stage or command that finds it.
SCOPES = {
    "load": "reading a profile, its bases and the command line (lwsgen/load)",
    "profile": "the profile's schema and rules, its pod fields and Service ports included (lwsgen/check)",
    "roles": "a profile with prefill/decode roles, across the roles (lwsgen/check/disaggregation.py)",
    "hatch": "the patches and templates applied to the objects, and what they may not change (lwsgen/output/guards)",
    "object": "one rendered or validated object against its schema and the API server's rules",
    "set": "the objects of one output set together (selectors, references, metrics)",
    "validate": "`lwsgen validate` on files it is given",
}


class Code(Record):
    """severity: error, warning or notice (error|warning where one code is said both ways)."""

    severity: str
    scope: str
    meaning: str
    fix: str


CODES: dict[str, Code] = {
    "bad-annotation": Code(
        "error",
        "profile",
        (
            "An annotation key under annotations, service.annotations or scheduling.podGroupAnnotations is not a "
            "valid Kubernetes annotation key."
        ),
        (
            "Rename the key to a valid annotation key (an optional DNS prefix and '/', then letters, digits, '-',"
            " '_' and '.')."
        ),
    ),
    "bad-assignment": Code(
        "error",
        "load",
        "A --set or --default argument is not of the form PATH=VALUE.",
        "Write it as a dotted profile field path, '=', and a value, e.g. --set autoscaling.maxReplicas=4.",
    ),
    "bad-encoding": Code(
        "error",
        "load",
        "The file is not valid UTF-8 text.",
        "Save the file as UTF-8.",
    ),
    "bad-format": Code(
        "error",
        "profile",
        (
            "A value does not have the form its field requires (a pattern, a CIDR, a hostname that is an IP, or a"
            " GGUF file name)."
        ),
        "Write the value in the form the message names (for a split GGUF, name its first part).",
    ),
    "bad-image": Code(
        "error",
        "profile",
        "An image reference is malformed, or is not pinned (':latest', or neither tag nor digest).",
        "Give a valid image reference pinned to a version tag or a sha256 digest.",
    ),
    "bad-key": Code(
        "error",
        "load|profile",
        "A mapping key is not a string, or does not match the pattern its field's keys must follow.",
        "Quote the key, or rename it to a key the field allows.",
    ),
    "bad-label": Code(
        "error",
        "profile",
        "A label key or value (labels, monitoring.prometheusLabels, node.nodeSelector) is not valid in Kubernetes.",
        (
            "Use a valid label key and a value of at most 63 letters, digits, '-', '_' or '.', starting and "
            "ending with a letter or digit."
        ),
    ),
    "bad-length": Code(
        "error",
        "profile",
        "A string is shorter or longer than its field allows.",
        "Shorten or lengthen the value to the length the message gives.",
    ),
    "bad-model-path": Code(
        "error",
        "profile",
        "model.path is not an absolute path, and the runtime reads a directory or file in the pod, never a Hub id "
        "(Triton: the model repository; llama.cpp: the GGUF file).",
        (
            "Set model.path to the absolute path: for Triton the model repository, e.g. "
            "/var/run/models/<model>/triton_model_repo; for llama.cpp the GGUF file, e.g. /models/<model>.gguf."
        ),
    ),
    "bad-name": Code(
        "error",
        "profile|hatch",
        (
            "A name you gave (a volume, container or port name, or a template's kind name) is not a valid "
            "Kubernetes name."
        ),
        (
            "Use lower-case letters, digits and '-' (DNS-1123 label, 63 characters at most; port names at most 15"
            " with a letter)."
        ),
    ),
    "bad-number": Code(
        "error",
        "load",
        "YAML holds a value that cannot be read as a number (an integer of thousands of digits).",
        "Write a usable number, or quote the value to make it a string.",
    ),
    "bad-patch": Code(
        "error",
        "hatch",
        "A patch (patches[].patch or patches[].jsonPatch) cannot be applied to its target object.",
        "Correct the patch at the path the message names so it applies to the rendered object.",
    ),
    "bad-path": Code(
        "error",
        "load|hatch|validate",
        (
            "A path (extends, templates, a kustomization entry, or the profile's own path) is not usable: not "
            "relative, or not valid UTF-8."
        ),
        "Name the file or directory by a plain relative path, and rename files whose path is not valid UTF-8.",
    ),
    "bad-quantity": Code(
        "error",
        "profile|set",
        "A resource amount is not a Kubernetes quantity, or is negative.",
        "Write the amount as a Kubernetes quantity, e.g. 500m, 2, 4Gi.",
    ),
    "bad-range": Code(
        "error",
        "profile",
        "autoscaling.idleReplicas is not below autoscaling.minReplicas, which KEDA needs.",
        "Set minReplicas to at least 1 and above idleReplicas (minReplicas is the count once active).",
    ),
    "bad-target": Code(
        "error",
        "profile",
        "autoscaling.target has more than 3 decimals, finer than a Kubernetes quantity can say.",
        "Round autoscaling.target to at most 3 decimals.",
    ),
    "bad-template": Code(
        "error",
        "hatch",
        "A template under templates fails to render, or writes something that is not YAML objects lwsgen accepts.",
        "Fix the template at the file and line the message names so it renders valid YAML objects.",
    ),
    "bad-text": Code(
        "error",
        "profile",
        "A string or key contains a control character.",
        "Remove the control character; only printable text, tabs and newlines are allowed.",
    ),
    "bad-value": Code(
        "error",
        "load|profile|hatch",
        (
            "A value has the wrong shape for what reads it (a YAML tag that cannot be read, a non-mapping "
            "securityContext or resources, maxSkew below 1)."
        ),
        "Give the value the shape the message names (quote YAML values whose tag cannot be read).",
    ),
    "bad-version": Code(
        "error",
        "profile",
        "runtimeVersion is not a version of the runtime's engine.",
        "Write runtimeVersion as the engine spells its versions, e.g. the example in the message.",
    ),
    "base-only": Code(
        "error",
        "profile",
        "The file says base: true, so it is only a base and is not rendered by itself.",
        "Render a profile that extends it, or remove base: true.",
    ),
    "base-outside": Code(
        "error",
        "load",
        "extends names a base outside this profile's directory, its git work tree or the --root given.",
        "Point extends at a relative path inside the profile's directory, work tree or --root.",
    ),
    "bypass": Code(
        "warning",
        "profile",
        (
            "With scale to zero, a non-ClusterIP Service lets clients past the Gateway, so their requests fail "
            "while no group runs."
        ),
        "Serve through the Gateway: set service.type ClusterIP.",
    ),
    "capability": Code(
        "error",
        "profile",
        "A container adds a Linux capability the profile does not keep, or does not drop ALL capabilities.",
        "List the capability in security.addCapabilities, and drop ALL in the container's securityContext.",
    ),
    "cold-start": Code(
        "warning",
        "profile",
        (
            "Scaling from zero takes longer than gateway.requestTimeout, so the first requests after idle fail "
            "unless clients retry."
        ),
        "Raise gateway.requestTimeout above the startup time, keep a group running, or make clients retry.",
    ),
    "conflict": Code(
        "error",
        "profile|roles",
        (
            "Two settings contradict each other (a nodeSelector instance type vs node.instanceType, or exclusive "
            "topology with role placement)."
        ),
        "Keep one of the two conflicting settings the message names.",
    ),
    "costly": Code(
        "warning",
        "profile",
        "lws.maxSurge above 0 needs a whole extra group of nodes free during each rollout.",
        "Set lws.maxSurge to 0 unless the cluster has spare nodes for a surge group.",
    ),
    "cross-object": Code(
        "error",
        "set",
        (
            "Objects of the set disagree with each other (a selector, reference, port, metric or secret that no "
            "object in the set matches)."
        ),
        "Make the objects agree as the message says, or render them again with lwsgen rather than editing by hand.",
    ),
    "default-class": Code(
        "warning",
        "profile",
        (
            "storage.localCache uses an ephemeral volume with no storageClassName, so it takes the cluster's "
            "default class, often network storage."
        ),
        "Set storage.localCache.storageClassName to the node-local storage class.",
    ),
    "derived": Code(
        "error",
        "profile|hatch",
        (
            "A hatch (template, patch, pod field, container) sets, removes or hooks into what lwsgen derives (GPU"
            " env, devices, objects, the engine process)."
        ),
        "Leave it to lwsgen: change the profile field the message names instead, or run an exec hook in a sidecar.",
    ),
    "derived-field": Code(
        "error",
        "profile",
        "model.path is set together with model.source, from which it is derived.",
        "Leave model.path out when model.source is set.",
    ),
    "derived-flag": Code(
        "error",
        "profile|roles",
        "model.extraArgs repeats an engine flag lwsgen derives (from parallelism, port, model or roles).",
        "Remove the flag from extraArgs and set the profile field the message names instead.",
    ),
    "does-not-fit": Code(
        "warning",
        "profile",
        "The model is unlikely to fit in the GPU memory of one group.",
        "Use more or larger GPUs (node.gpus, parallelism, node.gpuProduct), or a smaller or quantized model.",
    ),
    "download-per-pod": Code(
        "warning",
        "profile",
        (
            "model.path is a hub id with no storage, so every pod downloads the whole model at start and again on"
            " each restart."
        ),
        "Download it once into a ReadWriteMany claim: set model.source and storage (with storage.create).",
    ),
    "duplicate": Code(
        "error",
        "profile|hatch",
        (
            "The same name appears twice where it must be unique (a list entry, container, port, or an object in "
            "two output files)."
        ),
        "Remove or rename the second entry.",
    ),
    "duplicate-item": Code(
        "error",
        "profile",
        "A list whose items must be unique holds the same item twice.",
        "Remove the repeated item.",
    ),
    "duplicate-key": Code(
        "error",
        "load",
        "A YAML mapping sets the same key twice.",
        "Keep one of the two keys.",
    ),
    "duplicate-name": Code(
        "error",
        "set",
        "Two profiles rendered together have the same name, so both would write the same output directory.",
        "Give one of the profiles a different name.",
    ),
    "editor-schema": Code(
        "warning",
        "load",
        (
            "An overlay (extends) names the whole-profile schema in its yaml-language-server modeline, so editors"
            " report false errors."
        ),
        "Name profile-partial.schema.json in the modeline instead.",
    ),
    "exposed": Code(
        "warning",
        "profile",
        (
            "A LoadBalancer Service with no source ranges serves the model to any address that reaches the load "
            "balancer."
        ),
        (
            "Set service.loadBalancerSourceRanges or service.allowedSources (and service.apiKeySecret), or use "
            "service.type ClusterIP."
        ),
    ),
    "extends-cycle": Code(
        "error",
        "load",
        "The extends chain loops back to a profile already in it.",
        "Break the cycle so that no profile extends, directly or indirectly, itself.",
    ),
    "extends-too-deep": Code(
        "error",
        "load",
        "The extends chain has more bases than lwsgen reads.",
        "Flatten the chain into fewer bases.",
    ),
    "fit-not-checked": Code(
        "warning",
        "profile",
        "lwsgen could not check whether the model fits: the GPU (node.gpuProduct) is unknown or not given.",
        "Set node.gpuProduct to one of the known GPUs the message lists.",
    ),
    "gang-never-starts": Code(
        "error",
        "profile",
        (
            "scheduling.exclusiveTopology with scheduler volcano and groups of more than one pod: the LeaderWorkerSet "
            "controller creates an exclusive group's workers only after its leader is scheduled, and Volcano schedules "
            "none of a PodGroup's pods until minMember (the group size) exist, so no group ever starts."
        ),
        "Remove scheduling.exclusiveTopology, or place groups with scheduler default or kueue.",
    ),
    "gated-model": Code(
        "warning",
        "profile",
        "The model is gated on the Hugging Face Hub, and a download without a token is refused.",
        "Set model.tokenSecret to a Secret key holding a token of an account that accepted the licence.",
    ),
    "host-access": Code(
        "error|warning",
        "profile|hatch",
        (
            "A setting gives pods access to the node (privileged, host paths, host ports, unconfined profiles, "
            "host namespaces)."
        ),
        (
            "Remove it; where a security.allow* field covers it (allowPrivileged, allowHostPath, ...), set that "
            "to opt in, then said as a warning."
        ),
    ),
    "image-lacks-rpc-server": Code(
        "error",
        "profile",
        (
            "A multi-pod llama.cpp group runs a published llama.cpp image, which is built without rpc-server, so "
            "the workers exit."
        ),
        "Build an image with cmake -DGGML_RPC=ON and name it in image, or run the model in one pod.",
    ),
    "invalid": Code(
        "error",
        "profile|object",
        "A value or object fails its schema (Kubernetes API, CRD or profile) in a way no more specific code covers.",
        "Correct the field the message names so it matches its schema.",
    ),
    "invalid-output": Code(
        "error",
        "hatch|object",
        (
            "The rendered output fails a Kubernetes schema or cross-object rule, often because of a pod field, "
            "template or patch of the profile."
        ),
        "Change the profile field, template or patch the problem points at so the rendered object is valid.",
    ),
    "kv-layout": Code(
        "warning",
        "roles",
        "The decode role's tensor size is not a multiple of the prefill role's, which older vLLM NIXL cannot map.",
        "Make decode tensor a multiple of prefill tensor, or use a vLLM image with PR #27274.",
    ),
    "kv-mismatch": Code(
        "error",
        "roles",
        (
            "An engine flag that sets the KV cache layout differs between roles, so one role cannot read what the"
            " other writes."
        ),
        "Give the flag the same value on every role, or set it once in the shared model.extraArgs.",
    ),
    "layer-split": Code(
        "notice",
        "profile",
        "llama.cpp splits layers, not heads, so parallelism.tensor is read as a layer (pipeline) split.",
        "Say it as parallelism.pipeline with the same number of GPUs (what lwsgen plan emits).",
    ),
    "layout-assumed": Code(
        "warning",
        "profile",
        "No parallelism is given, so each pod takes 1 GPU of node.gpus beside the whole node's CPU and memory.",
        "Set parallelism.tensor to node.gpus to use the whole node, or set node.gpus to 1.",
    ),
    "link-loop": Code(
        "error",
        "load|hatch",
        (
            "A path's symbolic links loop or cannot be resolved (the profile, its extends base or its templates "
            "directory)."
        ),
        "Point the path at the real file or directory, or fix the links.",
    ),
    "link-outside": Code(
        "error",
        "load",
        (
            "A directory given to lwsgen holds links that loop or lead out of it, or more YAML files than one "
            "command reads."
        ),
        "Remove or fix the link, keep profiles as files inside the directory, or split the directory.",
    ),
    "lws-too-old": Code(
        "error",
        "profile",
        (
            "A setting needs a newer LeaderWorkerSet than lws.version (restartPolicy, partition or Volcano gang "
            "scheduling)."
        ),
        "Upgrade the LeaderWorkerSet controller and raise lws.version, or leave the setting out.",
    ),
    "replicas-ignored": Code(
        "warning",
        "profile",
        "replicas is set while autoscaling is on: it is not written to the workload, since the autoscaler owns the "
        "group count.",
        "Remove replicas (autoscaling.minReplicas is the count kept at least).",
    ),
    "min-above-max": Code(
        "error",
        "profile",
        "autoscaling.minReplicas is greater than autoscaling.maxReplicas.",
        "Set minReplicas at or below maxReplicas.",
    ),
    "missing": Code(
        "error",
        "hatch",
        "The templates directory does not exist, or holds no <kind>.yaml.j2 template.",
        "Create the directory beside the profile with at least one <kind>.yaml.j2, or fix the templates path.",
    ),
    "missing-base": Code(
        "error",
        "load",
        "The base profile named by extends does not exist.",
        "Fix the extends path, or create the base profile.",
    ),
    "missing-field": Code(
        "error",
        "profile|roles",
        "A required field is missing, or a setting needs another field that is not set.",
        "Add the field the message names.",
    ),
    "missing-file": Code(
        "error",
        "validate",
        "A kustomization names a local file or directory that does not exist beside it.",
        "Add the missing file, or remove it from the kustomization.",
    ),
    "missing-image": Code(
        "error",
        "profile",
        "The NCCL test's launcher needs an image the serving image cannot stand in for.",
        (
            "Set ncclTest.image to an image with what the launcher needs (nccl-tests, OpenMPI and sshd, or "
            "PyTorch with NCCL)."
        ),
    ),
    "missing-queue": Code(
        "error",
        "profile",
        "The scheduler (Kueue) or scheduling.queueCapacity needs a queue, and scheduling.queue is not set.",
        "Set scheduling.queue.",
    ),
    "model-path-relative": Code(
        "error",
        "profile",
        "model.path is a relative path and not a Hub id (org/name): the engine resolves it against its image's "
        "working directory, where no weights are; or KServe's hf:// or pvc:// on platform lws, which the engine is "
        "given as it is.",
        "Write the model's absolute path (under storage.mountPath when the weights are on a claim), or a Hub id "
        "(org/name), or use platform kserve.",
    ),
    "model-outside-claim": Code(
        "error",
        "profile",
        "model.path is not under storage.mountPath, where the claim is mounted, so the engine would find no weights.",
        "Put the model under storage.mountPath, or set storage.mountPath to the directory that holds it.",
    ),
    "multiple-documents": Code(
        "error",
        "load",
        "The profile file holds more than one YAML document.",
        "Keep one document per profile file (remove the second '---').",
    ),
    "name-too-long": Code(
        "error",
        "profile|roles",
        (
            "The profile name is too long for a name derived from it (pod labels, Services, Jobs, hostnames, role"
            " names)."
        ),
        "Shorten name to the length the message gives.",
    ),
    "needs-expert": Code(
        "error",
        "profile",
        "parallelism.allToAll is set, but it is the all-to-all of expert parallelism, which is off.",
        "Set parallelism.expert, or leave allToAll at default.",
    ),
    "needs-gateway": Code(
        "error",
        "roles",
        "vLLM's prefill and decode roles are routed by the endpoint picker, which only gateway.enabled emits.",
        "Set gateway.enabled to true.",
    ),
    "needs-monitoring": Code(
        "error",
        "profile",
        "Autoscaling or the gateway reads metrics and recording rules that only monitoring emits.",
        "Set monitoring.enabled to true.",
    ),
    "needs-newer-engine": Code(
        "error",
        "profile|roles",
        "A setting needs a newer engine version than the one the profile runs.",
        (
            "Use an image of the version the message names or newer, or set runtimeVersion if the image is newer "
            "than its tag says."
        ),
    ),
    "needs-newer-lws": Code(
        "error",
        "roles",
        "roles need a DisaggregatedSet, which LeaderWorkerSet 0.10 and newer serve, and lws.version is older.",
        "Upgrade the LeaderWorkerSet controller and set lws.version to 0.10 or newer.",
    ),
    "needs-prefix-cache": Code(
        "error",
        "roles",
        "The picker's prefill/decode decider reads prefix-cache matches, but the prefix-cache scorer has weight 0.",
        "Give gateway.endpointPicker.scorers.prefixCache a weight above 0.",
    ),
    "no-disaggregation": Code(
        "error",
        "roles",
        "The runtime has no prefill/decode disaggregation (KV-cache transfer) lwsgen can derive.",
        "Use a runtime the message lists as supporting it, or leave roles out.",
    ),
    "no-limit": Code(
        "error",
        "profile",
        "A container you added has no CPU or memory limit, and the GPU pods are Guaranteed QoS.",
        "Give the container resources.limits for cpu and memory.",
    ),
    "no-port": Code(
        "error",
        "profile",
        "A service.extraPorts entry targets a port no sidecar of the leader pod declares.",
        "Add a port of that name to a leader sidecar, or target one of the named ports the message lists.",
    ),
    "no-rdma": Code(
        "warning",
        "profile",
        (
            "DeepEP moves tokens between nodes over RDMA, and these pods get no RDMA device, secondary network or"
            " host network."
        ),
        "Give the pods RDMA (node.rdmaResource, node.efa or node.networks), or set parallelism.allToAll to default.",
    ),
    "no-scorer": Code(
        "warning",
        "profile",
        "Every endpoint picker scorer weight is 0, so the picker scores nothing and picks any pod.",
        "Give at least one of gateway.endpointPicker.scorers a weight above 0.",
    ),
    "no-target": Code(
        "error",
        "hatch",
        "A patch's target matches no object in the output, or more than one.",
        "Name a kind and name of exactly one rendered object in the patch's target.",
    ),
    "no-wake-signal": Code(
        "error",
        "profile",
        "With scale to zero and no gateway, no pod exports the metric that would wake the autoscaler.",
        (
            "Set gateway.enabled, so the endpoint picker holds and counts requests, or keep minReplicas and "
            "idleReplicas at 1 or more."
        ),
    ),
    "not-a-file": Code(
        "error",
        "load",
        "The path is a directory, pipe, device or socket, not a regular file; nothing was read.",
        "Give the path of a regular file.",
    ),
    "not-a-mapping": Code(
        "error",
        "load",
        "The document is empty, a list or a scalar, but a profile is a mapping of fields.",
        "Write the profile as a mapping of fields (name, runtime, image, model, node, ...).",
    ),
    "not-allowed": Code(
        "error",
        "profile",
        "The value is not one of the values the field allows.",
        "Use one of the values the message lists.",
    ),
    "not-applicable": Code(
        "error",
        "profile",
        (
            "A field is set that has no effect with the rest of the profile (another runtime's field, or another "
            "scheduler's, service type's or autoscaler's)."
        ),
        "Leave the field out, or change the setting it depends on as the message says.",
    ),
    "not-divisible": Code(
        "error",
        "profile",
        (
            "The parallelism does not divide evenly (world size over node.gpus, attention or KV heads, or GPUs "
            "per data-parallel rank)."
        ),
        "Choose one of the layouts or tensor sizes the message suggests.",
    ),
    "not-emitted": Code(
        "error|warning",
        "profile|hatch",
        (
            "Something is not in the output: a template replaces a kind this profile does not emit (error), or "
            "the runtime has no metrics for a PodMonitor (warning)."
        ),
        (
            "Remove the template for a kind not emitted; for metrics, use an engine version that serves them or "
            "accept no PodMonitor."
        ),
    ),
    "not-guaranteed": Code(
        "error",
        "profile",
        "A container you added requests less than its limit (or without one), which breaks the pods' Guaranteed QoS.",
        "Give limits only (requests equal to limits).",
    ),
    "not-honoured": Code(
        "error",
        "profile",
        "scheduling.networkTopology is not carried by LeaderWorkerSet-created Volcano PodGroups today.",
        (
            "Remove scheduling.networkTopology; for one group per topology domain use scheduling.exclusiveTopology "
            "with scheduler default or kueue."
        ),
    ),
    "not-json": Code(
        "error",
        "validate",
        "A document holds a value JSON cannot represent (a date, binary, NaN or an out-of-range integer).",
        "Quote the value, or write it as a string, number, boolean, list or mapping.",
    ),
    "not-settable": Code(
        "error",
        "load",
        "A --set or --default names a field that only the profile file may set.",
        "Set that field in the profile file instead.",
    ),
    "not-supported": Code(
        "error",
        "profile|roles",
        "The runtime, engine or setup does not support what the profile asks for.",
        "Change or remove the setting as the message says, or use a runtime that supports it.",
    ),
    "not-on-platform": Code(
        "error",
        "profile",
        (
            "The profile asks for something the platform it names (platform: kserve or kserve-isvc) has no "
            "equivalent for: KServe creates that object itself, or has no field for it."
        ),
        "Leave the field out, as the message says, or use platform lws (docs/kserve.md lists what carries over).",
    ),
    "kserve-adds": Code(
        "warning",
        "profile",
        (
            "KServe adds something to the pods of an LLMInferenceService that lwsgen's pods cannot take back: the "
            "capabilities IPC_LOCK, SYS_RAWIO and NET_RAW of its data-parallel preset."
        ),
        "List them in security.addCapabilities to accept them, or use platform lws where the namespace enforces "
        "the restricted Pod Security Standard.",
    ),
    "kserve-regression": Code(
        "warning",
        "profile",
        (
            "The KServe release lwsgen's KServe facts come from (v0.20.0) has a known defect that stops this "
            "platform's group from forming: a multi-node InferenceService's worker is deleted on every reconcile "
            "(kserve/kserve#6113)."
        ),
        "Run a KServe release without the defect (v0.19, or one with kserve/kserve#5899), or use platform kserve.",
    ),
    "kserve-refuses": Code(
        "error",
        "profile",
        (
            "KServe's admission webhook would refuse the object lwsgen would write for this layout or model, or its "
            "controller would run it differently (one pod that waits forever, a layout silently ignored)."
        ),
        "Use the layout the message names (docs/kserve.md has each refusal and the KServe source it follows).",
    ),
    "not-with-roles": Code(
        "error",
        "roles",
        (
            "A setting cannot be used with roles (patches, templates, lws.partition, slices with autoscaling, "
            "role scale to zero, router metrics)."
        ),
        "Leave the setting out of a profile with roles, or use the alternative the message names.",
    ),
    "not-without-roles": Code(
        "error",
        "profile",
        "disaggregation is set, but it takes effect only with roles (prefill and decode).",
        "Add roles, or leave disaggregation out.",
    ),
    "one-of": Code(
        "error",
        "profile",
        "Exactly one of several fields must be given, and none or more than one is.",
        "Give exactly one of the fields the message lists.",
    ),
    "out-of-range": Code(
        "error",
        "profile",
        (
            "A number is outside the range its field allows (a minimum or maximum, a percentage above 100%, or "
            "beyond 64 bits)."
        ),
        "Use a value within the range the message gives.",
    ),
    "overridden": Code(
        "warning",
        "profile",
        "A model.llmApiOptions key is replaced because monitoring reads the engine's Prometheus metrics.",
        "Set monitoring.enabled to false to keep your value, or remove the key.",
    ),
    "picker-version": Code(
        "warning",
        "profile",
        (
            "The endpoint picker image is a different llm-d-router release than the one whose flags and config "
            "lwsgen writes."
        ),
        "Use the endpoint picker release the message names in gateway.endpointPicker.image.",
    ),
    "program-mount": Code(
        "error",
        "profile",
        (
            "A mount would cover the engine image's programs, or the directory the NVIDIA toolkit reads a "
            "container's GPUs from."
        ),
        "Mount the volume elsewhere (/data, /mnt/...).",
    ),
    "protocol": Code(
        "error",
        "profile",
        "A service.extraPorts entry's protocol differs from the protocol of the sidecar port it targets.",
        "Make the Service port's protocol match the sidecar port's.",
    ),
    "read-only": Code(
        "error",
        "profile",
        "A container you added mounts one of lwsgen's own volumes without readOnly: true.",
        "Set readOnly: true on the mount.",
    ),
    "refused": Code(
        "error",
        "hatch",
        (
            "A template adds an object lwsgen refuses to write (cluster-scoped, another namespace, a DaemonSet, a"
            " token Secret, lwsgen's accounts or pods)."
        ),
        "Remove the object from the template, or change it as the message says.",
    ),
    "rendezvous-over-load": Code(
        "error",
        "profile",
        "launch.rendezvousTimeoutSeconds is not below the model's load budget.",
        "Lower launch.rendezvousTimeoutSeconds, or raise model.loadTimeoutSeconds.",
    ),
    "replicas-mismatch": Code(
        "error",
        "roles",
        "Fixed role replicas mix zero and non-zero, which the DisaggregatedSet refuses.",
        "Make every fixed role's replicas zero, or every one above zero.",
    ),
    "reserved-annotation": Code(
        "error",
        "profile",
        "A pod annotation key is invalid or belongs to lwsgen, LeaderWorkerSet or another controller.",
        "Use your own valid annotation key.",
    ),
    "reserved-env": Code(
        "error",
        "profile",
        (
            "An environment variable is one lwsgen or LeaderWorkerSet sets, or one that chooses GPUs or changes "
            "how the process runs."
        ),
        "Rename the variable, or set what it controls through the profile field the message names.",
    ),
    "reserved-label": Code(
        "error",
        "profile",
        (
            "A label key is one lwsgen, LeaderWorkerSet or Kueue sets (selectors and queues use it), or the pod "
            "label is invalid."
        ),
        "Use your own valid label key.",
    ),
    "rollout-stuck": Code(
        "error",
        "profile",
        "lws.maxUnavailable and lws.maxSurge are both 0, so a rolling update could never proceed.",
        "Set lws.maxUnavailable or lws.maxSurge above 0.",
    ),
    "root": Code(
        "error",
        "profile",
        "A container asks to run as root, but security.runAsUser makes these pods non-root.",
        "Remove runAsUser: 0 or runAsNonRoot: false from the container's securityContext.",
    ),
    "secret-on-command-line": Code(
        "error",
        "profile",
        "A command or argument expands a Secret variable $(NAME), putting the secret on the process's command line.",
        "Read the variable from the environment inside the program, or write $$(NAME) for the literal text.",
    ),
    "shared-object": Code(
        "error",
        "set",
        "Two profiles rendered together write the same object (namespace, kind, name) differently.",
        "Rename the object in one of the profiles.",
    ),
    "shares-token": Code(
        "warning",
        "profile|hatch",
        (
            "A pod that mounts its launcher's ServiceAccount token (pods/exec on the group) gets another "
            "container, which can exec into the workers."
        ),
        "Drop the added container from that pod, or accept that it can exec into the workers.",
    ),
    "startup-deadlock": Code(
        "error",
        "profile",
        "lws.startupPolicy LeaderReady would deadlock: this runtime's leader is ready only after its workers start.",
        "Set lws.startupPolicy to LeaderCreated.",
    ),
    "taken": Code(
        "error",
        "profile|hatch",
        (
            "A name, port or path you gave is already used by lwsgen (a volume, container, port, mount path, the "
            "model's claim, or a kustomization file)."
        ),
        "Choose another name, port or path.",
    ),
    "templates-outside": Code(
        "error",
        "hatch",
        "templates is not a relative path inside the profile's directory or its git work tree.",
        "Point templates at a directory inside the profile's directory or work tree, by a relative path.",
    ),
    "token": Code(
        "error",
        "profile",
        "A volume you added projects a ServiceAccount token, which belongs to the pod's launcher, not a sidecar.",
        "Remove the serviceAccountToken projection from the volume.",
    ),
    "too-costly": Code(
        "error",
        "hatch",
        "Rendering the templates went past a CPU time, memory or output bound.",
        "Simplify the templates.",
    ),
    "too-deep": Code(
        "error",
        "load",
        "A --set or --default field path has more keys than any profile field.",
        "Use a field path the profile has.",
    ),
    "too-large": Code(
        "error",
        "load|profile|object",
        (
            "An input or output exceeds a size bound (file bytes, YAML nodes or nesting, annotations, cluster "
            "nodes, rendered objects or bytes)."
        ),
        "Make it smaller as the message says: a smaller file, fewer annotations, fewer groups, or less output.",
    ),
    "too-many-files": Code(
        "error",
        "load",
        "One command would read more profile files than it reads at most.",
        "Split the directory and run lwsgen on each part.",
    ),
    "too-small": Code(
        "error",
        "profile",
        "A storage size (the claim, the local cache or node.ephemeralStorage) is smaller than what it must hold.",
        (
            "Raise the claim or cache size above the model's, or for an emptyDir cache raise "
            "node.ephemeralStorage or use volume ephemeral."
        ),
    ),
    "uneven-stages": Code(
        "warning",
        "profile",
        (
            "parallelism.pipeline does not divide the model's layers, so stages are uneven and the group runs at "
            "the largest's pace."
        ),
        "Choose a pipeline size that divides the model's number of layers.",
    ),
    "unknown-document": Code(
        "error",
        "validate",
        "A document is neither a profile nor a Kubernetes object (no apiVersion and kind).",
        "Add runtime (a profile) or apiVersion and kind (an object), or leave the file out of validate.",
    ),
    "unknown-engine-flag": Code(
        "error|warning",
        "profile",
        (
            "A model.extraArgs flag is unknown to the engine version, removed, or an ambiguous abbreviation (a "
            "warning when checked against a nearby version)."
        ),
        "Use the engine's full, current flag name, or remove the flag.",
    ),
    "unknown-field": Code(
        "error",
        "profile",
        "The field is not one the profile allows at that place.",
        "Remove or rename it to one of the fields the message lists.",
    ),
    "unknown-gpu-product": Code(
        "error|warning",
        "profile",
        (
            "node.gpuProduct is not a GPU product label feature discovery sets, so no node may match and pods "
            "would stay Pending."
        ),
        (
            "Use the label kubectl get nodes -L nvidia.com/gpu.product shows, or set node.gpuProductUnlisted: "
            "true for an unlisted product."
        ),
    ),
    "unknown-runtime": Code(
        "error",
        "profile",
        "runtime names a runtime this version of lwsgen does not have.",
        "Set runtime to one of the available runtimes the message lists.",
    ),
    "unknown-version": Code(
        "error|warning",
        "profile",
        (
            "A version is not one lwsgen knows: kubernetesVersion has no bundled schemas (error), or the engine "
            "version is unknown or outside the checked range (warning)."
        ),
        "Set kubernetesVersion to an available version, or set runtimeVersion to the version the image runs.",
    ),
    "unknown-volume": Code(
        "error",
        "profile",
        "A volume mount names a volume that is not in the pod.",
        "Mount one of the profile's volumes the message lists, or add the volume.",
    ),
    "unquoted": Code(
        "error",
        "hatch",
        "A template places a value without the q filter.",
        "Pass the value through the q filter in the template.",
    ),
    "unreachable": Code(
        "error",
        "profile",
        (
            "service.extraPorts behind the gateway would be unreachable: the NetworkPolicy admits only the "
            "Gateway's proxies and the picker."
        ),
        "Say who reaches them in service.allowedSources or service.allowedNamespaces.",
    ),
    "unreadable": Code(
        "error",
        "load",
        "The file cannot be opened or read.",
        "Check that the path exists and is readable.",
    ),
    "unreserved-disk": Code(
        "warning",
        "profile",
        (
            "storage.localCache is an emptyDir on the node's disk, but node.ephemeralStorage is unset, so the "
            "scheduler does not reserve it."
        ),
        "Set node.ephemeralStorage to at least the local cache size.",
    ),
    "unsafe": Code(
        "error",
        "hatch",
        "A template reaches something the template sandbox forbids.",
        "Remove the forbidden access from the template.",
    ),
    "wrong-type": Code(
        "error",
        "load|profile|validate",
        (
            "A value has the wrong type for its field (a string for a number, a date, binary, a fraction for an "
            "integer)."
        ),
        "Give a value of the type the message names, quoting it where it must be a string.",
    ),
    "yaml-syntax": Code(
        "error",
        "load",
        "The file is not valid YAML.",
        "Fix the YAML syntax at the line and column given.",
    ),
}
