"""What the real controllers made of an example, against what lwsgen and its group simulator assumed:
the sets (a DisaggregatedSet's role sets by the names the simulator predicts), the webhook's
defaults, the StatefulSets and headless Service, every pod's name, labels and LWS env, placement on
the profile's nodes, the selectors of the Services, monitors and policies, and readiness."""

from __future__ import annotations

from lwsgen import platforms
from tests.cluster.api import Api, wait_for
from tests.groupsim import kubeenv, sim

LWS = "leaderworkerset.x-k8s.io/v1"
DS = "disaggregatedset.x-k8s.io/v1"
NAME = "leaderworkerset.sigs.k8s.io/name"
DS_NAME, DS_ROLE = "disaggregatedset.x-k8s.io/name", "disaggregatedset.x-k8s.io/role"
DS_REVISION = "disaggregatedset.x-k8s.io/revision"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def sets_made(api: Api, namespace: str, objects: list[dict], problems: list[str]) -> list[tuple[dict, dict]]:
    """(what the example or the simulator says, the real LeaderWorkerSet) for each set: the example's
    own by name; a DisaggregatedSet's role sets found by their set and role labels, then held to the
    simulator's prediction (sim.role_set, given the controller's revision): name and labels."""
    pairs = []
    for lws in (o for o in objects if o["kind"] == "LeaderWorkerSet"):
        name = lws["metadata"]["name"]
        real = _wait_quietly(lambda n=name: api.find(LWS, "LeaderWorkerSet", n, namespace), 120)
        if real is None:
            problems.append(f"LeaderWorkerSet {name} was not made")
        else:
            pairs.append((lws, real))
    for service in (o for o in objects if o["kind"] == "LLMInferenceService"):
        for real in kserve_sets(api, namespace, service, problems):
            pairs.append((real, real))  # KServe's own: what it made is what applies
    for ds in (o for o in objects if o["kind"] == "DisaggregatedSet"):
        for role in ds["spec"]["roles"]:
            query = f"{DS_NAME}={ds['metadata']['name']},{DS_ROLE}={role['name']}"
            found = _wait_quietly(lambda q=query: api.list(LWS, "LeaderWorkerSet", namespace, labelSelector=q), 120)
            if not found:
                problems.append(
                    f"DisaggregatedSet {ds['metadata']['name']}: no LeaderWorkerSet for role {role['name']}"
                )
                continue
            real = found[0]
            predicted = sim.role_set(ds, role, revision=real["metadata"]["labels"].get(DS_REVISION))
            _same_set(predicted, real, problems)
            pairs.append((predicted, real))
    return pairs


HANDLERS = ("httpGet", "exec", "tcpSocket", "grpc")


def kserve_sets(api: Api, namespace: str, service: dict, problems: list[str]) -> list[dict]:
    """The LeaderWorkerSets KServe's controller made of an LLMInferenceService (its own workload's and,
    with spec.prefill, the prefill one's), each held to lwsgen's prediction (lwsgen/output/kserve.py:
    its name, size, replicas and pod labels) and to lwsgen's pods after the merge with KServe's preset:
    lwsgen's command, one handler per probe, no root refused and no capability added by the preset
    (derive/kserve.py says each)."""
    from lwsgen.output import kserve

    made = []
    workloads = {None: service["spec"], "prefill": service["spec"].get("prefill")}
    for name, predicted in kserve.workloads([service])[0].items():
        real = _wait_quietly(lambda n=name: api.find(LWS, "LeaderWorkerSet", n, namespace), 180)
        if real is None:
            status = api.get(service["apiVersion"], "LLMInferenceService", service["metadata"]["name"], namespace)
            conditions = [
                (c["type"], c["status"], c.get("message", "")[:200])
                for c in status.get("status", {}).get("conditions", [])
            ]
            problems.append(f"KServe made no LeaderWorkerSet {name}: its conditions {conditions}")
            continue
        ours = workloads["prefill" if name.endswith(platforms.LLMISVC_PREFILL_SUFFIX) else None]
        _kserve_set_is_predicted(name, predicted, real, ours, problems)
        uri = str(service["spec"]["model"]["uri"])
        if uri.startswith(("s3://", "oci://")):  # only KServe brings these: its storage initializer, its modelcar
            _model_delivered(name, real, uri.startswith("oci://"), problems)
        made.append(real)
    if workloads["prefill"] is not None and (service["spec"].get("router") or {}).get("scheduler") is not None:
        _picks_prefill_then_decode(api, namespace, service["metadata"]["name"], problems)
    return made


