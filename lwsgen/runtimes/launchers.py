"""How groups start, written once and shared by the runtimes: MPI over kubectl exec, a Ray
cluster, an engine that dials the leader itself, and llama.cpp RPC."""

from __future__ import annotations

from lwsgen import resources
from lwsgen.problems import Finding
from lwsgen.profile import Profile
from lwsgen.records import Record
from lwsgen.runtimes.base import (
    KV_PANEL,
    TOOLS_MOUNT,
    Capabilities,
    EnvVar,
    Port,
    Probes,
    Role,
    RoleRule,
    RouterMetrics,
    RuntimeParts,
    ServingSeries,
    extra_args,
    field_env,
    model_path,
    per_pod_rule,
    plain_env,
    script_command,
    served_name,
)

WORKER_CONTAINER = "worker"  # derive names the containers "leader" and "worker"
RAY_PORT = 6379
RPC_PORT = 50052
# Every worker answers the leader's watch on this port (lib.sh beacon). Clear of the ports vLLM takes
# near it: 29500-29509 (data parallel), 29501-29502, 29550 (DP RPC) (vllm/config/parallel.py@v0.33.0
# lines 161-165, 320; entrypoints/cli/preload.py line 290), of SGLang's 20000 (dist-init) and
# 8998 (bootstrap), llama.cpp's 50052 and Ray's 6379.
BEACON_PORT = 29600


def beacon_env() -> EnvVar:
    return plain_env("LWSGEN_BEACON_PORT", BEACON_PORT)


def beacon_port() -> Port:
    return Port("beacon", BEACON_PORT)


def scripts(*names: str) -> dict[str, str]:
    """The named launch scripts and the library they all source."""
    return {name: resources.script(name) for name in ("lib.sh", *names)}


def _timeout(profile: Profile) -> EnvVar:
    return plain_env("LWSGEN_RENDEZVOUS_TIMEOUT", profile.launch.rendezvous_timeout_seconds)


def mpi_over_kubectl(
    profile: Profile,
    rank_command: tuple[str, ...],
    ports: tuple[Port, ...],
    mpirun: str,
    probes: Probes,
    service_ports: tuple[str, ...],
    extra_scripts: tuple[str, ...] = (),
    leader_env: tuple[EnvVar, ...] = (),
    files: dict[str, str] | None = None,
) -> RuntimeParts:
    """The leader waits for every pod of its group and runs `mpirun -np <world>` over them; MPI
    reaches the workers with `kubectl exec`, copied in from `launch.kubectlImage`."""
    env = (
        field_env("GROUP_KEY", "metadata.labels['leaderworkerset.sigs.k8s.io/group-key']"),
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        plain_env("LWSGEN_WORLD_SIZE", profile.world_size),
        plain_env("LWSGEN_GPUS_PER_POD", profile.gpus_per_pod),
        plain_env("LWSGEN_MPIRUN", mpirun),
        plain_env("LWSGEN_WORKER_CONTAINER", WORKER_CONTAINER),
        _timeout(profile),
        beacon_env(),
        *leader_env,
    )
    install_kubectl = (
        "install-kubectl",
        profile.launch.kubectl_image,
        ("/bin/sh", "-c", f'cp "$(command -v kubectl)" {TOOLS_MOUNT}/kubectl && chmod 0555 {TOOLS_MOUNT}/kubectl'),
    )
    return RuntimeParts(
        leader=Role(
            command=script_command("mpi-leader.sh"),
            args=rank_command,
            env=env,
            ports=ports,
            tool_installers=(install_kubectl,),
            api_access=True,
        ),
        worker=Role(command=script_command("mpi-worker.sh"), env=(beacon_env(),), ports=(beacon_port(),)),
        probes=probes,
        service_ports=service_ports,
        scripts={**scripts("mpi-leader.sh", "mpi-worker.sh", "kubectl-rsh", *extra_scripts), **(files or {})},
        role_rules=_exec_rules(profile),
    )


