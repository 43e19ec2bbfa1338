"""vLLM across the group: natively (`--nnodes`, `--headless` workers) or on a Ray cluster.

Launch (`launch.mode`; the default is `native` from vLLM 0.11.1, `ray` before it):
- `native`: every pod runs `vllm serve <model.path> --tensor-parallel-size <tensor>
  --pipeline-parallel-size <pipeline> --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)
  --master-addr $(LWS_LEADER_ADDRESS) --master-port 29501`; the leader (node rank 0) adds `--host
  0.0.0.0 --port 8080` and serves the OpenAI-compatible API, the workers add `--headless`. vLLM's
  multiprocessing executor spans the nodes (no Ray), with the torch.distributed store on the
  leader's port 29501 and ZMQ and NCCL on ports it picks (the NetworkPolicy opens every port
  between the group's pods). `VLLM_HOST_IP` is the pod's IP. The leader waits (bounded) until its
  workers' names resolve, each worker until the leader's port 29501 answers. vLLM's leader would
  notice a lost node only at its next step (an idle group would go on reporting healthy), so every
  worker answers on a beacon port (29600) from its start, the leader waits for every beacon before
  the engine and watches them while serving: when one is gone for 3 polls it stops the engine and
  exits 1, and the group is recreated.
- `ray`: the leader starts the Ray head (`ray start --head`, port 6379), waits (bounded by
  `launch.rendezvousTimeoutSeconds`, counted from the pod's start) until `LWS_GROUP_SIZE` Ray
  nodes are alive, then runs `vllm serve` with `--distributed-executor-backend ray`. Workers retry
  until the leader's address resolves and its Ray head answers, then `ray start
  --address=$(LWS_LEADER_ADDRESS):6379 --block` (every call bounded; a join that fails at once is
  retried within the bound). The leader watches the Ray node count while serving: when a node is
  gone (Ray marks it dead after 5 failed health checks 3 s apart), it stops the engine within 3
  polls and exits 1, so the group is recreated instead of serving on fewer nodes. An image
  without Ray fails at once with that sentence.

Data and expert parallelism (`parallelism.data` > 1, from vLLM 0.9.0), as vLLM's data- and
expert-parallel guides deploy it: every pod runs `vllm serve` with `--data-parallel-size <data>
--data-parallel-size-local <ranks per pod> --data-parallel-address $(LWS_LEADER_ADDRESS)
--data-parallel-rpc-port 29550` and `--tensor-parallel-size <tensor>` inside each rank (each rank
within one pod); the leader serves the API for every engine, the workers run `--headless` from
`--data-parallel-start-rank` (worker index x ranks per pod, appended by the launch script). The
same beacon watch recreates the group when a pod is lost. `parallelism.expert` adds
`--enable-expert-parallel` (experts over data x tensor GPUs); `parallelism.allToAll` the DeepEP
kernels, `--all2all-backend` from 0.11.1, `VLLM_ALL2ALL_BACKEND` from 0.9.1. Only the leader serves
HTTP and `/metrics` under data parallelism, with one series per engine (label `engine`): the
records sum (or take the max of) them per leader pod.

Metrics are on the serving port: `vllm:num_requests_waiting`, `vllm:num_requests_running`, and the
KV-cache usage, `vllm:kv_cache_usage_perc` from 0.9.2 (`vllm:gpu_cache_usage_perc` before it; that
name is hidden from 0.11.0 and gone in 0.12.0). `model.path` is a hub id or a weights directory.
"""

from __future__ import annotations

from lwsgen.check.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import Capabilities, Probes, RouterMetrics, RuntimeParts, plain_env
from lwsgen.runtimes.versions import Since

NAME = "vllm"
DATA_AND_EXPERT = True  # parallelism.data and parallelism.expert are derived for vLLM
SERVING_PORT = 8080
LAUNCH_MODES = ("native", "ray")
FAMILY = launchers.VllmFamily(cli="vllm", module=None, host_ip_env="VLLM_HOST_IP")

READS_HUB_IDS = True  # model.path may be a hub id the engine downloads at start

ENGINE = versions.Engine(
    title="vLLM",
    # vllm/vllm-openai:v0.8.5, v0.10.1.1, v0.33.0 (and -x86_64, -aarch64 variants)
    tag=r"^v?(\d+\.\d+\.\d+(?:\.\d+)?(?:rc\d+)?(?:\.post\d+)?)(?:-|$)",
    checked="0.33.0",
    oldest="0.8.5",
    table=(
        Since(
            "serve-cli",
            "0.8.5",
            "pyproject.toml@v0.8.5 line 41 (vllm = vllm.entrypoints.cli.main:main); the oldest version lwsgen checked",
            "vllm serve <model>",
        ),
        Since(
            "kv-cache-usage-perc",
            "0.9.2",
            "PR #18354; vllm/v1/metrics/loggers.py@v0.9.2 (absent in v0.9.1); gpu_cache_usage_perc hidden in "
            "v0.11.0, removed in v0.12.0",
            "the KV-cache usage gauge is vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc before)",
        ),
        Since(
            "data-parallel-multi-node",
            "0.9.0",
            "vllm/engine/arg_utils.py@v0.9.0 lines 606-620 (--data-parallel-size-local, -address, -rpc-port), "
            "vllm/entrypoints/cli/serve.py@v0.9.0 lines 60-71 (--headless, --data-parallel-start-rank)",
            "data parallelism across nodes: the head serves, the others run --headless from their start rank",
        ),
        Since(
            "deepep-all2all",
            "0.9.1",
            "vllm/envs.py@v0.9.1 lines 843-850 (VLLM_ALL2ALL_BACKEND deepep_high_throughput, deepep_low_latency)",
            "DeepEP all-to-all kernels for expert parallelism, through VLLM_ALL2ALL_BACKEND",
        ),
        Since(
            "all2all-flag",
            "0.11.1",
            "vllm/engine/arg_utils.py@v0.11.1 lines 827-828; the VLLM_ALL2ALL_BACKEND variable is deprecated "
            "there (vllm/config/parallel.py@v0.11.1 lines 466-474) and gone in 0.16.0",
            "--all2all-backend",
        ),
        Since(
            "native-multi-node",
            "0.11.1",
            "PR #23691; vllm/engine/arg_utils.py@v0.11.1 lines 757-760, vllm/entrypoints/cli/serve.py@v0.11.1 "
            "lines 114-129 (headless nodes with node rank > 0)",
            "vllm serve --nnodes/--node-rank/--master-addr/--master-port with --headless workers, no Ray",
        ),
    ),
)


