"""NCCL all-reduce preflight on the exact shape of one inference group: a one-off test kept out of
the serving kustomization.

The test pods come from the same pod builder as the LeaderWorkerSet's (derive/pods.py): node
selection, GPU product affinity, tolerations, scheduler and priority, GPU/EFA/RDMA/CPU/memory
requests (= limits), the profile's env, /dev/shm of node.shmSize, pull secrets and pod security.
Two launchers:

- `mpijob` (Kubeflow MPI operator, kubeflow.org/v2beta1): `group size` workers running sshd with
  `slotsPerWorker` = GPUs per pod; the launcher runs nccl-tests' `all_reduce_perf -b 8 -e <maxBytes>
  -f 2 -g 1` under `mpirun -np <world size>` and prints a one-line verdict. Needs `ncclTest.image`
  with nccl-tests, OpenMPI and sshd.
- `job` (no operator): an Indexed Job (completions = parallelism = group size) behind a headless
  Service, `torchrun` running an all-reduce script from a ConfigMap on the serving image.
"""

import hashlib
import json

from lwsgen import naming, resources
from lwsgen.derive import pods
from lwsgen.derive.context import Context
from lwsgen.derive.model import EnvVar, Meta, Pod
from lwsgen.profile import kept_capabilities
from lwsgen.records import Record, canonical
from lwsgen.runtimes.base import literal

NAME_DIGITS = naming.NCCL_DIGITS
SCRIPTS_MOUNT = "/lwsgen/nccl"
SCRIPTS_VOLUME = "scripts"
MASTER_PORT = 29500
# sshd (the MPI operator reaches its workers over ssh) needs these beyond what the serving pods keep.
SSHD_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "KILL", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")
# On EFA, what every aws-ofi-nccl release works with (aws/aws-ofi-nccl v1.21.1 doc/efa-env-var.md):
# FI_PROVIDER=efa, which the plugin sets itself from 1.5.1 on (platform-aws.cpp 667-671) and which
# older ones need (lines 41-44); FI_EFA_FORK_SAFE=1, which the plugin sets itself from 1.7 on
# (platform-aws.cpp 719-723) and older ones need (lines 21-26). Not FI_EFA_USE_DEVICE_RDMA: "Do not
# set for libfabric>=1.18.0 and aws-ofi-nccl>=1.7.0" (lines 29-31). The MPI operator starts the ranks
# over ssh, whose sessions do not see the worker container's env (OpenMPI 4.1 orterun.1in 1566-1578,
# only OMPI_* is exported: 1648-1651), so every variable is forwarded with -x.
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"}
# OpenMPI's own traffic on EFA nodes: off UCX and the OFI MTL (pml ^ucx, as awslabs/awsome-distributed-ai
# micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml ran it from #571 and its Dockerfile still sets as
# OMPI_MCA_pml), TCP between the pods but not over the loopback or container bridges (btl tcp,self:
# OpenMPI v5.0.10 docs/release-notes/run-time.rst 17-24, self and lo must stay in).
EFA_MCA = (
    "--mca",
    "pml",
    "^ucx",
    "--mca",
    "btl",
    "tcp,self",
    "--mca",
    "btl_tcp_if_exclude",
    "lo,docker0,veth_def_agent",
)
LAUNCHER_RESOURCES = {"cpu": "1", "memory": "2Gi"}


class Gang(Record):
    min_available: int
    queue: str | None


class MpiJob(Record):
    slots: int
    gang: Gang | None
    launcher: Pod
    workers: int
    worker: Pod


class IndexedJob(Record):
    pods: int
    service_selector: dict[str, str]
    pod: Pod


class NcclTest(Record):
    meta: Meta
    scripts: dict[str, str]
    deadline: int
    mpijob: MpiJob | None
    job: IndexedJob | None
    fenced: dict[str, str] | None  # the test pods' labels their NetworkPolicy selects and admits; None: no policy


def _env(ctx: Context, extra: dict[str, str]) -> tuple[EnvVar, ...]:
    profile = ctx.profile
    values = {**(EFA_ENV if profile.node.efa else {}), **profile.env, **profile.nccl_test.env, **extra}
    return pods.env_values(values)


def _resources(ctx: Context):
    profile = ctx.profile
    amounts = pods.node_amounts(profile)
    if profile.node.efa:
        amounts["hugepages-2Mi"] = str(profile.nccl_test.hugepages_2mi)
        amounts.setdefault("memory", "32Gi")  # Kubernetes wants memory or cpu requested beside hugepages
    return pods.equal(amounts)


def _labels(ctx: Context) -> dict[str, str]:
    profile = ctx.profile
    return naming.labels(profile.name, profile.runtime, "nccl-test", profile.labels)


