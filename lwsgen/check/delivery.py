"""Model delivery (model.source, storage.create, storage.localCache): where the weights are, the
path the engine reads them from, and what a profile cannot ask of it.

A hub repository at a pinned commit is downloaded once, into <storage.mountPath>/<repo>/<revision>
of the claim: a new revision is a new directory, never written over the one in use. With a local
cache the engine reads the copy under CACHE_MOUNT instead."""

from __future__ import annotations

import re
from typing import Any

from lwsgen import registry, runtimes
from lwsgen.check import budget
from lwsgen.load.source import Source
from lwsgen.problems import ERROR, WARNING, Problem
from lwsgen.profile import Profile
from lwsgen.quantity import gigabytes
from lwsgen.registry import PROFILE

CACHE_MOUNT = "/lwsgen/model-cache"
MARKER = ".lwsgen-complete"  # written last by the download script (templates/scripts/download-model.py)
JOB_INFIX = "-model-"  # the download Job: <name>-model-<8 digits of a digest> (derive/delivery.job_name)
REVISION_DIGITS = 8


def snapshot(source: dict[str, Any] | Any) -> str:
    """<repo>/<revision>: the snapshot's directory under the claim (or the local cache)."""
    repo, revision = (
        (source["repo"], source["revision"]) if isinstance(source, dict) else (source.repo, source.revision)
    )
    return f"{repo}/{revision}"


def derived_path(data: dict[str, Any]) -> str:
    """model.path for a schema-valid profile with model.source (defaults filled): the file or
    directory the engine loads, on the claim or in the local cache."""
    model, storage = data["model"], data.get("storage") or {}
    base = CACHE_MOUNT if storage.get("localCache") else storage.get("mountPath", "/var/run/models")
    path = f"{base}/{snapshot(model['source'])}"
    return f"{path}/{model['source']['file']}" if model["source"].get("file") else path


def claim_dir(profile: Profile) -> str:
    """Where the download Job writes the snapshot."""
    return f"{profile.storage.mount_path}/{snapshot(profile.model.source)}"


def cache_dir(profile: Profile) -> str:
    return f"{CACHE_MOUNT}/{snapshot(profile.model.source)}"


def model_problems(src: Source) -> list[Problem]:
    """Before the profile is built (the schema asks for one of them): model.path or model.source,
    not both; a source needs storage."""
    model = src.data.get("model") or {}
    if "source" in model and "path" in model:
        return [
            src.problem(
                ("model", "path"),
                "is derived from model.source (<storage.mountPath>/<repo>/<revision>[/<file>]): leave it out",
                "derived-field",
            )
        ]
    if "source" in model and not src.data.get("storage"):
        return [
            src.problem(
                ("model", "source"),
                "is downloaded into storage, once per cluster: set storage (claimName, and storage.create to have "
                "lwsgen emit the claim)",
                "missing-field",
            )
        ]
    return []


@registry.rule(
    "bad-format",
    "missing-field",
    "name-too-long",
    "not-supported",
    "too-small",
    scope=PROFILE,
    severity=ERROR,
)
def check(profile: Profile, src: Source) -> list[Problem]:
    """model.source and storage agree: a local cache copies a download, the claim holds the model, a
    single-file model names its file, and the names of the download objects fit."""
    source, plugin = profile.model.source, runtimes.get(profile.runtime)
    storage = profile.storage
    if source is None and storage is not None and storage.local_cache is not None:
        return [
            src.problem(
                ("storage", "localCache"),
                "copies the snapshot model.source downloads (its marker says it is whole): set model.source",
                "missing-field",
            )
        ]
    if source is None or plugin is None:
        return []
    caps = runtimes.capabilities(profile)
    problems = []
    if caps.loads_one_file and not source.file:
        problems.append(
            src.problem(
                ("model", "source"),
                f"{profile.runtime} loads one file: set model.source.file (its GGUF, the first part of a split one)",
                "missing-field",
            )
        )
    if not caps.image_has_hub_client and not source.image:
        problems.append(
            src.problem(
                ("model", "source"),
                f"the {profile.runtime} image has no python3 with huggingface_hub to download with: set "
                "model.source.image (for example python:3.12-slim with huggingface_hub installed)",
                "missing-field",
            )
        )
    problems += _file_problems(profile, src) + _claim_problems(profile, src)
    length = len(profile.name) + len(JOB_INFIX) + REVISION_DIGITS
    if length > 63:
        problems.append(
            src.problem(
                ("name",),
                f"the download Job {profile.name}{JOB_INFIX}<8 digits> is {length} characters, above 63: "
                f"shorten the name to {63 - len(JOB_INFIX) - REVISION_DIGITS}",
                "name-too-long",
            )
        )
    return problems


