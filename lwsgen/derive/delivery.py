"""Model delivery: the claim (storage.create), the download Job (model.source) and what the pods
that read the model run before the engine: wait, bounded, for the download's marker, and copy the
snapshot to a node-local cache (storage.localCache). The bounds come from check/budget.py.

The Job downloads into <claim>/<repo>/<revision> with templates/scripts/download-model.py
(huggingface_hub's snapshot_download, resumable), writes the marker last, and is named after the
revision, so a new revision is a new Job and a new directory beside the one in use."""

from __future__ import annotations

import hashlib
import json

from lwsgen import naming, platforms
from lwsgen.check import budget, delivery
from lwsgen.derive import pods
from lwsgen.derive.context import Context
from lwsgen.derive.model import Container, EmptyDir, EnvVar, Meta, Mount, Pod, Volume
from lwsgen.records import Record, canonical
from lwsgen.resources import script
from lwsgen.runtimes.base import SCRIPTS_MOUNT, plain_env

COMPONENT = "model-download"
REVISION_LABEL = "lwsgen/model-revision"
LOCAL_VOLUME = "model-local"
SCRIPTS = {
    "download": "download-model.py",
    "await": "await-model.sh",
    "cache": "cache-model.sh",
    "modelcar": "await-modelcar.sh",  # platforms.modelcar: the engine waits for KServe's link
}
BACKOFF = 6  # retries of a failed download (each continues the partial files)
PERMANENT_EXIT = 2  # the download script's exit status for what a retry cannot fix
# Argo CD keeps the claim (and the weights in it) when the application is deleted or the claim
# leaves the output: a re-download of hundreds of GB is not a sync side effect.
KEEP_ANNOTATION = {"argocd.argoproj.io/sync-options": "Delete=false,Prune=false"}


class Claim(Record):
    meta: Meta
    access_modes: tuple[str, ...]
    storage_class: str | None
    size: str


class EphemeralClaim(Record):
    storage_class: str | None
    size: str


class DownloadJob(Record):
    meta: Meta
    backoff: int
    deadline: int
    permanent_exit: int | None  # the exit status podFailurePolicy fails the Job on; None: no policy
    container: str
    pod: Pod


def scripts(profile) -> dict[str, str]:
    """The delivery scripts the launch ConfigMap carries for this profile."""
    wanted = []
    if profile.model.source is not None:
        wanted += [SCRIPTS["download"], SCRIPTS["await"]]
    if profile.storage is not None and profile.storage.local_cache is not None:
        wanted.append(SCRIPTS["cache"])
    if platforms.modelcar(profile):
        wanted.append(SCRIPTS["modelcar"])
    return {name: script(name) for name in wanted}


def persistentvolumeclaim(ctx: Context, kind) -> Claim | None:
    storage = ctx.profile.storage
    if storage is None or storage.create is None:
        return None
    create = storage.create
    meta = ctx.meta(kind, storage.claim_name, annotations=KEEP_ANNOTATION)
    return Claim(meta, create.access_modes, create.storage_class_name, str(create.size))


def _token(ctx: Context) -> tuple[EnvVar, ...]:
    secret = ctx.profile.model.token_secret
    return () if secret is None else (EnvVar("HF_TOKEN", secret_name=secret.name, secret_key=secret.key),)


def download_pod(ctx: Context) -> Pod:
    """The download Job's pod: off the GPU nodes, the claim read-write, a read-only root."""
    profile = ctx.profile
    source = profile.model.source
    patterns = source.allow_patterns or _default_patterns(ctx)
    env = (
        plain_env("LWSGEN_REPO", source.repo),
        plain_env("LWSGEN_REVISION", source.revision),
        plain_env("LWSGEN_TARGET", delivery.claim_dir(profile)),
        plain_env("LWSGEN_ALLOW_PATTERNS", json.dumps(list(patterns)) if patterns else ""),
        # huggingface_hub's own state (locks, token) on the claim, not in the read-only root
        plain_env("HF_HOME", f"{profile.storage.mount_path}/.lwsgen-hf-home"),
        plain_env("HF_HUB_DISABLE_TELEMETRY", "1"),
        # what a serving image may set for its own use, and would stop or change the download
        plain_env("HF_HUB_OFFLINE", "0"),
        plain_env("HF_HUB_ENABLE_HF_TRANSFER", "0"),
        *_token(ctx),
    )
    [claim_volume], [claim_mount] = pods.model_storage(profile, read_only=False)
    scripts_volume, scripts_mount = pods.launch_scripts(ctx.names.launch)
    container = pods.container(
        "download",
        source.image or profile.image,
        ("python3", f"{SCRIPTS_MOUNT}/{SCRIPTS['download']}"),
        env=env,
        resources=pods.equal({"cpu": "2", "memory": "2Gi"}),
        mounts=(claim_mount, scripts_mount, Mount("tmp", "/tmp")),
        security=pods.container_security(profile, add=())._replace(read_only_root=True),
    )
    return pods.pod(
        profile,
        ctx.placement,
        labels=naming.labels(profile.name, profile.runtime, COMPONENT, profile.labels),
        containers=(container,),
        volumes=(claim_volume, scripts_volume, Volume("tmp", empty_dir=EmptyDir(None, "1Gi"))),
        on_gpu_node=False,
        restart_policy="Never",
    )