def _model_delivered(name: str, real: dict, modelcar: bool, problems: list[str]) -> None:
    """Where KServe delivers the model (storageInitializer on), every pod's container main has it at
    /mnt/models, where lwsgen's engine reads it (platforms.KSERVE_MODEL_DIR): the storage initializer's
    volume there (s3), or (oci) the modelcar's emptyDir at /mnt, in which the modelcar sidecar links
    /mnt/models into its image, its process visible to main (kserve/kserve@v0.20.0
    pkg/utils/storage.go#L564-L613; the sidecar's name constants.ModelcarContainerName); main then waits
    for the link in lwsgen's launch."""
    for side in ("leaderTemplate", "workerTemplate"):
        pod = real["spec"]["leaderWorkerTemplate"][side]["spec"]
        main = next(c for c in pod["containers"] if c["name"] == "main")
        mounts = [m["mountPath"] for m in main.get("volumeMounts") or []]
        if ("/mnt" if modelcar else "/mnt/models") not in mounts:
            problems.append(f"{name} {side}: KServe mounted no model at /mnt/models in container main: {mounts}")
        if modelcar:
            names = [c["name"] for c in pod["containers"]]
            if "modelcar" not in names or pod.get("shareProcessNamespace") is not True:
                problems.append(f"{name} {side}: no modelcar sidecar sharing its processes with main: {names}")
            if "await-modelcar.sh" not in " ".join(main.get("command") or []):
                problems.append(f"{name} {side}: the engine does not wait for the modelcar's link")
            user = (main.get("securityContext") or {}).get("runAsUser")
            home = {e["name"]: e.get("value") for e in main.get("env") or []}.get("HOME")
            if user not in (None, 0) and home in (None, "/root"):  # the image's HOME is root's
                problems.append(f"{name} {side}: the engine runs as uid {user} with HOME {home}, which it cannot write")


def _picks_prefill_then_decode(api: Api, namespace: str, name: str, problems: list[str]) -> None:
    """With spec.prefill, KServe's endpoint picker runs its prefill and decode profiles: the config
    KServe generates when it first makes the picker (scheduler.go#L502-L553), which lwsgen relies on."""
    deployment = f"{name}-kserve-router-scheduler"
    found = _wait_quietly(lambda: api.find("apps/v1", "Deployment", deployment, namespace), 120)
    if found is None:
        status = api.get("serving.kserve.io/v1alpha2", "LLMInferenceService", name, namespace).get("status", {})
        conditions = [(c["type"], c["status"], c.get("message", "")[:300]) for c in status.get("conditions", [])]
        problems.append(f"KServe made no endpoint picker Deployment {deployment}: its conditions {conditions}")
        return
    args = [str(a) for c in found["spec"]["template"]["spec"]["containers"] for a in c.get("args") or []]
    text = "\n".join(args)
    missing = [f for f in ("prefill-filter", "decode-filter", "disagg-profile-handler") if f"type: {f}" not in text]
    if missing:
        problems.append(f"{deployment}: its config has no {', '.join(missing)}: no request goes to prefill first")


