"""Invariants of one output directory, checked on hand-edited manifests as on rendered ones, each
reported at the offending field: the group's GPUs equal the world size in the engine arguments;
probes name declared ports; mounts name volumes; ConfigMaps lwsgen's volumes mount and the
ServiceAccounts the pods use are in the set; an autoscaled LWS leaves replicas to its autoscaler;
the NetworkPolicy selects the LWS; the HPA's metric is served by an adapter rule whose series a
recording rule records, and KEDA queries a recorded series; ConfigMap volume items, the launch
scripts a command runs and the scripts hash annotation agree with the ConfigMap in the set; leader
and worker read the same Secret keys and mount shared volumes at the same paths."""

import re
from collections.abc import Iterator
from typing import Any

from lwsgen import platforms, registry
from lwsgen.check.pods import OWN_VOLUMES
from lwsgen.jsondata import dig
from lwsgen.naming import LWS_NAME_LABEL, SCRIPTS_HASH_ANNOTATION, SET_NAME_LABEL, scripts_digest
from lwsgen.output import podneeds
from lwsgen.output.inventory import RECORD_MATCH, Inventory
from lwsgen.output.sets import as_leaderworkersets
from lwsgen.problems import Finding
from lwsgen.registry import SET

SIDES = podneeds.SIDES
# Engine flags that carry tensor and pipeline degrees (vllm/aphrodite, sglang, trtllm-serve).
TENSOR_FLAGS = ("--tensor-parallel-size", "--tp", "--tp-size", "--tp_size")
PIPELINE_FLAGS = ("--pipeline-parallel-size", "--pp-size", "--pp_size")


def _flag(args: list[str], names: tuple[str, ...]) -> str | None:
    return next((value for name, value in podneeds.flags(args) if name in names), None)


def _gpus(container: dict[str, Any]) -> int | None:
    limits = container.get("resources", {}).get("limits", {})
    found = [int(v) for k, v in limits.items() if k.endswith("/gpu") and str(v).isdigit()]
    return found[0] if found else None


def _world_in_args(container: dict[str, Any]) -> int | None:
    args = [str(a) for a in (*container.get("command", []), *container.get("args", []))]
    env = {e.get("name"): e.get("value") for e in container.get("env", []) if "value" in e}
    if str(env.get("LWSGEN_WORLD_SIZE", "")).isdigit():
        return int(env["LWSGEN_WORLD_SIZE"])
    tensor = _flag(args, TENSOR_FLAGS)
    if tensor is None or not tensor.isdigit():
        return None
    pipeline = _flag(args, PIPELINE_FLAGS) or "1"
    data = _flag(args, ("--data-parallel-size",)) or "1"  # vLLM's: one engine per rank (SGLang's dp divides tp)
    return int(tensor) * int(pipeline) * int(data) if pipeline.isdigit() and data.isdigit() else None


