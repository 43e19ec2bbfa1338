"""Aphrodite Engine (a vLLM fork), launched as vllm is: natively or on a Ray cluster.

Launch (`launch.mode`; the default is `native` from Aphrodite 0.20.0, `ray` before it), as for
vllm (see there), with Aphrodite's server on its default port 2242: from 0.20.0 `aphrodite serve
<model.path>` (the package moved from `aphrodite.endpoints` to `aphrodite.entrypoints`, so the
old module path fails there); before it `python3 -m aphrodite.endpoints.openai.api_server
--model <model.path>`. Natively every pod runs it with `--nnodes/--node-rank/--master-addr
/--master-port` and the workers `--headless` (`APHRODITE_HOST_IP` is the pod's IP). On Ray, the
leader serves with `--distributed-executor-backend ray`; Ray is an optional extra in Aphrodite
0.6.x images and absent from 0.20.0 images, and a Ray launch on an image without it fails at once
with that sentence. Aphrodite's Docker images are tagged `latest` and a commit, not a version: set
`runtimeVersion`.
Metrics are on the serving port with the `aphrodite:` prefix (`aphrodite:num_requests_waiting`,
`aphrodite:num_requests_running`, and `aphrodite:kv_cache_usage_perc` from 0.9.0,
`aphrodite:gpu_cache_usage_perc` before it). Health is `/health`.
"""

from __future__ import annotations

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import Capabilities, Probes, Runtime, RuntimeParts
from lwsgen.runtimes.versions import Since

NAME = "aphrodite"
SERVING_PORT = 2242
LAUNCH_MODES = ("native", "ray")

READS_HUB_IDS = True  # model.path may be a hub id the engine downloads at start

ENGINE = versions.Engine(
    title="Aphrodite",
    # alpindale/aphrodite-openai is pushed as :latest and :<commit> (build_and_upload_docker.sh@v0.20.0
    # lines 48-52); a v<version> tag is read if an image has one.
    tag=r"^v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?:-|$)",
    checked="0.20.0",
    oldest="0.6.5",
    table=(
        Since(
            "kv-cache-usage-perc",
            "0.9.0",
            "aphrodite/v1/metrics/loggers.py@v0.9.0; aphrodite:gpu_cache_usage_perc hidden in v0.10.0, removed in "
            "v0.20.0",
            "the KV-cache usage gauge is aphrodite:kv_cache_usage_perc (aphrodite:gpu_cache_usage_perc before)",
        ),
        Since(
            "entrypoints-package",
            "0.20.0",
            "commit 8c233874c, PR #1628 (aphrodite/endpoints renamed aphrodite/entrypoints); "
            "aphrodite/entrypoints/cli/serve.py@v0.20.0 lines 42, 139-144",
            "aphrodite serve <model>; aphrodite.endpoints.openai.api_server is gone",
        ),
        Since(
            "native-multi-node",
            "0.20.0",
            "aphrodite/engine/arg_utils.py@v0.20.0 lines 808-811, aphrodite/config/parallel.py lines 250-259",
            "aphrodite serve --nnodes/--node-rank/--master-addr/--master-port with --headless workers, no Ray",
        ),
    ),
)


def _capabilities(kv_metric: str) -> Capabilities:
    # aphrodite/envs.py APHRODITE_API_KEY (commit 657aec0c, since v0.5.0; v0.20.0 line 630); guards /v1,
    # /health and /metrics stay open.
    flags = launchers.VLLM_FAMILY_FLAGS
    return launchers.vllm_family_capabilities("aphrodite", SERVING_PORT, kv_metric, "APHRODITE_API_KEY", flags)


CURRENT, BEFORE_0_9 = _capabilities("aphrodite:kv_cache_usage_perc"), _capabilities("aphrodite:gpu_cache_usage_perc")
PROBES = Probes(port="http", startup_path="/health", readiness_path="/health")


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    return CURRENT if version.has("kv-cache-usage-perc") else BEFORE_0_9


HOST_IP_ENV = "APHRODITE_HOST_IP"  # the pod's IP in the pods' env, as vLLM's VLLM_HOST_IP (launchers.VllmFamily)


def family(version: versions.EngineVersion) -> launchers.VllmFamily:
    module = None if version.has("entrypoints-package") else "aphrodite.endpoints.openai.api_server"
    return launchers.VllmFamily(cli="aphrodite", module=module, host_ip_env=HOST_IP_ENV)


def mode(profile: Profile) -> str:
    return launchers.launch_mode(profile, versions.of(profile, ENGINE))


def check(profile: Profile) -> list[Finding]:
    return launchers.native_launch_problems(profile, versions.of(profile, ENGINE))


def parts(profile: Profile) -> RuntimeParts:
    version = versions.of(profile, ENGINE)
    if mode(profile) == "native":
        return launchers.vllm_family_native(profile, family(version), SERVING_PORT, PROBES)
    return launchers.vllm_family_on_ray(profile, family(version), SERVING_PORT, PROBES)


RUNTIME = Runtime(
    reserved_env=(HOST_IP_ENV,),
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    check=check,
    launch_modes=LAUNCH_MODES,
    mode=mode,
    reads_hub_ids=READS_HUB_IDS,
)