def worker_pod_names(profile: Profile) -> tuple[str, ...]:
    """Every worker pod this LWS can have: <name>-<group>-<index>, for every group up to the most
    there can be (maxReplicas under autoscaling) and every index from 1 (0 is the leader, <name>-<group>)."""
    return tuple(
        f"{profile.name}-{group}-{index}"
        for group in range(max(profile.groups_at_most, 1))
        for index in range(1, profile.group_size)
    )


def _exec_rules(profile: Profile) -> tuple[RoleRule, ...]:
    """The leader lists its group's pods and execs into its workers, and into no other pod of the
    namespace (resourceNames; without workers there is nothing to exec into, and an empty list would
    allow every pod)."""
    rules = [RoleRule(("",), ("pods",), ("get", "list"))]
    workers = worker_pod_names(profile)
    if workers:
        # create: SPDY exec, and WebSocket exec on Kubernetes >= 1.35; get: WebSocket exec before 1.35.
        rules.append(RoleRule(("",), ("pods/exec",), ("create", "get"), workers))
    return tuple(rules)


# The flags the vLLM-family launch derives (vllm and aphrodite): model.extraArgs may not repeat them.
VLLM_FAMILY_FLAGS = (
    "--host",
    "--port",
    "--model",
    "--served-model-name",
    "--tensor-parallel-size",
    "-tp",
    "--pipeline-parallel-size",
    "-pp",
    "--distributed-executor-backend",
    "--nnodes",
    "-n",
    "--node-rank",
    "-r",
    "--master-addr",
    "--master-port",
    "--headless",
)
MASTER_PORT = 29501  # vLLM's and Aphrodite's default --master-port (config/parallel.py ParallelConfig.master_port)


class VllmFamily(Record):
    """How one engine of the vLLM family starts: its CLI (`vllm`, `aphrodite`) or, for old
    releases without a usable serve command, the server module; and the env var it reads its own
    pod IP from (for the addresses it advertises to the other nodes)."""

    cli: str
    module: str | None  # python3 -m <module> --model <path>, instead of `<cli> serve <path>`
    host_ip_env: str


def launch_mode(profile: Profile, version) -> str:
    """launch.mode, else the engine's native multi-node launch where its version has it, else Ray
    (vllm and aphrodite; version is the profile's versions.EngineVersion)."""
    if profile.launch.mode:
        return profile.launch.mode
    return "native" if version.has("native-multi-node") else "ray"


def native_launch_problems(profile: Profile, version) -> list[Finding]:
    """launch.mode native on an engine version without the native multi-node launch."""
    problem = version.needs("native-multi-node", "launch.mode native") if profile.launch.mode == "native" else None
    return [Finding(("launch", "mode"), problem, "needs-newer-engine")] if problem else []


def vllm_family_capabilities(
    prefix: str,
    port: int,
    kv_metric: str,
    api_key_env: str,
    derived_flags: tuple[str, ...],
    router: RouterMetrics | None = None,
) -> Capabilities:
    """vLLM's and Aphrodite's facts: the same server with its own metric prefix (`<prefix>:`);
    `router` where the engine's picker series are known beyond the queue and KV gauges."""
    waiting, running = f"{prefix}:num_requests_waiting", f"{prefix}:num_requests_running"
    return Capabilities(
        derived_flags=derived_flags,
        serving_port=port,
        pipeline_parallel=True,
        metrics=(waiting, running, kv_metric),
        leader_ready_needs_workers=True,
        needs_api_access=False,
        api_key_env=api_key_env,
        router_metrics=router or RouterMetrics(waiting, running, kv_metric),
        # vllm/v1/metrics/loggers.py@v0.33.0 lines 808, 930, 940, 798, 739 (PrometheusStatLogger); the
        # same logger with the aphrodite: prefix in aphrodite/v1/metrics/loggers.py@v0.20.0 lines 667,
        # 742, 775, 659, 623
        serving_series=ServingSeries(
            f"{prefix}:request_success_total",
            f"{prefix}:time_to_first_token_seconds",
            f"{prefix}:inter_token_latency_seconds",
            f"{prefix}:generation_tokens_total",
            f"{prefix}:num_preemptions_total",
        ),
        rules=(
            per_pod_rule("sum", waiting, autoscaling="queue-length", title="Requests waiting"),
            per_pod_rule("sum", running, title="Requests running"),
            per_pod_rule("max", kv_metric, autoscaling="kv-cache-usage", **KV_PANEL),
        ),
    )


