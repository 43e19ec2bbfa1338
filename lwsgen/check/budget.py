"""How long a group may take to start, from the model's size and stated bandwidths: the download
(once per cluster, by the model-download Job), the copy to a node-local cache, the rendezvous and
the load. Every bound lwsgen writes follows from here: the Job's deadline, how long pods wait for
the download, the copy's bound and the leader's startup probe (rendezvous + load).

Each transfer gets twice the time its bandwidth says (a margin for slow files and contention), plus
a fixed allowance: DOWNLOAD_SETUP for pulling the image, listing and verifying files, COPY_SETUP for the copy, and
model.startSeconds for what the engine does beyond reading weights. The load budget is never below
LOAD_FLOOR, the budget lwsgen had before it was derived (and the one it keeps when the size is unknown).
"""

from __future__ import annotations

import math

from lwsgen import platforms, runtimes
from lwsgen.check import sizing
from lwsgen.profile import Profile
from lwsgen.records import Record

MARGIN = 2
LOAD_FLOOR = 1800
DOWNLOAD_SETUP = 900  # listing and verifying files, and pulling the image onto a CPU node
COPY_SETUP = 60
UNKNOWN_DOWNLOAD = 6 * 3600  # the download bound when the size is unknown
HUB_GBPS = 0.5  # model.source.downloadGBps' default, also for pods that download a hub id themselves


class StartBudget(Record):
    size_gb: float | None  # the weights on disk; None: unknown
    size_from: str  # where the size comes from (model.sizeGB, the catalog, model.params)
    download: int | None  # seconds for the download Job (model.source); None: no download
    per_pod_download: bool  # a hub id without storage: every pod downloads the whole model while it loads
    copy: int | None  # seconds for the copy to the local cache; None: no cache
    rendezvous: int
    load: int
    load_from: str  # "model.loadTimeoutSeconds" or how it was derived
    # seconds for KServe to bring the whole model to each pod before the engine starts (its storage
    # initializer or modelcar: platforms.delivered_by_kserve); None: lwsgen's pods bring it
    fetch: int | None = None

    @property
    def startup_probe(self) -> int:
        return self.rendezvous + self.load

    @property
    def total(self) -> int:
        return (self.download or 0) + (self.copy or 0) + (self.fetch or 0) + self.startup_probe


def size(profile: Profile) -> tuple[float | None, str]:
    if profile.model.size_gb is not None:
        return profile.model.size_gb, "model.sizeGB"
    weights = sizing.profile_weights(profile)
    if weights is None:
        return None, "unknown (set model.sizeGB, model.family or model.params)"
    where = f"model.family {profile.model.family}" if profile.model.params is None else "model.params"
    return weights.gb, f"{where}, {weights.dtype}"


def downloads_per_pod(profile: Profile) -> bool:
    """A hub id as model.path, no storage, and an engine that downloads it itself."""
    hub_id = platforms.is_hub_id(profile.model.path)
    plugin = runtimes.get(profile.runtime)
    return profile.storage is None and hub_id and plugin.reads_hub_ids


def _seconds(gb: float, gbps: float, setup: int) -> int:
    return math.ceil(MARGIN * gb / gbps) + setup


def _load(profile: Profile, gb: float | None, per_pod: bool) -> tuple[int, str]:
    model, storage = profile.model, profile.storage
    if model.load_timeout_seconds is not None:
        return model.load_timeout_seconds, "model.loadTimeoutSeconds"
    if gb is None:
        return LOAD_FLOOR, "the default (the model's size is unknown)"
    if per_pod:
        amount, gbps, where = gb, HUB_GBPS, f"the whole model from the hub at {HUB_GBPS} GB/s"
    elif storage is not None and storage.local_cache is not None:
        amount, gbps = gb / profile.group_size, storage.local_cache.read_gbps
        where = f"one pod's share from the local cache at {gbps} GB/s"
    elif storage is not None:
        amount, gbps, where = (
            gb / profile.group_size,
            storage.read_gbps,
            f"one pod's share from the claim at {storage.read_gbps} GB/s",
        )
    else:
        return LOAD_FLOOR, "the default (the model is in the image or on the node)"
    derived = _seconds(amount, gbps, model.start_seconds)
    text = f"{MARGIN} x {amount:,.0f} GB ({where}) + {model.start_seconds} s engine start"
    return max(derived, LOAD_FLOOR), text + (f", raised to the {LOAD_FLOOR} s floor" if derived < LOAD_FLOOR else "")


def budget(profile: Profile) -> StartBudget:
    gb, size_from = size(profile)
    source, storage = profile.model.source, profile.storage
    download = None
    if source is not None:
        download = UNKNOWN_DOWNLOAD if gb is None else _seconds(gb, source.download_gbps, DOWNLOAD_SETUP)
    copy = None
    if storage is not None and storage.local_cache is not None:
        copy = UNKNOWN_DOWNLOAD if gb is None else _seconds(gb, storage.read_gbps, COPY_SETUP)
    per_pod = downloads_per_pod(profile)
    load, load_from = _load(profile, gb, per_pod)
    fetch = None
    if platforms.delivered_by_kserve(profile):
        fetch = UNKNOWN_DOWNLOAD if gb is None else _seconds(gb, HUB_GBPS, DOWNLOAD_SETUP)
    return StartBudget(
        gb, size_from, download, per_pod, copy, profile.launch.rendezvous_timeout_seconds, load, load_from, fetch
    )


def minutes(seconds: int | None) -> str:
    return "" if seconds is None else f"{seconds / 60:,.0f} min"


def steps(plan: StartBudget, profile: Profile) -> list[tuple[str, str]]:
    """The budget as (step, how long at most, and why) lines, in the order a group starts."""
    out = []
    gb = "an unknown size" if plan.size_gb is None else f"{plan.size_gb:,.0f} GB"
    if plan.download is not None:
        rate = profile.model.source.download_gbps
        out.append(
            ("download (once per cluster, the model-download Job)", f"{minutes(plan.download)}: {gb} at {rate} GB/s")
        )
    if plan.copy is not None:
        out.append(
            ("copy to the local cache (each pod)", f"{minutes(plan.copy)}: {gb} at {profile.storage.read_gbps} GB/s")
        )
    if plan.fetch is not None:
        out.append(
            (
                "fetch (each pod, KServe's storage initializer or modelcar, before the engine starts)",
                f"{minutes(plan.fetch)}: {gb} at {HUB_GBPS} GB/s",
            )
        )
    out.append(
        ("rendezvous (each pod waits for its group)", f"{minutes(plan.rendezvous)}: launch.rendezvousTimeoutSeconds")
    )
    out.append(
        ("load (the leader's startup probe allows rendezvous + load)", f"{minutes(plan.load)}: {plan.load_from}")
    )
    out.append(("a group starts within", minutes(plan.total)))
    return out