def _kserve_set_is_predicted(name: str, predicted: dict, real: dict, ours: dict, problems: list[str]) -> None:
    want, have = predicted["spec"], real["spec"]
    size, predicted_size = have["leaderWorkerTemplate"].get("size"), want["leaderWorkerTemplate"]["size"]
    if size != predicted_size:
        problems.append(f"{name}: size {size}, lwsgen predicted {predicted_size}")
    if have.get("replicas") != want.get("replicas"):
        problems.append(f"{name}: replicas {have.get('replicas')}, lwsgen predicted {want.get('replicas')}")
    policy = have["leaderWorkerTemplate"].get("subGroupPolicy")
    if (policy or {}).get("subGroupSize") != (want["leaderWorkerTemplate"].get("subGroupPolicy") or {}).get(
        "subGroupSize"
    ):
        problems.append(
            f"{name}: subGroupPolicy {policy}, lwsgen predicted {want['leaderWorkerTemplate'].get('subGroupPolicy')}"
        )
    for side, pod in (("leaderTemplate", ours["template"]), ("workerTemplate", ours["worker"])):
        labels = have["leaderWorkerTemplate"][side]["metadata"].get("labels") or {}
        predicted_labels = want["leaderWorkerTemplate"][side]["metadata"]["labels"]
        if any(labels.get(k) != v for k, v in predicted_labels.items()):
            problems.append(f"{name} {side}: pod labels {labels}, lwsgen predicted {predicted_labels}")
        main = next(c for c in have["leaderWorkerTemplate"][side]["spec"]["containers"] if c["name"] == "main")
        mine = pod["containers"][0]
        if (main.get("command"), main.get("args")) != (mine.get("command"), mine.get("args")):
            problems.append(f"{name} {side}: the merged engine command is not lwsgen's: {main.get('command')}")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            handlers = [h for h in HANDLERS if h in (main.get(probe) or {})]
            if main.get(probe) and handlers != ["httpGet"]:
                problems.append(f"{name} {side}: {probe} has handlers {handlers} after KServe's merge")
        security = main.get("securityContext") or {}
        if security.get("runAsNonRoot") != (mine.get("securityContext") or {}).get("runAsNonRoot"):
            problems.append(f"{name} {side}: runAsNonRoot {security.get('runAsNonRoot')} after KServe's merge")
        declared = set(((mine.get("securityContext") or {}).get("capabilities") or {}).get("add") or ())
        added = set((security.get("capabilities") or {}).get("add") or ()) - declared
        if added:  # what lwsgen's pod did not say (the profile is warned of the preset's: kserve-adds)
            problems.append(f"{name} {side}: capabilities {sorted(added)} added by KServe, not in lwsgen's pod")
        _serving_ports(name, side, have["leaderWorkerTemplate"][side]["spec"], problems)
        _sidecar_has_its_token(name, side, have["leaderWorkerTemplate"][side]["spec"], problems)


# KServe's routing sidecar watches the InferencePool through the API (llm-d-router v0.9.0
# pkg/sidecar/proxy/allowlist.go#L95-L103) and exits without a token (cmd/pd-sidecar/main.go#L75-L77).
ROUTING_SIDECAR = "llm-d-routing-sidecar"


def _sidecar_has_its_token(name: str, side: str, pod: dict, problems: list[str]) -> None:
    """A merged pod that runs KServe's routing sidecar mounts the token of the account KServe gives it."""
    if any(c["name"] == ROUTING_SIDECAR for c in pod.get("initContainers") or []):
        if pod.get("automountServiceAccountToken") is False:
            problems.append(f"{name} {side}: {ROUTING_SIDECAR} runs without a service account token")
        if not pod.get("serviceAccountName"):
            problems.append(f"{name} {side}: {ROUTING_SIDECAR} runs under no account of KServe's")