def _engine_args(profile: Profile) -> tuple[str, ...]:
    return (
        "--tensor-parallel-size",
        str(profile.parallelism.tensor),
        "--pipeline-parallel-size",
        str(profile.parallelism.pipeline),
    )


def _serve(family: VllmFamily, profile: Profile) -> tuple[str, ...]:
    if family.module:
        return ("python3", "-m", family.module, "--model", model_path(profile))
    return (family.cli, "serve", model_path(profile))


def vllm_family_on_ray(
    profile: Profile, family: VllmFamily, port: int, probes: Probes, moe: tuple[str, ...] = (), env=()
) -> RuntimeParts:
    """The leader serves with --distributed-executor-backend ray over a Ray cluster of the group."""
    serve = (
        *_serve(family, profile),
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--served-model-name",
        served_name(profile),
        *_engine_args(profile),
        "--distributed-executor-backend",
        "ray",
        *moe,
        *extra_args(profile),
    )
    parts = ray_group(profile, serve, port, probes)
    return parts._replace(leader=parts.leader._replace(env=(*parts.leader.env, *env)))


DP_RPC_PORT = 29550  # vLLM's default --data-parallel-rpc-port (vllm/config/parallel.py@v0.33.0 line 161)
# The data-parallel flags lwsgen derives for vLLM.
VLLM_DATA_FLAGS = (
    "--data-parallel-size",
    "-dp",
    "--data-parallel-size-local",
    "-dpl",
    "--data-parallel-address",
    "-dpa",
    "--data-parallel-rpc-port",
    "-dpp",
    "--data-parallel-start-rank",
    "-dpr",
    "--enable-expert-parallel",
    "--all2all-backend",
)


def vllm_data_parallel(
    profile: Profile, family: VllmFamily, port: int, probes: Probes, moe: tuple[str, ...], env: tuple[EnvVar, ...]
) -> RuntimeParts:
    """vLLM's multi-node data parallelism as its docs deploy it: every pod runs its share of the
    data-parallel ranks (--data-parallel-size-local, each rank tensor x pipeline GPUs of the pod);
    the leader serves the API for them all and coordinates on --data-parallel-rpc-port, the workers
    run --headless from their first rank (--data-parallel-start-rank, worker index x ranks per pod,
    which the launch script appends: the kubelet cannot multiply)."""
    par = profile.parallelism
    local = profile.gpus_per_pod // (par.tensor * par.pipeline)
    node = (
        *_serve(family, profile),
        "--served-model-name",
        served_name(profile),
        *_engine_args(profile),
        "--data-parallel-size",
        str(par.data),
        "--data-parallel-size-local",
        str(local),
        "--data-parallel-address",
        "$(LWS_LEADER_ADDRESS)",
        "--data-parallel-rpc-port",
        str(DP_RPC_PORT),
        *moe,
    )
    ranks = plain_env("LWSGEN_DP_RANKS_PER_POD", local)
    return _head_and_headless(profile, family, port, probes, node, Port("dp-rpc", DP_RPC_PORT), env, (ranks,))


def _head_and_headless(
    profile: Profile,
    family: VllmFamily,
    port: int,
    probes: Probes,
    node: tuple[str, ...],
    rendezvous: Port,
    env: tuple[EnvVar, ...],
    worker_env: tuple[EnvVar, ...] = (),
) -> RuntimeParts:
    """The leader serves (--host/--port), the workers run --headless; each worker waits for the
    leader's rendezvous port and answers on the beacon the leader watches; every pod knows its IP."""
    leader = (*node, "--host", "0.0.0.0", "--port", str(port), *extra_args(profile))
    worker = (*node, "--headless", *extra_args(profile))
    parts = dial_leader(
        profile,
        leader,
        worker,
        leader_ports=(Port("http", port), rendezvous),
        probes=probes,
        rendezvous_port=rendezvous.number,
    )
    own = (field_env(family.host_ip_env, "status.podIP"), *env)
    return parts._replace(
        leader=parts.leader._replace(env=(*parts.leader.env, *own)),
        worker=parts.worker._replace(env=(*parts.worker.env, *own, *worker_env)),
    )