def _mpijob(ctx: Context) -> MpiJob:
    profile, test = ctx.profile, ctx.profile.nccl_test
    env = _env(ctx, {"LWSGEN_MIN_BUS_BW_GBPS": pods.env_text(test.min_bus_bandwidth_gbps)})
    names = dict.fromkeys(("PATH", "LD_LIBRARY_PATH", *(e.name for e in env if not e.name.startswith("LWSGEN_"))))
    forwarded = [flag for name in names for flag in ("-x", name)]
    mpirun = (
        literal(test.mpirun),
        "--allow-run-as-root",
        "--tag-output",
        "-np",
        str(profile.world_size),
        "-N",
        str(profile.gpus_per_pod),
        "--bind-to",
        "none",
        *(EFA_MCA if profile.node.efa else ()),
        *forwarded,
        literal(test.all_reduce_perf),
        "-b",
        "8",
        "-e",
        literal(test.max_bytes),
        "-f",
        "2",
        "-g",
        "1",
    )
    scripts, scripts_mount = pods.config_map_volume(SCRIPTS_VOLUME, ctx.names.nccl_test, SCRIPTS_MOUNT)
    launcher = pods.container(
        "launcher",
        test.image,
        ("/bin/bash", f"{SCRIPTS_MOUNT}/nccl-mpi-verdict.sh"),
        args=mpirun,
        env=env,
        resources=pods.equal(LAUNCHER_RESOURCES),
        mounts=(scripts_mount,),
        security=pods.container_security(ctx.profile, ()),
    )
    shm_volume, shm_mount = pods.shm(profile)
    sshd_caps = tuple(sorted({*SSHD_CAPABILITIES, *kept_capabilities(profile)}))
    worker = pods.container(
        "worker",
        test.image,
        ("/usr/sbin/sshd", "-De"),
        env=env,
        resources=_resources(ctx),
        mounts=(shm_mount,),
        security=pods.container_security(profile, sshd_caps),
    )
    labels = _labels(ctx)
    sched = profile.scheduling
    gang = Gang(profile.group_size + 1, sched.queue or None) if sched.scheduler == "volcano" else None
    return MpiJob(
        slots=profile.gpus_per_pod,
        gang=gang,
        launcher=pods.pod(
            profile, ctx.placement, labels=labels, containers=(launcher,), volumes=(scripts,), on_gpu_node=False
        ),
        workers=profile.group_size,
        worker=pods.pod(profile, ctx.placement, labels=labels, containers=(worker,), volumes=(shm_volume,)),
    )


def _test_pods(ctx: Context) -> dict[str, str]:
    """What selects the test's pods and only them (sshd on the MPI workers, torchrun's 29500)."""
    return {k: v for k, v in _labels(ctx).items() if k in ("app.kubernetes.io/instance", "app.kubernetes.io/component")}


def _indexed_job(ctx: Context) -> IndexedJob:
    profile, test, name = ctx.profile, ctx.profile.nccl_test, ctx.names.nccl_test
    master = f"{name}-0.{name}"
    env = _env(
        ctx,
        {
            "LWSGEN_MAX_BYTES": test.max_bytes,
            "LWSGEN_MIN_BUS_BW_GBPS": pods.env_text(test.min_bus_bandwidth_gbps),
            "LWSGEN_TEST_PODS": str(profile.group_size),
            "LWSGEN_MASTER": master,
            "LWSGEN_MASTER_PORT": str(MASTER_PORT),
            "LWSGEN_SUBDOMAIN": name,
            "LWSGEN_RENDEZVOUS_TIMEOUT": str(profile.launch.rendezvous_timeout_seconds),
        },
    )
    command = (
        "/bin/bash",
        f"{SCRIPTS_MOUNT}/nccl-rendezvous.sh",
        "torchrun",
        "--nnodes",
        str(profile.group_size),
        "--nproc-per-node",
        str(profile.gpus_per_pod),
        "--node-rank",
        "$(JOB_COMPLETION_INDEX)",
        "--master-addr",
        master,
        "--master-port",
        str(MASTER_PORT),
        f"{SCRIPTS_MOUNT}/nccl_allreduce.py",
    )
    shm_volume, shm_mount = pods.shm(profile)
    scripts, scripts_mount = pods.config_map_volume(SCRIPTS_VOLUME, name, SCRIPTS_MOUNT)
    container = pods.container(
        "nccl-test",
        test.image or profile.image,
        command,
        env=env,
        resources=_resources(ctx),
        mounts=(shm_mount, scripts_mount),
        security=pods.container_security(profile),
    )
    labels = _labels(ctx)
    selector = _test_pods(ctx)  # stable DNS for the test pods (<job>-<index>.<service>), before they are ready
    pod = pods.pod(
        profile,
        ctx.placement,
        labels=labels,
        containers=(container,),
        volumes=(shm_volume, scripts),
        subdomain=name,
        restart_policy="Never",
    )
    return IndexedJob(profile.group_size, selector, pod)


def nccl_test(ctx: Context, kind) -> NcclTest | None:
    """The test, named <name>-nccl-test-<8 hex digits of its pods>: a Job's pod template cannot
    change, so a changed test is a new Job (and MPIJob) rather than an immutable-field sync error."""
    if not ctx.profile.nccl_test.enabled:
        return None
    draft = _nccl_test(ctx)
    text = json.dumps(canonical([draft.mpijob, draft.job, draft.scripts]), sort_keys=True)
    name = f"{ctx.names.nccl_test}-{hashlib.sha256(text.encode()).hexdigest()[:NAME_DIGITS]}"
    return _nccl_test(ctx._replace(names=ctx.names._replace(nccl_test=name)))


def _nccl_test(ctx: Context) -> NcclTest:
    test = ctx.profile.nccl_test
    mpi = test.launcher == "mpijob"
    scripts = ("nccl-mpi-verdict.sh",) if mpi else ("lib.sh", "nccl-rendezvous.sh", "nccl_allreduce.py")
    # A one-off test: no sync wave, no profile annotations; queue labels as the LWS has them.
    meta = Meta(ctx.names.nccl_test, ctx.profile.namespace, {**_labels(ctx), **ctx.placement.lws_labels}, None)
    return NcclTest(
        meta,
        {name: resources.script(name) for name in scripts},
        test.timeout_seconds,
        _mpijob(ctx) if mpi else None,
        None if mpi else _indexed_job(ctx),
        _test_pods(ctx) if ctx.profile.security.network_policy else None,
    )