def _lws(lws: dict[str, Any], names: dict[str, set[str]], scaled: set[str]) -> Iterator[Finding]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size = lwt.get("size", 1)
    leader = lwt.get("leaderTemplate") or lwt["workerTemplate"]
    main = podneeds.engine_container(leader["spec"])
    world, gpus = _world_in_args(main), _gpus(main)
    if world is not None and gpus is not None and size * gpus != world:
        yield Finding(
            ("spec", "leaderWorkerTemplate", "size"),
            (
                f"size {size} x {gpus} GPUs per pod is {size * gpus} GPUs, but the engine arguments ask for a world "
                f"size of {world} (data x tensor x pipeline): change both together, from the profile"
            ),
        )
    if lws["metadata"]["name"] in scaled and "replicas" in lws["spec"]:
        yield Finding(
            ("spec", "replicas"),
            "is set although an autoscaler owns this LeaderWorkerSet's replicas; "
            "a GitOps sync would reset what it scaled",
        )
    for side in SIDES:
        template = lwt.get(side)
        if template is None:
            continue
        at = ("spec", "leaderWorkerTemplate", side)
        mounted = _config_map_volumes(template["spec"], names)
        yield from _pod(template["spec"], (*at, "spec"), names, mounted)
        yield from _scripts_hash(template, at, mounted)
    if "leaderTemplate" in lwt:
        yield from _sides_agree(lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"])
    yield from podneeds.lws_errors(lws)


def _config_map_volumes(spec: dict[str, Any], names: dict) -> dict[str, dict[str, Any]]:
    """Volume name -> data of the ConfigMap it mounts, for ConfigMaps in the set."""
    return {
        v.get("name"): names["data"][v["configMap"]["name"]]
        for v in spec.get("volumes", [])
        if v.get("configMap", {}).get("name") in names["data"]
    }


def _pod(spec: dict[str, Any], at: tuple, names: dict, mounted: dict) -> Iterator[Finding]:
    for v, volume in enumerate(spec.get("volumes", [])):
        config_map = volume.get("configMap", {}).get("name")
        own = volume.get("name") in OWN_VOLUMES  # the profile's own volumes may mount the cluster's ConfigMaps
        if own and config_map and names["ConfigMap"] and config_map not in names["ConfigMap"]:
            yield Finding((*at, "volumes", v, "configMap", "name"), f"ConfigMap {config_map!r} is not in this set")
        for i, item in enumerate(volume.get("configMap", {}).get("items", [])):
            if config_map in names["data"] and item.get("key") not in names["data"][config_map]:
                yield Finding(
                    (*at, "volumes", v, "configMap", "items", i, "key"),
                    f"{item.get('key')!r} is not a key of ConfigMap {config_map!r}",
                )
    account = spec.get("serviceAccountName")
    if account and names["ServiceAccount"] and account not in names["ServiceAccount"]:
        yield Finding((*at, "serviceAccountName"), f"ServiceAccount {account!r} is not in this set")
    for group in ("initContainers", "containers"):
        for c, container in enumerate(spec.get(group, [])):
            ports = {p.get("name") for p in container.get("ports", [])}
            yield from _runs_mounted_script(container, mounted, (*at, group, c))
            yield from _secret_keys(container, names["secrets"], (*at, group, c))
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                port = container.get(probe, {}).get("httpGet", {}).get("port")
                if isinstance(port, str) and port not in ports:
                    yield Finding(
                        (*at, group, c, probe, "httpGet", "port"), f"{port!r} is not a named port of this container"
                    )


def _runs_mounted_script(container: dict[str, Any], mounted: dict, at: tuple) -> Iterator[Finding]:
    """A command that runs a file from a mounted ConfigMap names one of its keys."""
    mounts = {
        m.get("mountPath", "").rstrip("/") + "/": m.get("name")
        for m in container.get("volumeMounts", [])
        if m.get("name") in mounted and not m.get("subPath")
    }
    for index, arg in enumerate(container.get("command", [])):
        for prefix, volume in mounts.items():
            if isinstance(arg, str) and arg.startswith(prefix) and "/" not in arg[len(prefix) :]:
                if arg[len(prefix) :] not in mounted[volume]:
                    keys = ", ".join(sorted(mounted[volume]))
                    yield Finding(
                        (*at, "command", index), f"runs {arg!r}, but its ConfigMap has no such key (it has: {keys})"
                    )


def _secret_keys(container: dict[str, Any], secrets: dict[str, set], at: tuple) -> Iterator[Finding]:
    for e, env in enumerate(container.get("env", [])):
        ref = env.get("valueFrom", {}).get("secretKeyRef", {})
        if ref.get("name") in secrets and ref.get("key") not in secrets[ref["name"]] and not ref.get("optional"):
            yield Finding(
                (*at, "env", e, "valueFrom", "secretKeyRef", "key"),
                f"{ref.get('key')!r} is not a key of Secret {ref['name']!r} in this set",
            )


def _scripts_hash(template: dict[str, Any], at: tuple, mounted: dict) -> Iterator[Finding]:
    """The hash annotation rolls the pods when their scripts change; a stale one means they would not."""
    recorded = (template.get("metadata") or {}).get("annotations", {}).get(SCRIPTS_HASH_ANNOTATION)
    if recorded is None or len(mounted) != 1:
        return
    [data] = mounted.values()
    actual = scripts_digest({k: str(v) for k, v in data.items()})
    if recorded != actual:
        yield Finding(
            (*at, "metadata", "annotations", SCRIPTS_HASH_ANNOTATION),
            f"is not the sha256 of the launch scripts in the ConfigMap ({actual}): the pods would not roll when "
            "the scripts change; render again, or set it to that value",
        )


def _env_secrets(spec: dict[str, Any]) -> dict[str, tuple]:
    """Env var -> (Secret, key) for the first container, where it reads a Secret."""
    return {
        e.get("name"): (ref.get("name"), ref.get("key"))
        for e in podneeds.engine_container(spec).get("env", [])
        if (ref := e.get("valueFrom", {}).get("secretKeyRef"))
    }


def _mount_paths(spec: dict[str, Any]) -> dict[str, str]:
    return {
        m.get("name"): m.get("mountPath")
        for m in podneeds.engine_container(spec).get("volumeMounts", [])
        if not m.get("subPath")
    }


def _sides_agree(leader: dict[str, Any], worker: dict[str, Any]) -> Iterator[Finding]:
    """Leader and workers run one program: a Secret or a shared volume that differs between them
    (a token only the leader can read, weights at another path) breaks the workers."""
    index, main = podneeds.engine(worker)
    at = ("spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", index)
    leader_secrets = _env_secrets(leader)
    for e, env in enumerate(main.get("env", [])):
        ref = env.get("valueFrom", {}).get("secretKeyRef")
        theirs = leader_secrets.get(env.get("name"))
        if ref and theirs and (ref.get("name"), ref.get("key")) != theirs:
            yield Finding(
                (*at, "env", e, "valueFrom", "secretKeyRef"),
                f"reads Secret {ref.get('name')!r} key {ref.get('key')!r}, but the leader reads "
                f"{theirs[0]!r} key {theirs[1]!r} for {env.get('name')}",
            )
    leader_paths = _mount_paths(leader)
    for m, mount in enumerate(main.get("volumeMounts", [])):
        theirs = leader_paths.get(mount.get("name"))
        if theirs and not mount.get("subPath") and mount.get("mountPath") != theirs:
            yield Finding(
                (*at, "volumeMounts", m, "mountPath"),
                f"mounts {mount.get('name')!r} at {mount.get('mountPath')!r}, but the leader mounts it at {theirs!r}",
            )


_QUERY_METRIC = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")


@registry.rule("cross-object", scope=SET, kinds=("LeaderWorkerSet",))
def group_is_whole(lws: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A LeaderWorkerSet's group holds the world size the engine arguments say; probes name declared
    ports; mounts name volumes; the ConfigMaps, Secrets and ServiceAccounts its pods use are in the set;
    the launch scripts it runs and their hash agree with the ConfigMap; an autoscaled set leaves
    replicas to its autoscaler; leader and worker read the same Secret keys and mount shared volumes
    at the same paths; the engine flags fit the engine version of the image."""
    return _lws(lws, inv.names, inv.scaled)


# The LeaderWorkerSet's pod templates as an LLMInferenceService holds them (bare pod specs).
_KSERVE_SIDES = {"leaderTemplate": "template", "workerTemplate": "worker"}


def _on_service(path: tuple, workload: tuple) -> tuple:
    """A path into a LeaderWorkerSet KServe makes, as the path into the LLMInferenceService's workload
    (("spec",), or ("spec", "prefill")) it comes from."""
    if path[:2] == ("spec", "leaderWorkerTemplate") and len(path) > 3 and path[2] in _KSERVE_SIDES:
        return (*workload, _KSERVE_SIDES[path[2]], *path[4:])
    return workload


@registry.rule("cross-object", scope=SET, kinds=("LLMInferenceService",))
def kserve_group_is_whole(service: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """Each LeaderWorkerSet KServe makes of an LLMInferenceService (output/kserve.py), of its own
    workload and of spec.prefill, holds what a LeaderWorkerSet of lwsgen's does: world size, probes on
    declared ports, mounts on volumes, the ConfigMaps and Secrets of the set, launch scripts that agree
    with their ConfigMap."""
    name = str((service.get("metadata") or {}).get("name"))
    for role, workload in ((None, ("spec",)), ("prefill", ("spec", "prefill"))):
        lws = inv.lws.get(platforms.llmisvc_lws(name, role))
        if lws is not None:
            found = _lws(lws, inv.names, inv.scaled)
            yield from (e._replace(path=_on_service(tuple(e.path), workload)) for e in found)


@registry.rule("cross-object", scope=SET, kinds=("InferenceService",))
def isvc_sizes_are_its_runtimes(service: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """KServe takes an InferenceService's workerSpec sizes over those of the ServingRuntime it names
    (kserve/kserve@v0.20.0 components/predictor.go#L569-L576) and sizes the pods from them: they must be
    the runtime's, which the engine's flags and (on the mp backend) the pods' GPUs are held to."""
    predictor = dig(service, "spec", "predictor")
    worker = predictor.get("workerSpec") if isinstance(predictor, dict) else None
    name = dig(predictor, "model", "runtime")
    runtime = inv.named["ServingRuntime"].get(name) if isinstance(name, str) else None
    if not isinstance(worker, dict) or runtime is None:
        return
    theirs = dig(runtime, "spec", "workerSpec")
    for field in platforms.ISVC_SIZE_FIELDS:
        said = dig(theirs, field)
        if field in worker and worker[field] != said:
            runtime_says = f"the runtime's {said}" if said is not None else "the runtime, which does not say it"
            message = (
                f"KServe takes {field} {worker[field]} over {runtime_says}, for which its engine's flags and pods "
                f"are sized: write the runtime's value here, or change the profile and render again"
            )
            yield Finding(("spec", "predictor", "workerSpec", field), message)


@registry.rule("cross-object", scope=SET, kinds=("DisaggregatedSet",))
def every_role_is_whole(ds: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """Each role of a DisaggregatedSet, as the LeaderWorkerSet it becomes, holds what a LeaderWorkerSet does."""
    return (
        error._replace(path=(*prefix, *error.path))
        for prefix, lws in as_leaderworkersets(ds)
        for error in _lws(lws, inv.names, inv.scaled)
    )


@registry.rule("cross-object", scope=SET, kinds=("NetworkPolicy",))
def policy_selects_the_group(policy: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A NetworkPolicy selects a LeaderWorkerSet or DisaggregatedSet of the set."""
    return _policy(policy, inv.names["LeaderWorkerSet"], inv.names["DisaggregatedSet"])


@registry.rule("cross-object", scope=SET, kinds=("HorizontalPodAutoscaler",))
def autoscaler_metric_is_served(hpa: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """The HorizontalPodAutoscaler's pods metric is served by a prometheus-adapter rule of the set."""
    return _hpa(hpa, inv.served, inv.records)


@registry.rule("cross-object", scope=SET, kinds=("ScaledObject",))
def keda_query_is_recorded(scaled: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A KEDA trigger's query reads series that a PrometheusRule of the set records."""
    return _keda(scaled, inv.records)


@registry.rule("cross-object", scope=SET)
def adapter_series_are_recorded(fragment: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """A prometheus-adapter rule reads a series a PrometheusRule of the set records."""
    if fragment.get("kind") is not None or not isinstance(fragment.get("rules"), list) or inv.records is None:
        return iter(())
    return _adapter(fragment, inv.records)


@registry.rule("bad-quantity", scope=SET)
def quantities_parse(obj: dict[str, Any], inv: Inventory) -> Iterator[Finding]:
    """Every resource quantity of a pod template is one the API server parses, and not negative."""
    return podneeds.quantity_errors(obj)


def _policy(policy: dict[str, Any], lws_names: set[str], set_names: set[str] = frozenset()) -> Iterator[Finding]:
    chosen = policy["spec"].get("podSelector", {}).get("matchLabels", {})
    if SET_NAME_LABEL in chosen and chosen[SET_NAME_LABEL] not in set_names:
        yield Finding(
            ("spec", "podSelector", "matchLabels", SET_NAME_LABEL),
            f"selects DisaggregatedSet {chosen[SET_NAME_LABEL]!r}, which is not in this set",
        )
    selected = chosen.get(LWS_NAME_LABEL)
    if selected is not None and lws_names and selected not in lws_names:
        yield Finding(
            ("spec", "podSelector", "matchLabels", LWS_NAME_LABEL),
            f"selects LeaderWorkerSet {selected!r}, which is not in this set",
        )


def _hpa(hpa: dict[str, Any], served: dict[str, str] | None, records: set[str] | None) -> Iterator[Finding]:
    for m, metric in enumerate(hpa["spec"].get("metrics", [])):
        name = metric.get("pods", {}).get("metric", {}).get("name")
        if name and served is not None and name not in served:
            yield Finding(
                ("spec", "metrics", m, "pods", "metric", "name"),
                f"{name!r} is served by no prometheus-adapter rule in this set; served: "
                + ", ".join(sorted(filter(None, served))),
            )


def _adapter(fragment: dict[str, Any], records: set[str]) -> Iterator[Finding]:
    for r, rule in enumerate(fragment["rules"]):
        match = RECORD_MATCH.match(str(rule.get("name", {}).get("matches", "")))
        if match and match.group(1) not in records:
            yield Finding(
                ("rules", r, "name", "matches"),
                f"series {match.group(1)!r} is recorded by no PrometheusRule in this set",
            )


def _keda(scaled: dict[str, Any], records: set[str] | None) -> Iterator[Finding]:
    if records is None:
        return
    for t, trigger in enumerate(scaled["spec"].get("triggers", [])):
        query = str(trigger.get("metadata", {}).get("query", ""))
        for metric in set(_QUERY_METRIC.findall(query)):
            if ":" in metric and metric not in records:
                yield Finding(
                    ("spec", "triggers", t, "metadata", "query"),
                    f"reads {metric!r}, which no PrometheusRule in this set records",
                )