def _rules(kv_metric: str) -> Capabilities:
    # vllm/envs.py VLLM_API_KEY (since v0.3.0, still read in v0.33.0); --api-key wins. Only /v1
    # (and /v2, /inference) need the key: /health and /metrics stay open.
    flags = (*launchers.VLLM_FAMILY_FLAGS, *launchers.VLLM_DATA_FLAGS)
    # vllm/v1/metrics/loggers.py@v0.33.0 lines 1104 and 1120: vllm:lora_requests_info, vllm:cache_config_info
    # (block_size, num_gpu_blocks labels), which the picker's prefix index sizes itself from.
    router = RouterMetrics(
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
        kv_metric,
        lora="vllm:lora_requests_info",
        cache_info="vllm:cache_config_info",
    )
    return launchers.vllm_family_capabilities("vllm", SERVING_PORT, kv_metric, "VLLM_API_KEY", flags, router)


CURRENT, BEFORE_0_9_2 = _rules("vllm:kv_cache_usage_perc"), _rules("vllm:gpu_cache_usage_perc")


def capabilities(version: versions.EngineVersion, profile: Profile | None = None) -> Capabilities:
    return CURRENT if version.has("kv-cache-usage-perc") else BEFORE_0_9_2


def mode(profile: Profile) -> str:
    """launch.mode, else native where the version has it; data parallelism is its own launch."""
    if profile.parallelism.data > 1:
        return "data-parallel (head and --headless engines)"
    return launchers.launch_mode(profile, versions.of(profile, ENGINE))


def check(profile: Profile) -> list[tuple[tuple, str, str]]:
    version, par = versions.of(profile, ENGINE), profile.parallelism
    if par.data > 1:
        out = _data_parallel_problems(profile, version)
    else:
        out = launchers.native_launch_problems(profile, version)
    if par.all_to_all == "deepep-auto":
        out.append(
            (
                ("parallelism", "allToAll"),
                "vLLM has no automatic DeepEP mode; use deepep-high-throughput or deepep-low-latency",
                "not-supported",
            )
        )
    elif par.all_to_all != "default":
        problem = version.needs("deepep-all2all", f"allToAll {par.all_to_all}")
        if problem:
            out.append((("parallelism", "allToAll"), problem, "needs-newer-engine"))
    return out


def _data_parallel_problems(profile: Profile, version: versions.EngineVersion) -> list[tuple[tuple, str, str]]:
    par, out = profile.parallelism, []
    problem = version.needs("data-parallel-multi-node", f"parallelism.data {par.data}")
    if problem:
        out.append((("parallelism", "data"), problem, "needs-newer-engine"))
    if profile.launch.mode == "ray":
        message = "data parallelism runs vLLM's own engines on every pod, not a Ray cluster: leave launch.mode out"
        out.append((("launch", "mode"), message, "not-supported"))
    per_rank = par.tensor * par.pipeline
    if profile.gpus_per_pod % per_rank:
        message = (
            f"each data-parallel rank takes tensor x pipeline = {per_rank} GPUs of one pod, which do not divide the "
            f"pod's {profile.gpus_per_pod}: use a tensor size that divides node.gpus ({profile.node.gpus})"
        )
        out.append((("parallelism", "tensor"), message, "not-divisible"))
    return out


def moe(profile: Profile) -> tuple[tuple[str, ...], tuple]:
    """The expert-parallel flags, and the environment an older vLLM takes its all-to-all from."""
    par = profile.parallelism
    flags: tuple[str, ...] = ("--enable-expert-parallel",) if par.expert else ()
    if par.all_to_all == "default":
        return flags, ()
    backend = par.all_to_all.replace("-", "_")  # deepep_high_throughput, deepep_low_latency
    if versions.of(profile, ENGINE).has("all2all-flag"):
        return (*flags, "--all2all-backend", backend), ()
    return flags, (plain_env("VLLM_ALL2ALL_BACKEND", backend),)


PROBES = Probes(port="http", startup_path="/health", readiness_path="/health")


def parts(profile: Profile) -> RuntimeParts:
    flags, env = moe(profile)
    if profile.parallelism.data > 1:
        return launchers.vllm_data_parallel(profile, FAMILY, SERVING_PORT, PROBES, flags, env)
    if mode(profile) == "native":
        return launchers.vllm_family_native(profile, FAMILY, SERVING_PORT, PROBES, flags, env)
    return launchers.vllm_family_on_ray(profile, FAMILY, SERVING_PORT, PROBES, flags, env)
