"""What the engine and LeaderWorkerSet need of a group's pods, checked on rendered and built or
hand-edited output alike (an overlay can break each): every container has an image; the engine
container starts the launch (command or args); leader and workers ask the same GPUs; a Secret or a
shared volume one side reads, the other reads too; the engine flags exist in the engine version
the pods run (the runtimeVersion recorded for their image, else the version the image tag names);
and every quantity is one Kubernetes accepts (lwsgen/quantity.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lwsgen import quantity, runtimes
from lwsgen.jsondata import dig
from lwsgen.naming import RUNTIME_LABEL, RUNTIME_VERSION_ANNOTATION, RUNTIME_VERSION_IMAGE_ANNOTATION
from lwsgen.problems import Finding
from lwsgen.runtimes import versions

SIDES = ("leaderTemplate", "workerTemplate")
# Volumes every pod mounts for itself, not the weights or a Secret both sides must share.
PRIVATE_VOLUMES = ("launch", "shm", "tmp", "scripts")
# The Hub token every rank that loads the weights reads (huggingface_hub constants.py: HF_TOKEN, and
# the older HUGGING_FACE_HUB_TOKEN); an API key is the serving leader's alone.
MODEL_TOKENS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


# The engine container's names: lwsgen's leader and worker (derive/workload.py role_pod), and KServe's
# main (LLMInferenceService), kserve-container and worker-container (InferenceService).
ENGINE_CONTAINERS = ("leader", "worker", "main", "kserve-container", "worker-container")
# Flags that size the group: every rank must be given the same (the engine ranks would disagree on
# the world, and NCCL waits for ranks that never come). --node-rank differs by design.
GROUP_FLAGS = re.compile(r"--((tensor|pipeline|data|expert)[-_]parallel[-_]size|(tp|pp|dp|ep)([-_]size)?|nnodes)")


def engine(spec: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(index, container) of a pod spec's engine container: the one named as lwsgen (or KServe) names
    it, since a strategic-merge patch adding a sidecar puts it first; else the first ({} if none)."""
    containers = spec.get("containers") or []
    named = (i for i, c in enumerate(containers) if isinstance(c, dict) and c.get("name") in ENGINE_CONTAINERS)
    index = next(named, 0)
    found = containers[index] if index < len(containers) else {}
    return index, found if isinstance(found, dict) else {}


def engine_container(spec: dict[str, Any]) -> dict[str, Any]:
    return engine(spec)[1]


def flags(args: list[str]) -> Iterator[tuple[str, str | None]]:
    """(name, value) of each argument: `--flag value` or `--flag=value`."""
    for index, arg in enumerate(args):
        name, _, value = arg.partition("=")
        yield name, value or (args[index + 1] if index + 1 < len(args) else None)


def _gpus(container: dict[str, Any]) -> tuple[str, object] | None:
    limits = (container.get("resources") or {}).get("limits") or {}
    return next(((k, v) for k, v in limits.items() if str(k).endswith("/gpu")), None)


def _secret_env(container: dict[str, Any]) -> set[str]:
    return {e.get("name") for e in container.get("env") or [] if (e.get("valueFrom") or {}).get("secretKeyRef")}


def _shared_mounts(container: dict[str, Any], spec: dict[str, Any]) -> set[str]:
    kinds = {v.get("name"): v for v in spec.get("volumes") or []}
    return {
        m.get("name")
        for m in container.get("volumeMounts") or []
        if m.get("name") not in PRIVATE_VOLUMES
        and not any(key in kinds.get(m.get("name"), {}) for key in ("configMap", "emptyDir", "downwardAPI"))
    }


def _containers(spec: dict[str, Any], at: tuple) -> Iterator[Finding]:
    for group in ("initContainers", "containers"):
        for c, container in enumerate(spec.get(group) or []):
            if isinstance(container, dict) and not container.get("image"):
                yield Finding((*at, group, c), f"container {container.get('name')!r} has no image")
    index, main = engine(spec)
    if main and not main.get("command"):
        what = "neither command nor args" if not main.get("args") else "args but no command"
        yield Finding(
            (*at, "containers", index),
            f"the engine container has {what}: it would run its image's entrypoint, not the group's launch "
            "(render the profile again)",
        )