def _serving_ports(name: str, side: str, pod: dict, problems: list[str]) -> None:
    """No two containers of the merged pod (the preset's routing sidecar beside lwsgen's, say) take one port."""
    seen: dict[int, str] = {}
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        if container.get("restartPolicy") != "Always" and container in (pod.get("initContainers") or []):
            continue  # a plain init container has ended before the others start
        for port in container.get("ports") or []:
            number = port["containerPort"]
            if number in seen:
                problems.append(f"{name} {side}: port {number} taken by {seen[number]} and {container['name']}")
            seen[number] = container["name"]


def isvc_made(api: Api, namespace: str, objects: list[dict], nodes: int, problems: list[str]) -> list[dict] | None:
    """The Deployments KServe's controller made of the InferenceService, against lwsgen's prediction
    (lwsgen/output/kserve.isvc_deployments): the head's name and the labels lwsgen's PodMonitor selects,
    and the env KServe computes: RAY_NODE_COUNT the profile's group size, REQUEST_GPU_COUNT the GPUs
    per pod; the worker Deployment, seen once at least (kserve/kserve#6113 deletes it again), with
    HEAD_SVC. The head's pods, or None."""
    from lwsgen.output import kserve

    services = [o for o in objects if o["kind"] == "InferenceService"]
    predicted = kserve.isvc_deployments(services, [o for o in objects if o["kind"] == "ServingRuntime"])
    monitor = next(o for o in objects if o["kind"] == "PodMonitor")["spec"]["selector"]["matchLabels"]
    seen: dict[str, dict] = {}

    def both() -> bool:
        for want in predicted:
            real = api.find("apps/v1", "Deployment", want["metadata"]["name"], namespace)
            if real is not None:
                seen[want["metadata"]["name"]] = real
        return len(seen) == len(predicted)

    _wait_quietly(both, 120)
    for want in predicted:
        name = want["metadata"]["name"]
        real = seen.get(name)
        if real is None:
            problems.append(f"KServe made no Deployment {name}")
            continue
        labels = real["spec"]["template"]["metadata"]["labels"]
        if any(labels.get(k) != v for k, v in want["spec"]["template"]["metadata"]["labels"].items()):
            problems.append(
                f"{name}: pod labels {labels}, lwsgen predicted {want['spec']['template']['metadata']['labels']}"
            )
        env = {e["name"]: e.get("value") for e in real["spec"]["template"]["spec"]["containers"][0].get("env", [])}
        gpus = want["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        computed = (env.get("RAY_NODE_COUNT"), env.get("REQUEST_GPU_COUNT"))
        if computed != (str(nodes), gpus):
            problems.append(f"{name}: KServe computed (nodes, GPUs) {computed}; lwsgen's group is {nodes} x {gpus}")
        if name.endswith("-worker") and not env.get("HEAD_SVC"):
            problems.append(f"{name}: no HEAD_SVC, which lwsgen's worker joins the Ray head by")
        elif name.endswith("-worker"):
            _native_addresses(real, env, seen.get(predicted[0]["metadata"]["name"]), namespace, problems)
    head_name = predicted[0]["metadata"]["name"] if predicted else ""
    if head_name not in seen:
        return None
    if any(seen[head_name]["spec"]["template"]["metadata"]["labels"].get(k) != v for k, v in monitor.items()):
        problems.append(f"the PodMonitor selects {monitor}, which the head's pods do not carry")
    query = ",".join(f"{k}={v}" for k, v in monitor.items())
    pods = _wait_quietly(lambda: api.list("v1", "Pod", namespace, labelSelector=query), 120) or []
    if len(pods) != 1:
        problems.append(f"the PodMonitor's selector ({query}) selects {len(pods)} pods, one head expected")
    return pods or None


def _expanded_env(deployment: dict, namespace: str) -> dict[str, str]:
    """A Deployment's pod's first container's env as the kubelet would build it (its labels, its namespace)."""
    template = deployment["spec"]["template"]
    pod = {"metadata": {**template["metadata"], "namespace": namespace}, "spec": template["spec"]}
    container = template["spec"]["containers"][0]
    env = kubeenv.container_env(
        container, pod, prepend=[], field_values={"status.podIP": "10.0.0.9"}, secret_values={},
        config_map_values={},
    )  # fmt: skip
    return dict(env)


def _native_addresses(worker: dict, env: dict, head: dict | None, namespace: str, problems: list[str]) -> None:
    """launch.mode native (KServe's mp backend): the addresses lwsgen's pods build from the labels on
    the pods KServe made are the headless Services KServe told its worker of (HEAD_SVC, WORKER_SVC)."""
    ours = _expanded_env(worker, namespace)
    if "LWS_LEADER_ADDRESS" not in ours:
        return  # over Ray: the worker reads HEAD_SVC itself
    suffix = f".{namespace}.svc"  # the rest from the pod's DNS search path
    if ours["LWS_LEADER_ADDRESS"] != f"{env['HEAD_SVC']}{suffix}":
        said = ours["LWS_LEADER_ADDRESS"]
        problems.append(f"the worker's master address is {said}, KServe's HEAD_SVC {env['HEAD_SVC']}")
    said = _expanded_env(head, namespace).get("LWSGEN_WORKER_ADDRESS") if head else None
    if said != f"{env.get('WORKER_SVC')}{suffix}":
        problems.append(f"the head waits for its worker at {said}, KServe's WORKER_SVC is {env.get('WORKER_SVC')}")


def _same_set(predicted: dict, real: dict, problems: list[str]) -> None:
    name = real["metadata"]["name"]
    if predicted["metadata"]["name"] != name:
        problems.append(f"role set {name}: the simulator names it {predicted['metadata']['name']}")
    for where, want, have in [
        ("labels", predicted["metadata"]["labels"], real["metadata"].get("labels", {})),
        *[
            (f"{side} labels", predicted["spec"]["leaderWorkerTemplate"][side]["metadata"]["labels"],
             real["spec"]["leaderWorkerTemplate"][side]["metadata"].get("labels", {}))
            for side in ("leaderTemplate", "workerTemplate")
            if side in predicted["spec"]["leaderWorkerTemplate"]
        ],
    ]:  # fmt: skip
        differ = {k: (v, have.get(k)) for k, v in want.items() if have.get(k) != v}
        if differ:
            problems.append(f"role set {name} {where}: the simulator assumed {differ} (assumed, real)")


def webhook_defaults(applied: dict, real: dict, problems: list[str]) -> None:
    """The mutating webhook ran: the set carries defaults lwsgen did not write."""
    spec = real["spec"]
    if "networkConfig" not in applied["spec"] and "networkConfig" not in spec:
        problems.append(f"LeaderWorkerSet {real['metadata']['name']}: no networkConfig default: no webhook ran")


def desired_replicas(api: Api, lws: dict, hpa: dict | None) -> int:
    """The groups there will be: the HPA's minimum when one scales the set (the HPA controller raises
    a set below it through /scale without needing a metric), else the set's replicas."""
    if hpa is not None:
        return max(hpa["spec"].get("minReplicas", 1), lws["spec"].get("replicas", 1))
    return lws["spec"].get("replicas", 1)


def pods_of(api: Api, namespace: str, name: str) -> list[dict]:
    return api.list("v1", "Pod", namespace, labelSelector=f"{NAME}={name}")


def group_pods(api: Api, lws: dict, groups: int, problems: list[str]) -> list[dict]:
    """Wait for every pod of every group, then compare each with the simulator's prediction
    (sim.group_pods): its name, its labels and the env the pod webhook gave each container."""
    name, namespace = lws["metadata"]["name"], lws["metadata"]["namespace"]
    size = lws["spec"]["leaderWorkerTemplate"].get("size", 1)
    want = groups * size
    pods = _wait_quietly(lambda: (p := pods_of(api, namespace, name)) and len(p) >= want and p, 240) or []
    if len(pods) != want:
        problems.append(f"{name}: {len(pods)} pods, expected {groups} groups x {size}")
    by_name = {p["metadata"]["name"]: p for p in pods}
    for group in range(groups):
        for pod_name, labels, side, prepend in sim.group_pods(lws, size, group):
            pod = by_name.get(pod_name)
            if pod is None:
                problems.append(f"pod {pod_name} (the simulator's name) not made; there are {sorted(by_name)}")
                continue
            real_labels = pod["metadata"].get("labels", {})
            for key, value in labels.items():
                if real_labels.get(key) != value:
                    have = real_labels.get(key)
                    problems.append(f"pod {pod_name}: label {key}={have!r}, the simulator assumed {value!r}")
            _compare_env(pod, side, prepend, problems)
    return pods


def _compare_env(pod: dict, side: dict, prepend: list, problems: list[str]) -> None:
    written = {c["name"]: c for c in side["spec"]["containers"] + side["spec"].get("initContainers", [])}
    for container in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
        template = written.get(container["name"])
        if template is None:
            continue  # added by admission (none expected)
        assumed = kubeenv.lws_webhook_env(prepend, template.get("env", []))
        real = container.get("env", [])
        if [e["name"] for e in real] != [e["name"] for e in assumed] or [e.get("value") for e in real] != [
            e.get("value") for e in assumed
        ]:
            problems.append(
                f"pod {pod['metadata']['name']} container {container['name']}: env {_names(real)} "
                f"differs from the simulator's {_names(assumed)}"
            )


def _names(env: list[dict]) -> str:
    return ", ".join(f"{e['name']}={e.get('value', '<ref>')}" for e in env[:5]) + (" ..." if len(env) > 5 else "")


def placement(api: Api, pods: list[dict], nodes: set[str], problems: list[str]) -> bool:
    """Every pod scheduled by the real scheduler onto the profile's nodes, a group's pods on nodes of
    their own (_shared_nodes); a pod left Pending is reported with the scheduler's reason."""
    namespace = pods[0]["metadata"]["namespace"] if pods else ""
    names = [p["metadata"]["name"] for p in pods]

    def bound():
        current = [api.get("v1", "Pod", n, namespace) for n in names]
        return current if all(p["spec"].get("nodeName") for p in current) else None

    current = _wait_quietly(bound, 240)
    if current is None:
        for name in names:
            pod = api.get("v1", "Pod", name, namespace)
            if not pod["spec"].get("nodeName"):
                problems.append(f"pod {name} not scheduled: {unschedulable_reason(api, pod)}")
        return False
    used = [p["spec"]["nodeName"] for p in current]
    strays = sorted({n for n in used if n not in nodes})
    if strays:
        problems.append(f"pods landed on other examples' nodes {strays}")
    _shared_nodes(api, current, problems)
    return True


GROUP = "leaderworkerset.sigs.k8s.io/group-index"


def _gpus(pod: dict) -> int:
    limits = [c.get("resources", {}).get("limits", {}) for c in pod["spec"]["containers"]]
    return sum(int(limit.get("nvidia.com/gpu", 0)) for limit in limits)


def _shared_nodes(api: Api, pods: list[dict], problems: list[str]) -> None:
    """A group's pods each on a node of their own (a multi-node group spans nodes); pods of different
    groups may share a node when each takes only part of its GPUs (a single-pod group of 4 on 8-GPU
    nodes), never beyond the GPUs the node has."""
    by_node: dict[str, list[dict]] = {}
    for pod in pods:
        by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
    for node, on in sorted(by_node.items()):
        if len(on) < 2:
            continue
        groups = [(p["metadata"]["labels"].get(NAME), p["metadata"]["labels"].get(GROUP)) for p in on]
        names = sorted(p["metadata"]["name"] for p in on)
        if len(set(groups)) != len(groups):
            problems.append(f"pods of one group share node {node}: {names}")
        have = int(api.get("v1", "Node", node)["status"]["allocatable"].get("nvidia.com/gpu", 0))
        if sum(_gpus(p) for p in on) > have:
            problems.append(f"pods on node {node} take more than its {have} GPUs: {names}")


def unschedulable_reason(api: Api, pod: dict) -> str:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("message", condition.get("reason", ""))
    return "no scheduling condition yet"


def selectors(api: Api, namespace: str, objects: list[dict], problems: list[str]) -> None:
    """Each Service, PodMonitor, InferencePool and NetworkPolicy selects real pods (the API server
    evaluates the selector); one that selects LWS pods selects only leaders when it names worker 0."""
    for obj in objects:
        selector = _selector(obj)
        if selector is None:
            continue
        query = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        if not query:
            continue
        matched = api.list("v1", "Pod", namespace, labelSelector=query)
        what = f"{obj['kind']} {obj['metadata']['name']} ({query})"
        if not matched and _only_uncontrolled(selector, objects):
            continue
        if not matched:
            problems.append(f"{what} selects no pod")
        elif selector.get(WORKER_INDEX) == "0":
            workers = [p["metadata"]["name"] for p in matched if p["metadata"]["labels"].get(WORKER_INDEX) != "0"]
            if workers:
                problems.append(f"{what} selects workers {workers}")


UNCONTROLLED = ("MPIJob",)  # no MPI operator runs here: an MPIJob makes no pods


def _only_uncontrolled(selector: dict, objects: list[dict]) -> bool:
    """The selector is for the pods of a kind no controller here runs."""
    for obj in objects:
        for labels in _template_labels(obj.get("spec") or {}):
            if all(labels.get(k) == v for k, v in selector.items()):
                return obj["kind"] in UNCONTROLLED
    return False


def _template_labels(node) -> list[dict]:
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("template"), dict) and "spec" in node["template"]:
            found.append((node["template"].get("metadata") or {}).get("labels") or {})
        for value in node.values():
            found += _template_labels(value)
    elif isinstance(node, list):
        for value in node:
            found += _template_labels(value)
    return found