def job_name(ctx: Context) -> str:
    """<name>-model-<8 hex digits of the revision and the pod>: a Job's pod template cannot change,
    so a new revision, image or setting is a new Job (which finds the marker and ends at once when
    the snapshot is already there)."""
    pod = canonical(download_pod(ctx))
    digest = hashlib.sha256(json.dumps([ctx.profile.model.source.revision, pod], sort_keys=True).encode()).hexdigest()
    return f"{ctx.profile.name}{delivery.JOB_INFIX}{digest[: delivery.REVISION_DIGITS]}"


def model_download(ctx: Context, kind) -> DownloadJob | None:
    profile = ctx.profile
    if profile.model.source is None:
        return None
    # podFailurePolicy: Kubernetes 1.26 and later (beta, on by default; GA in 1.31)
    policy = PERMANENT_EXIT if _version(profile.kubernetes_version) >= (1, 26) else None
    meta = ctx.meta(kind, job_name(ctx), labels={REVISION_LABEL: profile.model.source.revision})
    return DownloadJob(meta, BACKOFF, budget.budget(profile).download, policy, "download", download_pod(ctx))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _default_patterns(ctx: Context) -> tuple[str, ...] | None:
    if ctx.caps.loads_one_file:
        return delivery.file_patterns(ctx.profile.model.source.file)
    return ctx.caps.hub_patterns


def local_cache_volume(ctx: Context) -> tuple[Volume, Mount] | None:
    storage = ctx.profile.storage
    if storage is None or storage.local_cache is None:
        return None
    cache = storage.local_cache
    if cache.volume == "ephemeral":
        volume = Volume(LOCAL_VOLUME, ephemeral=EphemeralClaim(cache.storage_class_name, str(cache.size)))
    else:
        volume = Volume(LOCAL_VOLUME, empty_dir=EmptyDir(None, str(cache.size)))
    return volume, Mount(LOCAL_VOLUME, delivery.CACHE_MOUNT)


def before_engine(ctx: Context, image: str, claim_mount: Mount) -> tuple[Container, ...]:
    """Init containers of a pod that reads the model: wait for the download, then copy it locally."""
    profile = ctx.profile
    plan = budget.budget(profile)
    scripts_mount = pods.launch_scripts(ctx.names.launch)[1]
    steps = []
    security = pods.container_security(profile, add=())
    if profile.model.source is not None:
        env = (
            plain_env("LWSGEN_MODEL_MARKER", f"{delivery.claim_dir(profile)}/{delivery.MARKER}"),
            plain_env("LWSGEN_MODEL_JOB", ctx.model_job or job_name(ctx)),
            EnvVar("LWSGEN_NAMESPACE", field_path="metadata.namespace"),
            plain_env("LWSGEN_MODEL_WAIT_SECONDS", plan.download),
        )
        steps.append(
            pods.container(
                "await-model",
                image,
                ("/bin/bash", f"{SCRIPTS_MOUNT}/{SCRIPTS['await']}"),
                env=env,
                resources=pods.equal(pods.HELPER_RESOURCES),
                mounts=(claim_mount, scripts_mount),
                security=security,
            )
        )
    local = local_cache_volume(ctx)
    if local is not None:  # checks required model.source with it
        env = (
            plain_env("LWSGEN_MODEL_FROM", delivery.claim_dir(profile)),
            plain_env("LWSGEN_MODEL_TO", delivery.cache_dir(profile)),
            plain_env("LWSGEN_COPY_SECONDS", plan.copy),
        )
        steps.append(
            pods.container(
                "cache-model",
                image,
                ("/bin/bash", f"{SCRIPTS_MOUNT}/{SCRIPTS['cache']}"),
                env=env,
                resources=pods.equal({"cpu": "2", "memory": "1Gi"}),
                mounts=(claim_mount, local[1], scripts_mount),
                security=security,
            )
        )
    return tuple(steps)