def _runtime(lws: dict[str, Any], side: str):
    """The runtime plugin lwsgen's name label names on the object, else on its pod template, if any: the
    object's first, since KServe labels its pods with the service's name (output/kserve.py), which
    could be a runtime's and not the one the pods run."""

    template = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get(side) or {}
    for metadata in (lws.get("metadata"), template.get("metadata")):
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if isinstance(labels, dict) and RUNTIME_LABEL in labels:
            return runtimes.get(str(labels[RUNTIME_LABEL]))
    return None


def _workers_load_model(lws: dict[str, Any]) -> bool:
    plugin = _runtime(lws, "leaderTemplate")
    return plugin.workers_load_model if plugin is not None else True


def _sides(lwt: dict[str, Any], workers_load_model: bool = True) -> Iterator[Finding]:
    leader, worker = (lwt.get(side, {}).get("spec") or {} for side in SIDES)
    specs = {"leaderTemplate": leader, "workerTemplate": worker}
    found = {side: engine(spec) for side, spec in specs.items()}
    at = {side: ("spec", "leaderWorkerTemplate", side, "spec", "containers", found[side][0]) for side in SIDES}
    mains = {side: container for side, (_, container) in found.items()}
    gpus = {side: _gpus(container) for side, container in mains.items()}
    if (gpus["leaderTemplate"] is None) != (gpus["workerTemplate"] is None) or (
        gpus["leaderTemplate"]
        and (
            gpus["leaderTemplate"][0] != gpus["workerTemplate"][0]
            or quantity.parse(gpus["leaderTemplate"][1]) != quantity.parse(gpus["workerTemplate"][1])
        )
    ):
        said = {side: (f"{g[1]} {g[0]}" if g else "no GPU") for side, g in gpus.items()}
        short = "leaderTemplate" if gpus["leaderTemplate"] is None else "workerTemplate"
        yield Finding(
            (*at[short], "resources"),
            f"the leader asks {said['leaderTemplate']} and each worker {said['workerTemplate']}: every pod of a group "
            "is one rank set of the same engine, with the same GPUs (render the profile again)",
        )
    yield from _same_engine(mains, specs, at)
    for mine, other in (SIDES, SIDES[::-1]):
        if mine == SIDES[1] and not workers_load_model:
            continue
        needed = (_secret_env(mains[other]) - _secret_env(mains[mine])) & set(MODEL_TOKENS)
        for name in sorted(needed):
            yield Finding(
                (*at[mine], "env"),
                f"has no {name} from its Secret, which the {_side(other)} reads: "
                f"the {_side(mine)} would start without it",
            )
        theirs = _shared_mounts(mains[other], leader if other == SIDES[0] else worker)
        ours = _shared_mounts(mains[mine], leader if mine == SIDES[0] else worker)
        for name in sorted(theirs - ours):
            yield Finding(
                (*at[mine], "volumeMounts"),
                f"does not mount {name!r}, which the {_side(other)} mounts: every rank loads the same model",
            )


def _group_flags(container: dict[str, Any]) -> dict[str, str]:
    """The group-sizing flags an engine container is given, by name: `--flag value` or `--flag=value`."""
    words = [str(w) for key in ("command", "args") for w in container.get(key) or []]
    return {name.replace("_", "-"): value for name, value in flags(words) if GROUP_FLAGS.fullmatch(name)}