_SPLIT_GGUF = re.compile(r"^(.*)-\d{5}-of-(\d{5})\.gguf$")


def file_patterns(file: str) -> tuple[str, ...]:
    """What to download for a one-file engine: the file, or every part of a split GGUF."""
    split = _SPLIT_GGUF.match(file)
    return (f"{split.group(1)}-*-of-{split.group(2)}.gguf",) if split else (file,)


def _file_problems(profile: Profile, src: Source) -> list[Problem]:
    file = profile.model.source.file
    split = _SPLIT_GGUF.match(file or "")
    if split and not file.endswith(f"-00001-of-{split.group(2)}.gguf"):
        first = f"{split.group(1)}-00001-of-{split.group(2)}.gguf"
        return [
            src.problem(
                ("model", "source", "file"),
                f"llama.cpp loads a split GGUF from its first part: {first!r}",
                "bad-format",
            )
        ]
    if file and (".." in file.split("/") or re.search(r"[*?\[\]]", file)):
        return [
            src.problem(
                ("model", "source", "file"),
                f"{file!r} must name one file of the repository: no '..', no wildcards",
                "bad-format",
            )
        ]
    return []


def _claim_problems(profile: Profile, src: Source) -> list[Problem]:
    """The claim must be writable by the Job and readable by every pod, and hold the model."""
    storage, problems = profile.storage, []
    size = budget.size(profile)[0]
    create = storage.create
    pods = profile.group_size * max(profile.groups_at_most, 1)
    if create is not None and "ReadWriteMany" not in create.access_modes and pods > 1:
        problems.append(
            src.problem(
                ("storage", "create", "accessModes"),
                f"the download Job writes the claim and {pods} pods on different nodes read it: it needs ReadWriteMany",
                "not-supported",
            )
        )
    for path, quantity, what in (
        (("storage", "create", "size"), create.size if create else None, "the claim"),
        (
            ("storage", "localCache", "size"),
            storage.local_cache.size if storage.local_cache else None,
            "the local cache",
        ),
    ):
        if size is not None and quantity is not None and gigabytes(quantity) < size:
            problems.append(
                src.problem(
                    path, f"{quantity} is smaller than the model ({size:,.0f} GB): {what} cannot hold it", "too-small"
                )
            )
    cache, node_disk = storage.local_cache, profile.node.ephemeral_storage
    if (
        cache is not None
        and cache.volume == "emptyDir"
        and node_disk is not None
        and gigabytes(node_disk) < gigabytes(cache.size)
    ):
        problems.append(
            src.problem(
                ("storage", "localCache", "size"),
                f"an emptyDir of {cache.size} counts against the pod's ephemeral storage, node.ephemeralStorage "
                f"{node_disk}: raise that, or use volume ephemeral",
                "too-small",
            )
        )
    return problems


@registry.rule("default-class", "unreserved-disk", scope=PROFILE, severity=WARNING)
def warnings(profile: Profile, src: Source) -> list[Problem]:
    """Model storage that the scheduler does not reserve (an emptyDir cache with no node.ephemeralStorage)
    or that falls back to the cluster's default storage class."""
    cache = profile.storage.local_cache if profile.storage else None
    if cache is not None and cache.volume == "emptyDir" and profile.node.ephemeral_storage is None:
        return [
            src.problem(
                ("storage", "localCache", "size"),
                f"an emptyDir of {cache.size} uses the node's disk, but node.ephemeralStorage is unset: the scheduler "
                "does not reserve it; set node.ephemeralStorage to at least that",
                "unreserved-disk",
            )
        ]
    if cache is not None and cache.volume == "ephemeral" and not cache.storage_class_name:
        return [
            src.problem(
                ("storage", "localCache", "storageClassName"),
                "is unset: the ephemeral volume takes the cluster's default class, often network storage, not the "
                "node's disk; name the local class",
                "default-class",
            )
        ]
    return []