def _selector(obj: dict) -> dict | None:
    kind, spec = obj["kind"], obj.get("spec") or {}
    if kind == "Service":
        return spec.get("selector")
    if kind == "PodMonitor" or kind == "NetworkPolicy":
        key = "selector" if kind == "PodMonitor" else "podSelector"
        return (spec.get(key) or {}).get("matchLabels")
    if kind == "InferencePool":
        selector = spec.get("selector") or {}
        return selector.get("matchLabels", selector if all(isinstance(v, str) for v in selector.values()) else None)
    return None


def readiness(api: Api, lws: dict, pods: list[dict], groups: int, problems: list[str]) -> None:
    """Running is not ready: the set reports no ready group while its pods' probes have not passed;
    once they pass (the annotation kwok's stage reads), the controller counts every group ready."""
    name, namespace = lws["metadata"]["name"], lws["metadata"]["namespace"]

    def phase(pod: dict) -> str:
        return api.get("v1", "Pod", pod["metadata"]["name"], namespace)["status"].get("phase", "")

    running = _wait_quietly(lambda: all(phase(p) == "Running" for p in pods), 240)
    if not running:
        problems.append(f"{name}: pods not Running")
        return
    status = api.get(LWS, "LeaderWorkerSet", name, namespace).get("status", {})
    probed = all(any(c.get("readinessProbe") or c.get("startupProbe") for c in p["spec"]["containers"]) for p in pods)
    if probed and status.get("readyReplicas", 0):
        problems.append(f"{name}: {status['readyReplicas']} groups ready before any probe passed")
    for pod in pods:
        api.merge_patch("v1", "Pod", pod["metadata"]["name"], namespace,
                        {"metadata": {"annotations": {"lwsgen.test/probes": "passed"}}})  # fmt: skip
    ready = _wait_quietly(
        lambda: (
            (s := api.get(LWS, "LeaderWorkerSet", name, namespace).get("status", {})).get("readyReplicas") == groups
            and s
        ),
        240,
    )
    if not ready:
        status = api.get(LWS, "LeaderWorkerSet", name, namespace).get("status", {})
        problems.append(f"{name}: status {status} after every probe passed, expected {groups} ready groups")