def _same_engine(mains: dict[str, dict], specs: dict[str, dict], at: dict[str, tuple]) -> Iterator[Finding]:
    """Every pod of a group is one rank set of the same engine on the same kind of node: the same
    image, the same node selection, the same group-sizing flags (an overlay can patch one side)."""
    worker = SIDES[1]
    images = [mains[side].get("image") for side in SIDES]
    if all(isinstance(i, str) for i in images) and images[0] != images[1]:
        yield Finding(
            (*at[worker], "image"),
            f"the workers run {images[1]!r} and the leader {images[0]!r}: every rank of a group must run the same "
            "engine build (patch both templates, or use kustomize's images: to change it)",
        )
    for field, path in (("nodeSelector", ("nodeSelector",)), ("node affinity", ("affinity", "nodeAffinity"))):
        chosen = [dig(specs[side], *path) for side in SIDES]
        if chosen[0] != chosen[1]:
            yield Finding(
                ("spec", "leaderWorkerTemplate", worker, "spec", *path),
                f"the workers' {field} differs from the leader's: a group would span different kinds of node "
                "(GPU product, instance type), and its ranks must be alike; patch both templates",
            )
    flags = [_group_flags(mains[side]) for side in SIDES]
    for flag in sorted(set(flags[0]) & set(flags[1])):
        if flags[0][flag] != flags[1][flag]:
            yield Finding(
                (*at[worker], "args"),
                f"the workers are given {flag} {flags[1][flag]} and the leader {flag} {flags[0][flag]}: every rank "
                "must be given the same group size, or they wait for ranks that never come",
            )


def _side(side: str) -> str:
    return "leader" if side == SIDES[0] else "worker"


def _same_release(declared_for: object, image: str) -> bool:
    """The image a version was declared for, or it mirrored (another registry or repository) or
    pinned (a digest added): the same tag, and the same digest if it named one. A retag is not."""
    if not isinstance(declared_for, str):
        return False
    recorded_digest = versions.image_digest(declared_for)
    return versions.image_tag(declared_for) == versions.image_tag(image) and recorded_digest in (
        None,
        versions.image_digest(image),
    )


def _declared(engine: versions.Engine, annotations: dict[str, Any]) -> str | None:
    """The version the runtimeVersion annotation records, as the table spells it; None if absent or not one."""
    declared = annotations.get(RUNTIME_VERSION_ANNOTATION)
    text = versions.given(engine, declared) if isinstance(declared, str) else None
    return text if text is not None and versions.parses(text) else None


def _running(engine: versions.Engine, image: str, annotations: dict[str, Any]) -> versions.EngineVersion | None:
    """The version the pods run: the runtimeVersion render recorded, while they run the release it was
    declared for (an overlay's retag is held to the new tag), else the version the image tag names."""
    declared = _declared(engine, annotations)
    if declared is not None and _same_release(annotations.get(RUNTIME_VERSION_IMAGE_ANNOTATION), image):
        return versions.EngineVersion(engine, declared, "runtimeVersion")
    text = versions.from_tag(engine, image)
    return versions.EngineVersion(engine, text, "image") if text is not None else None


def _declared_problem(engine: versions.Engine, annotations: dict[str, Any], at: tuple) -> Iterator[Finding]:
    declared = annotations.get(RUNTIME_VERSION_ANNOTATION)
    if declared is not None and _declared(engine, annotations) is None:
        yield Finding(
            (*at, "metadata", "annotations", RUNTIME_VERSION_ANNOTATION),
            f"{declared!r} is not a {engine.title} version: the engine flags cannot be held to it; write it as "
            f"the engine does (e.g. {engine.spell(engine.checked)}), or render the profile again",
        )


