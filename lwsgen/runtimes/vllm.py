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

from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.runtimes import launchers, versions
from lwsgen.runtimes.base import (
    Capabilities,
    KvTransfer,
    Probes,
    RouterMetrics,
    Runtime,
    RuntimeParts,
    field_env,
    plain_env,
)
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
            "nixl-connector",
            "0.9.0",
            "PR #17751; vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py@v0.9.0, registered as "
            "NixlConnector in kv_connector/factory.py@v0.9.0",
            "prefill/decode disaggregation: --kv-transfer-config with the NixlConnector",
        ),
        Since(
            "nixl-heterogeneous-tp",
            "0.9.1",
            "PR #18833; nixl_connector.py@v0.9.1 tp_ratio (absent in v0.9.0): decode TP a multiple of prefill TP",
            "prefill and decode with different tensor-parallel sizes over NIXL",
        ),
        Since(
            "ec-cpu-nixl",
            "0.30.0",
            "vllm#47941; vllm/distributed/ec_transfer/ec_connector/cpu/ in the v0.30.0 wheel (ECCPUConnector with "
            "ec_enable_nixl; --mm-encoder-only from 0.15.0)",
            "an encode role: embeddings to prefill over NIXL (ECCPUConnector P2P)",
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


# Flags of the launch lwsgen writes that only newer vLLM has: output validation reads the version
# from the image tag in the object (an overlay's `images: newTag` included) and checks each against
# ENGINE's table (output/podneeds.py).
FLAG_FEATURES = {
    "--nnodes": "native-multi-node",
    "--node-rank": "native-multi-node",
    "--master-addr": "native-multi-node",
    "--master-port": "native-multi-node",
    "--headless": "data-parallel-multi-node",
    "--data-parallel-size-local": "data-parallel-multi-node",
    "--data-parallel-address": "data-parallel-multi-node",
    "--data-parallel-rpc-port": "data-parallel-multi-node",
    "--data-parallel-start-rank": "data-parallel-multi-node",
    "--all2all-backend": "all2all-flag",
}


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


def check(profile: Profile) -> list[Finding]:
    version, par = versions.of(profile, ENGINE), profile.parallelism
    if par.data > 1:
        out = _data_parallel_problems(profile, version)
    else:
        out = launchers.native_launch_problems(profile, version)
    if par.all_to_all == "deepep-auto":
        out.append(
            Finding(
                ("parallelism", "allToAll"),
                "vLLM has no automatic DeepEP mode; use deepep-high-throughput or deepep-low-latency",
                "not-supported",
            )
        )
    elif par.all_to_all != "default":
        problem = version.needs("deepep-all2all", f"allToAll {par.all_to_all}")
        if problem:
            out.append(Finding(("parallelism", "allToAll"), problem, "needs-newer-engine"))
    return out


def _data_parallel_problems(profile: Profile, version: versions.EngineVersion) -> list[Finding]:
    par, out = profile.parallelism, []
    problem = version.needs("data-parallel-multi-node", f"parallelism.data {par.data}")
    if problem:
        out.append(Finding(("parallelism", "data"), problem, "needs-newer-engine"))
    if profile.launch.mode == "ray":
        message = "data parallelism runs vLLM's own engines on every pod, not a Ray cluster: leave launch.mode out"
        out.append(Finding(("launch", "mode"), message, "not-supported"))
    per_rank = par.tensor * par.pipeline
    if profile.gpus_per_pod % per_rank:
        message = (
            f"each data-parallel rank takes tensor x pipeline = {per_rank} GPUs of one pod, which do not divide the "
            f"pod's {profile.gpus_per_pod}: use a tensor size that divides node.gpus ({profile.node.gpus})"
        )
        out.append(Finding(("parallelism", "tensor"), message, "not-divisible"))
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


def parts(profile: Profile, serving_port: int = SERVING_PORT) -> RuntimeParts:
    """serving_port: where the engine serves (a decode engine behind llm-d's routing sidecar: ENGINE_PORT)."""
    flags, env = moe(profile)
    if profile.parallelism.data > 1:
        return launchers.vllm_data_parallel(profile, FAMILY, serving_port, PROBES, flags, env)
    if mode(profile) == "native":
        return launchers.vllm_family_native(profile, FAMILY, serving_port, PROBES, flags, env)
    return launchers.vllm_family_on_ray(profile, FAMILY, serving_port, PROBES, flags, env)


# Prefill/decode disaggregation (roles): KV cache over NIXL, requests through llm-d's endpoint picker.
KV_FLAGS = ("--kv-transfer-config", "--ec-transfer-config", "--mm-encoder-only")
# NixlConnector with kv_role kv_both on either role, as vLLM's own P/D examples and llm-d's guides
# run it (examples/online_serving/disaggregated_serving/ and llm-d guides/pd-disaggregation).
KV_TRANSFER_CONFIG = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
# The address NIXL's side channel listens on and tells its peers (vllm/envs.py VLLM_NIXL_SIDE_CHANNEL_HOST,
# default localhost, which a peer in another pod cannot reach): the pod's own IP.
SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"
# llm-d's routing sidecar takes the pool's port on a decode leader and runs each request's prefill
# on the prefill pod the picker chose first; the decode engine serves behind it on ENGINE_PORT.
ENGINE_PORT = 8200
ROLE_LABEL = "llm-d.ai/role"  # what the picker's prefill and decode filters select on
# The API server's keep-alive (vllm/envs.py VLLM_HTTP_TIMEOUT_KEEP_ALIVE, default 5 s) above the routing
# sidecar's idle connection timeout (Go http.Transport, 90 s), or the sidecar's reused connections meet
# TCP resets: llm-d guides/pd-disaggregation/modelserver/gpu/vllm/base/disaggregatedset.yaml sets 120.
KEEP_ALIVE_SECONDS = 120
# Flags that must be the same on both roles: NIXL's handshake compares the KV cache layout.
KV_MATCHING = ("--kv-cache-dtype", "--block-size", "--dtype", "--max-model-len")


# An encode role (multimodal inputs): the encoder's embeddings move to prefill over NIXL through vLLM's
# ECCPUConnector in P2P mode (vllm/distributed/ec_transfer/ec_connector/cpu/, P2P from 0.30.0), as llm-d's
# E/P/D guide runs it (guides/multimodal-serving/e-disaggregation/modelserver/gpu/vllm/e-p-d/base/):
# the encoder ec_producer with --mm-encoder-only, prefill ec_consumer, both on the V2 model runner
# (cpu/connector.py needs VLLM_USE_V2_MODEL_RUNNER=1), ec_cpu_bytes mandatory (cpu/common.py: the
# guide's 40 GiB); the decode sidecar runs the encoder stage with --ec-connector=ec-nixl
# (llm-d-router v0.10.0 pkg/sidecar/constants/constants.go, proxy.go handleECNIXL).
EC_CPU_BYTES = 40 * 2**30
EC_SIDE_CHANNEL_HOST = "VLLM_EC_SIDE_CHANNEL_HOST"  # vllm/envs.py: default localhost, port 5601
V2_MODEL_RUNNER = plain_env("VLLM_USE_V2_MODEL_RUNNER", 1)  # both ends of the embedding transfer


def _ec_config(role: str) -> str:
    extra = f'"ec_connector_extra_config":{{"ec_enable_nixl":true,"ec_cpu_bytes":{EC_CPU_BYTES}}}'
    return f'{{"ec_connector":"ECCPUConnector","ec_role":"{role}",{extra}}}'


def kv_transfer(profile: Profile, role: str, roles: tuple[str, ...]) -> KvTransfer:
    decode, encoded = role == "decode", "encode" in roles
    keep_alive = plain_env("VLLM_HTTP_TIMEOUT_KEEP_ALIVE", KEEP_ALIVE_SECONDS)
    if role == "encode":
        args = ("--mm-encoder-only", "--no-enable-prefix-caching", "--ec-transfer-config", _ec_config("ec_producer"))
        env = (field_env(EC_SIDE_CHANNEL_HOST, "status.podIP"), V2_MODEL_RUNNER, keep_alive)
        return KvTransfer(args, "endpoint-picker", env=env, labels={ROLE_LABEL: role})
    args: tuple[str, ...] = ("--kv-transfer-config", KV_TRANSFER_CONFIG)
    env: tuple = (field_env(SIDE_CHANNEL_HOST, "status.podIP"), keep_alive)
    if encoded and role == "prefill":
        args += ("--ec-transfer-config", _ec_config("ec_consumer"))
        env += (V2_MODEL_RUNNER,)
    return KvTransfer(
        args,
        "endpoint-picker",
        env=env,
        labels={ROLE_LABEL: role},
        engine_port=ENGINE_PORT if decode else None,
        sidecar_port=SERVING_PORT if decode else None,
        sidecar_args=("--ec-connector=ec-nixl",) if decode and encoded else (),
    )


def _tensor_problems(top: Profile) -> list[Finding]:
    prefill, decode = (top.roles[r].parallelism.tensor for r in ("prefill", "decode"))
    if prefill == decode:
        return []
    problem = versions.of(top, ENGINE).needs("nixl-heterogeneous-tp", f"prefill tensor {prefill}, decode {decode}")
    return [Finding(("roles", "decode", "parallelism"), problem, "needs-newer-engine")] if problem else []


def warnings_of_roles(top: Profile) -> list[Finding]:
    """NIXL's first heterogeneous TP (0.9.1) takes a decode TP that is a multiple of the prefill's;
    the reverse came later (PR #27274, release not pinned here)."""
    prefill, decode = (top.roles[r].parallelism.tensor for r in ("prefill", "decode"))
    if decode % prefill == 0:
        return []
    message = (
        f"decode tensor {decode} is not a multiple of prefill tensor {prefill}: NIXL's heterogeneous TP split "
        "(PR #18833) maps each decode rank to prefill ranks that way; a larger prefill TP needs a vLLM with "
        "PR #27274 (check your image)"
    )
    return [Finding(("roles", "decode", "parallelism", "tensor"), message, "kv-layout")]


def kv_problems(top: Profile) -> list[Finding]:
    """What vLLM needs of a disaggregated profile (check/disaggregation.py)."""
    out, d = [], top.disaggregation
    problem = versions.of(top, ENGINE).needs("nixl-connector", "roles")
    if problem:
        out.append(Finding(("roles",), problem, "needs-newer-engine"))
    if not top.gateway.enabled:
        message = (
            "vLLM's prefill and decode roles are routed by llm-d's endpoint picker (its prefill/decode profiles "
            "and routing sidecar), which gateway.enabled emits: enable it"
        )
        out.append(Finding(("gateway", "enabled"), message, "needs-gateway"))
    if d.transfer_backend == "mooncake":
        message = "lwsgen derives vLLM's NixlConnector: transferBackend nixl, or leave it out"
        out.append(Finding(("disaggregation", "transferBackend"), message, "not-supported"))
    if d.ib_devices:
        message = (
            "ibDevices is SGLang's --disaggregation-ib-device; vLLM's NIXL picks its devices through UCX: "
            "set env UCX_NET_DEVICES instead"
        )
        out.append(Finding(("disaggregation", "ibDevices"), message, "not-supported"))
    if top.gateway.enabled and top.gateway.endpoint_picker.scorers.prefix_cache <= 0:
        message = (
            "the picker's prefix-based-pd-decider reads the prefix cache match of each decode pod, which the "
            "prefix-cache scorer makes (profilehandler/disagg/README.md@v0.10.0): give it a weight above 0"
        )
        out.append(Finding(("gateway", "endpointPicker", "scorers", "prefixCache"), message, "needs-prefix-cache"))
    out += _tensor_problems(top)
    if "encode" in top.roles:
        problem = versions.of(top, ENGINE).needs("ec-cpu-nixl", "roles.encode")
        if problem:
            out.append(Finding(("roles", "encode"), problem, "needs-newer-engine"))
    return out


RUNTIME = Runtime(
    reserved_env=(FAMILY.host_ip_env,),
    name=NAME,
    engine=ENGINE,
    doc=__doc__,
    capabilities=capabilities,
    parts=parts,
    check=check,
    kv_transfer=kv_transfer,
    kv_problems=kv_problems,
    warnings_of_roles=warnings_of_roles,
    kv_matching=KV_MATCHING,
    kv_flags=KV_FLAGS,
    data_and_expert=DATA_AND_EXPERT,
    launch_modes=LAUNCH_MODES,
    mode=mode,
    reads_hub_ids=READS_HUB_IDS,
    flag_features=FLAG_FEATURES,
)