def vllm_family_native(
    profile: Profile, family: VllmFamily, port: int, probes: Probes, moe: tuple[str, ...] = (), env=()
) -> RuntimeParts:
    """Every pod runs the engine's serve command as one node of --nnodes: the leader (node rank 0)
    serves the API and hosts the torch.distributed store on --master-port; the others run
    --headless. The leader waits for its workers' names and each worker for the master port."""
    group = (
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
        "--master-port",
        str(MASTER_PORT),
    )
    node = (*_serve(family, profile), "--served-model-name", served_name(profile), *_engine_args(profile), *group, *moe)
    return _head_and_headless(profile, family, port, probes, node, Port("master", MASTER_PORT), env)


def ray_group(profile: Profile, serve_command: tuple[str, ...], serving_port: int, probes: Probes) -> RuntimeParts:
    """The leader starts the Ray head and waits for LWS_GROUP_SIZE nodes; workers join it."""
    env = (plain_env("LWSGEN_RAY_PORT", RAY_PORT), _timeout(profile))
    return RuntimeParts(
        leader=Role(
            command=script_command("ray-leader.sh"),
            args=serve_command,
            env=env,
            ports=(Port("http", serving_port), Port("ray-gcs", RAY_PORT)),
        ),
        worker=Role(command=script_command("ray-worker.sh"), env=env),
        probes=probes,
        service_ports=("http",),
        scripts=scripts("ray-leader.sh", "ray-worker.sh"),
    )


def dial_leader(
    profile: Profile,
    leader_command: tuple[str, ...],
    worker_command: tuple[str, ...],
    leader_ports: tuple[Port, ...],
    probes: Probes,
    rendezvous_port: int,
) -> RuntimeParts:
    """Every pod runs the engine, which dials $(LWS_LEADER_ADDRESS):rendezvous_port itself: the
    leader waits for its workers' names, the workers for that port to answer; the workers answer
    on the beacon and the leader watches them (neither vLLM nor SGLang notices a node that
    vanished without closing its sockets)."""
    env = (_timeout(profile), plain_env("LWSGEN_LEADER_PORT", rendezvous_port), beacon_env())
    worker_ports = (beacon_port(),)
    return RuntimeParts(
        leader=Role(command=script_command("await-leader.sh"), args=leader_command, env=env, ports=leader_ports),
        worker=Role(command=script_command("await-leader.sh"), args=worker_command, env=env, ports=worker_ports),
        probes=probes,
        service_ports=("http",),
        scripts=scripts("await-leader.sh"),
    )


def llamacpp_rpc(
    profile: Profile,
    server_command: tuple[str, ...],
    serving_port: int,
    probes: Probes,
    servers_per_pod: int,
    cache_dir: str | None,
) -> RuntimeParts:
    """Workers run rpc-server (servers_per_pod of them, on consecutive ports); the leader resolves
    them all and runs llama-server --rpc <them>."""
    env = (
        plain_env("LWSGEN_RPC_PORT", RPC_PORT),
        plain_env("LWSGEN_RPC_SERVERS", servers_per_pod),
        _timeout(profile),
        beacon_env(),
    )
    cache = (plain_env("LLAMA_CACHE", cache_dir),) if cache_dir else ()
    rpc_ports = tuple(Port("rpc" if i == 0 else f"rpc-{i}", RPC_PORT + i) for i in range(servers_per_pod))
    return RuntimeParts(
        leader=Role(
            command=script_command("llamacpp-leader.sh"),
            args=server_command,
            env=env,
            ports=(Port("http", serving_port),),
        ),
        worker=Role(
            command=script_command("llamacpp-worker.sh"),
            env=(*env, *cache),
            ports=(*rpc_ports, beacon_port()),
            cache_dir=cache_dir,
            reads_model=False,  # rpc-server receives its tensors from the leader
        ),
        probes=probes,
        service_ports=("http",),
        scripts=scripts("llamacpp-leader.sh", "llamacpp-worker.sh"),
    )