def _flags(lws: dict[str, Any]) -> Iterator[Finding]:
    """The engine flags lwsgen wrote for the version it rendered, against the version the object's pods
    run now (an overlay's retag): features the runtime plugin ties to its flags."""

    lwt = lws["spec"]["leaderWorkerTemplate"]
    for side in SIDES:
        template = lwt.get(side) or {}
        plugin = _runtime(lws, side)
        features = plugin.flag_features if plugin is not None else None
        container_at, main = engine(template.get("spec") or {})
        if not features or not isinstance(main.get("image"), str):
            continue
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        annotations = annotations if isinstance(annotations, dict) else {}
        yield from _declared_problem(plugin.engine, annotations, ("spec", "leaderWorkerTemplate", side))
        running = _running(plugin.engine, main["image"], annotations)
        if running is None:
            continue
        for key in ("command", "args"):
            for index, arg in enumerate(main.get(key) or []):
                feature = features.get(str(arg).split("=", 1)[0])
                message = running.needs(feature, str(arg).split("=", 1)[0]) if feature else None
                if message:
                    where = ("spec", "leaderWorkerTemplate", side, "spec", "containers", container_at, key, index)
                    yield Finding(where, message.replace("this profile runs", f"image {main['image']!r} runs"))


def lws_errors(lws: dict[str, Any]) -> Iterator[Finding]:
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    for side in SIDES:
        if isinstance(lwt.get(side), dict):
            yield from _containers(lwt[side].get("spec") or {}, ("spec", "leaderWorkerTemplate", side, "spec"))
    if isinstance(lwt.get("leaderTemplate"), dict) and isinstance(lwt.get("workerTemplate"), dict):
        yield from _sides(lwt, _workers_load_model(lws))
    yield from _flags(lws)


def _pod_specs(obj: dict[str, Any]) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(path, pod spec) of every pod template an object holds."""
    spec = obj.get("spec") or {}
    for side in SIDES:
        template = (spec.get("leaderWorkerTemplate") or {}).get(side)
        if isinstance(template, dict):
            yield ("spec", "leaderWorkerTemplate", side, "spec"), template.get("spec") or {}
    for r, role in enumerate(spec.get("roles") or []):
        for side in SIDES:
            template = (((role or {}).get("spec") or {}).get("leaderWorkerTemplate") or {}).get(side)
            if isinstance(template, dict):
                yield ("spec", "roles", r, "spec", "leaderWorkerTemplate", side, "spec"), template.get("spec") or {}
    template = spec.get("template") or ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    if isinstance(template, dict):
        yield ("spec", "template", "spec"), template.get("spec") or {}
    for name, replica in (spec.get("mpiReplicaSpecs") or {}).items():
        yield (
            ("spec", "mpiReplicaSpecs", name, "template", "spec"),
            ((replica or {}).get("template") or {}).get("spec") or {},
        )


def _bad(value: object, at: tuple, what: str) -> Iterator[Finding]:
    amount = quantity.parse(value)
    if amount is None:
        yield Finding(at, f"{value!r} is not {quantity.HELP}; the API server would refuse {what}")
    elif amount < 0:
        yield Finding(at, f"{value!r} is negative; the API server would refuse {what}")


def quantity_errors(obj: dict[str, Any]) -> Iterator[Finding]:
    """Every resource amount, emptyDir sizeLimit and claim size, parsed as apimachinery parses it
    (Kubernetes' schema types a quantity as any string, so `memory: 800GB` passes the schema)."""
    for at, spec in _pod_specs(obj):
        for group in ("initContainers", "containers"):
            for c, container in enumerate(spec.get(group) or []):
                resources = (container or {}).get("resources") or {}
                for side in ("limits", "requests"):
                    for name, value in (resources.get(side) or {}).items():
                        yield from _bad(value, (*at, group, c, "resources", side, name), f"{name} {value!r}")
        for v, volume in enumerate(spec.get("volumes") or []):
            empty = (volume or {}).get("emptyDir") or {}
            if "sizeLimit" in empty:
                yield from _bad(empty["sizeLimit"], (*at, "volumes", v, "emptyDir", "sizeLimit"), "the sizeLimit")
    if obj.get("kind") == "PersistentVolumeClaim":
        for side in ("requests", "limits"):
            for name, value in (((obj.get("spec") or {}).get("resources") or {}).get(side) or {}).items():
                yield from _bad(value, ("spec", "resources", side, name), f"the claim's {name}")