def _wait_quietly(probe, attempts: int):
    try:
        return wait_for("", probe, attempts=attempts)
    except AssertionError:
        return None


def autoscalers(api: Api, namespace: str, objects: list[dict], problems: list[str]) -> None:
    """Every HPA's target exists with a /scale the HPA controller can read (its AbleToScale
    condition), and the controller has raised it to minReplicas (no metric needed for that)."""
    for hpa in (o for o in objects if o["kind"] == "HorizontalPodAutoscaler"):
        name = hpa["metadata"]["name"]
        ref = hpa["spec"]["scaleTargetRef"]
        target = api.find(ref["apiVersion"], ref["kind"], ref["name"], namespace)
        if target is None:
            problems.append(f"HPA {name}: its target {ref['kind']} {ref['name']} does not exist")
            continue
        if "scale" not in api.resource(ref["apiVersion"], ref["kind"]).subresources:
            problems.append(f"HPA {name}: {ref['kind']} has no scale subresource")
            continue

        def able(name=name):
            status = api.get("autoscaling/v2", "HorizontalPodAutoscaler", name, namespace).get("status", {})
            conditions = {c["type"]: c for c in status.get("conditions", [])}
            return conditions if "AbleToScale" in conditions else None

        conditions = _wait_quietly(able, 120)
        if conditions is None:
            problems.append(f"HPA {name}: the HPA controller never reported on it")
        elif conditions["AbleToScale"]["status"] != "True":
            problems.append(f"HPA {name}: not able to scale: {conditions['AbleToScale'].get('message')}")
        scale = api.get_json(api.resource(ref["apiVersion"], ref["kind"]).path(namespace, ref["name"]) + "/scale")
        minimum = hpa["spec"].get("minReplicas", 1)
        if scale["spec"].get("replicas", 0) < minimum:
            at = scale["spec"].get("replicas")
            problems.append(f"HPA {name}: {ref['kind']} {ref['name']} at {at}, below {minimum}")


SLICE = "disaggregatedset.x-k8s.io/slice"  # lwsgen/naming.SLICE_LABEL, as the controller sets it


def domains(api: Api, namespace: str, group_key: str | None, slice_key: str | None, problems: list[str]) -> None:
    """The placement the profile asks for, read off where the scheduler put the pods: with
    scheduling.exclusiveTopology each group whole in one domain of that key and no two groups in
    one; with an ExclusiveSlice placement each DisaggregatedSet slice whole in one domain of its
    topologyKey and no two slices in one."""
    pods = [
        p for p in api.list("v1", "Pod", namespace) if p["spec"].get("nodeName") and NAME in p["metadata"]["labels"]
    ]
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in api.list("v1", "Node")}

    def held(what: str, key: str, unit_of) -> None:
        found: dict[str, set[str]] = {}
        for pod in pods:
            found.setdefault(unit_of(pod), set()).add(nodes[pod["spec"]["nodeName"]].get(key, "(none)"))
        split = {unit: sorted(values) for unit, values in found.items() if len(values) != 1}
        if split:
            problems.append(f"a {what} spans several {key} domains: {split}")
        taken = [next(iter(values)) for values in found.values() if len(values) == 1]
        if len(taken) != len(set(taken)):
            problems.append(f"two {what}s share a {key} domain: {found}")
        if not found:
            problems.append(f"no placed pod to hold to {key}")

    if group_key:
        held("group", group_key, lambda p: f"{p['metadata']['labels'][NAME]}/{p['metadata']['labels'][GROUP]}")
    if slice_key:
        held("slice", slice_key, lambda p: p["metadata"]["labels"].get(SLICE, "(none)"))
