"""NCCL preflight on the exact shape of one group, with a pass bar; the eksctl node group."""

import importlib.util
import re
import subprocess
import sys

import pytest

import fastyaml
from conftest import PROFILES, SHARED, lws_of, problem_codes
from lwsgen import resources
from lwsgen.pipeline import render_profile
from runtimes.scripts import bin_dir, fake, run
from runtimes.test_all_runtimes import profile_for

NODE = {
    "gpus": 8,
    "instanceType": "p5.48xlarge",
    "gpuProduct": "NVIDIA-H100-80GB-HBM3",
    "efa": 32,
    "cpu": "64",
    "memory": "512Gi",
}


def _docs(rendered, name="nccl-test.yaml"):
    return {d["kind"]: d for d in fastyaml.load_all(rendered.files[name])}


def _worker_spec(rendered):
    return lws_of(rendered)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]


MPI = {
    "enabled": True,
    "launcher": "mpijob",
    "image": "registry.example.com/nccl-tests:2.16.4",
    "maxBytes": "16G",
    "minBusBandwidthGBps": 100,
}


def test_mpijob_runs_all_reduce_on_exactly_one_groups_shape(render):
    rendered = render(profile_for("vllm", node=NODE, ncclTest=MPI, scheduling={"priorityClassName": "high"}))
    job = _docs(rendered)["MPIJob"]["spec"]
    assert job["slotsPerWorker"] == 8
    worker = job["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    lws_worker = _worker_spec(rendered)
    spec = worker["template"]["spec"]
    for key in ("nodeSelector", "affinity", "tolerations", "priorityClassName"):
        assert spec[key] == lws_worker[key], key
    limits = spec["containers"][0]["resources"]["limits"]
    assert limits == {**lws_worker["containers"][0]["resources"]["limits"], "hugepages-2Mi": "5120Mi"}
    assert spec["containers"][0]["resources"]["requests"] == limits
    assert spec["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    launcher = job["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    args = launcher["args"]
    assert args[args.index("-np") + 1] == "16" and args[args.index("-N") + 1] == "8"
    assert args[-9:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]
    env = {e["name"]: e["value"] for e in launcher["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_FORK_SAFE"] == "1" and env["LWSGEN_MIN_BUS_BW_GBPS"] == "100"
    # the ranks start over ssh, which does not pass the container's env: every variable goes with -x, once
    forwarded = [args[i + 1] for i, a in enumerate(args) if a == "-x"]
    assert len(forwarded) == len(set(forwarded)) and {
        "PATH",
        "LD_LIBRARY_PATH",
        "FI_PROVIDER",
        "FI_EFA_FORK_SAFE",
    } <= set(forwarded)
    mca = [tuple(args[i + 1 : i + 3]) for i, a in enumerate(args) if a == "--mca"]
    assert mca == [("pml", "^ucx"), ("btl", "tcp,self"), ("btl_tcp_if_exclude", "lo,docker0,veth_def_agent")]
    assert job["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0, "activeDeadlineSeconds": 1800}


def test_mpijob_matches_the_awsome_inference_test_on_the_triton_example():
    reference = fastyaml.load((SHARED / "reference" / "awsome-inference_nccl_test.yaml").read_text())
    ours = _docs(render_profile(PROFILES / "triton-llama3-405b.yaml"))["MPIJob"]["spec"]
    assert ours["slotsPerWorker"] == reference["spec"]["slotsPerWorker"]
    ref_worker, our_worker = (r["mpiReplicaSpecs"]["Worker"] for r in (reference["spec"], ours))
    assert our_worker["replicas"] == ref_worker["replicas"]
    assert our_worker["template"]["spec"]["nodeSelector"] == ref_worker["template"]["spec"]["nodeSelector"]
    ref_limits = ref_worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    our_limits = our_worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    for resource in ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "hugepages-2Mi"):
        assert str(our_limits[resource]) == str(ref_limits[resource])
    ref_args = reference["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    our_args = ours["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"]
    for flag in ("-np", "-N", "-b", "-e", "-f", "-g"):
        assert our_args[our_args.index(flag) + 1] == str(ref_args[ref_args.index(flag) + 1]), flag
    assert our_args[0] == ref_args[0] == "/opt/amazon/openmpi/bin/mpirun"


def test_indexed_job_needs_no_operator_and_runs_on_the_serving_image(render):
    test = {"enabled": True, "launcher": "job", "maxBytes": "1G", "minBusBandwidthGBps": 40, "timeoutSeconds": 900}
    rendered = render(profile_for("vllm", node=NODE, ncclTest=test))
    docs = _docs(rendered)
    job, service = docs["Job"], docs["Service"]
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 900
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == job["metadata"]["name"]
    assert re.fullmatch(r"demo-nccl-test-[0-9a-f]{8}", job["metadata"]["name"])
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert (
        pod["containers"][0]["image"] == _worker_spec(rendered)["containers"][0]["image"] == "vllm/vllm-openai:v0.8.5"
    )
    assert set(service["spec"]["selector"].items()) <= set(spec["template"]["metadata"]["labels"].items())
    command = pod["containers"][0]["command"]
    assert command == [
        "/bin/bash",
        "/lwsgen/nccl/nccl-rendezvous.sh",  # waits, bounded and logging, for every test pod first
        "torchrun",
        "--nnodes",
        "2",
        "--nproc-per-node",
        "8",
        "--node-rank",
        "$(JOB_COMPLETION_INDEX)",
        "--master-addr",
        f"{job['metadata']['name']}-0.{job['metadata']['name']}",
        "--master-port",
        "29500",
        "/lwsgen/nccl/nccl_allreduce.py",
    ]
    for key in ("nodeSelector", "affinity", "tolerations"):
        assert pod[key] == _worker_spec(rendered)[key]
    assert sorted(docs["ConfigMap"]["data"]) == ["lib.sh", "nccl-rendezvous.sh", "nccl_allreduce.py"]


def test_the_test_is_outside_the_serving_kustomization(render):
    rendered = render(profile_for("vllm", node=NODE, ncclTest=MPI))
    listed = fastyaml.load(rendered.files["kustomization.yaml"])["resources"]
    assert "nccl-test.yaml" in rendered.files and "nccl-test.yaml" not in listed
    assert rendered.files["nccl-test.yaml"].startswith("# NCCL all-reduce preflight")
    assert "eksctl-nodegroup.yaml" not in listed


def test_volcano_gang_and_kueue_queue_carry_over(render):
    volcano = _docs(
        render(profile_for("vllm", node=NODE, ncclTest=MPI, scheduling={"scheduler": "volcano", "queue": "gpu"}))
    )["MPIJob"]
    assert volcano["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "gpu"}
    assert volcano["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] == "volcano"
    kueue = _docs(
        render(
            profile_for(
                "vllm",
                node=NODE,
                ncclTest={**MPI, "launcher": "job"},
                scheduling={"scheduler": "kueue", "queue": "team"},
            )
        )
    )["Job"]
    assert kueue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team"


def test_images_the_launchers_need_are_required(write_profile):
    assert problem_codes(write_profile(profile_for("vllm", ncclTest={"enabled": True, "launcher": "mpijob"}))) == [
        "missing-image"
    ]
    assert problem_codes(write_profile(profile_for("llamacpp", ncclTest={"enabled": True, "launcher": "job"}))) == [
        "missing-image"
    ]
    assert (
        problem_codes(
            write_profile(
                profile_for(
                    "llamacpp",
                    ncclTest={"enabled": True, "launcher": "job", "image": "nvcr.io/nvidia/pytorch:25.01-py3"},
                )
            )
        )
        == []
    )
    assert problem_codes(
        write_profile(profile_for("vllm", ncclTest={"enabled": True, "launcher": "mpijob", "image": "nccl:latest"}))
    ) == ["bad-image"]


NCCL_TESTS_OUTPUT = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    40.12    0.00    0.00      0    39.87    0.00    0.00      0
  8589934592    2147483648     float     sum      -1    49811  172.45  323.34      0    49770  172.59  323.61      0
 17179869184    4294967296     float     sum      -1    99201  173.18  324.71      0    99176  173.22  324.80      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 116.1
"""


@pytest.mark.parametrize(
    "bar, code, verdict",
    [
        ("100", 0, "lwsgen nccl-test: PASS: bus bandwidth 324.71 GB/s at 17179869184 bytes, required 100 GB/s"),
        ("400", 1, "lwsgen nccl-test: FAIL: bus bandwidth 324.71 GB/s at 17179869184 bytes, required 400 GB/s"),
        ("0", 0, "lwsgen nccl-test: PASS: bus bandwidth 324.71 GB/s at 17179869184 bytes, required 0 GB/s"),
    ],
)
def test_mpi_verdict_reads_the_bus_bandwidth_at_the_largest_size(tmp_path, bar, code, verdict):
    (tmp_path / "out.txt").write_text(NCCL_TESTS_OUTPUT)
    fake(bin_dir(tmp_path), "mpirun", f"cat {tmp_path / 'out.txt'}")
    proc, _ = run("nccl-mpi-verdict.sh", tmp_path, {"LWSGEN_MIN_BUS_BW_GBPS": bar}, ("mpirun", "-np", "16"))
    assert proc.returncode == code
    assert proc.stdout.splitlines()[-1] == verdict
    assert "# Avg bus bandwidth" in proc.stdout  # the full report stays in the log


def test_mpi_verdict_fails_without_a_result_after_its_attempts(tmp_path):
    fake(bin_dir(tmp_path), "mpirun", 'echo "ssh: connect to host w-1: Connection refused"; exit 3')
    env = {"LWSGEN_MIN_BUS_BW_GBPS": "0", "LWSGEN_RETRY_SECONDS": "0"}
    proc, calls = run("nccl-mpi-verdict.sh", tmp_path, env, ("mpirun",))
    assert proc.returncode == 1 and len(calls) == 3
    assert (
        proc.stdout.splitlines()[-1]
        == "lwsgen nccl-test: FAIL: all_reduce_perf printed no result in 3 attempts (mpirun exit status 3)"
    )


def test_mpi_verdict_retries_an_early_launch_failure_but_not_a_result(tmp_path):
    (tmp_path / "out.txt").write_text(NCCL_TESTS_OUTPUT)
    # The first launch fails before any result (a worker's sshd not up yet); the second runs.
    fake(bin_dir(tmp_path), "mpirun", f'[ "$(grep -c mpirun "$CALLS")" -ge 2 ] && cat {tmp_path / "out.txt"}; true')
    env = {"LWSGEN_MIN_BUS_BW_GBPS": "400", "LWSGEN_RETRY_SECONDS": "0"}
    proc, calls = run("nccl-mpi-verdict.sh", tmp_path, env, ("mpirun",))
    assert len(calls) == 2 and "retrying in 0 s (attempt 1 of 3)" in proc.stdout
    assert proc.returncode == 1 and "FAIL: bus bandwidth 324.71 GB/s" in proc.stdout.splitlines()[-1]


def test_the_mpijob_launcher_waits_for_ready_workers(render):
    rendered = render(profile_for("vllm", node=NODE, ncclTest=MPI))
    [job] = [d for d in fastyaml.load_all(rendered.files["nccl-test.yaml"]) if d and d["kind"] == "MPIJob"]
    assert job["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"


@pytest.fixture
def allreduce(tmp_path):
    path = tmp_path / "nccl_allreduce.py"
    path.write_text(resources.script("nccl_allreduce.py"))
    spec = importlib.util.spec_from_file_location("nccl_allreduce", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # torch is imported only inside main()
    return module


def test_allreduce_script_computes_bus_bandwidth_as_nccl_tests(allreduce):
    # 1 GiB in 10 ms over 16 ranks: algbw 107.37 GB/s, busbw x 2*15/16 = 201.33 GB/s
    assert allreduce.bus_bandwidth(2**30, 0.01, 16) == pytest.approx(107.3741824 * 30 / 16)
    assert allreduce.bus_bandwidth(1000, 1.0, 2) == pytest.approx(1e-6)
    assert (
        allreduce.parse_size("16G") == 16 * 2**30
        and allreduce.parse_size("512K") == 512 * 1024
        and allreduce.parse_size("64") == 64
    )
    assert allreduce.sizes(64) == [8, 16, 32, 64]
    assert allreduce.verdict(2**30, 201.33, 250) == (
        False,
        "lwsgen nccl-test: FAIL: bus bandwidth 201.33 GB/s at 1073741824 bytes, required 250 GB/s",
    )
    assert allreduce.verdict(2**30, 201.33, 0)[0] is True


def test_allreduce_script_compiles(tmp_path):
    path = tmp_path / "nccl_allreduce.py"
    path.write_text(resources.script("nccl_allreduce.py"))
    subprocess.run([sys.executable, "-m", "py_compile", str(path)], check=True)


def test_eksctl_node_group_matches_what_the_lws_selects(render):
    rendered = render(
        profile_for(
            "vllm",
            node={**NODE, "nodeSelector": {"pool": "gpu"}},
            autoscaling={"enabled": True, "maxReplicas": 3},
            monitoring={"enabled": True},
        )
    )
    [group] = fastyaml.load(rendered.files["eksctl-nodegroup.yaml"])["nodeGroups"]
    assert group["instanceType"] == "p5.48xlarge" and group["efaEnabled"] is True
    assert (group["minSize"], group["maxSize"]) == (0, 6)  # 3 groups x 2 nodes
    assert group["placement"] == {"groupName": "demo-placement"}
    assert group["labels"] == {"pool": "gpu", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    tags = group["tags"]
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "8"
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags["k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"] == "true:NoSchedule"
    worker = _worker_spec(rendered)
    assert set(worker["nodeSelector"].items()) - {("node.kubernetes.io/instance-type", "p5.48xlarge")} <= set(
        group["labels"].items()
    )


def test_no_eksctl_fragment_without_an_instance_type(render):
    assert "eksctl-nodegroup.yaml" not in render(profile_for("vllm")).files


def test_the_mpijob_without_efa_passes_no_efa_settings(render):
    rendered = render(profile_for("vllm", node={**NODE, "efa": 0}, ncclTest=MPI))
    job = _docs(rendered)["MPIJob"]["spec"]
    launcher = job["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert "--mca" not in launcher["args"] and "FI_PROVIDER" not in launcher["args"]


def test_a_changed_test_is_a_new_job_and_the_same_test_the_same_name(render):
    """A Job's pod template is immutable: a fixed name made any change an Argo CD / Flux sync error."""
    test = {"enabled": True, "launcher": "job", "maxBytes": "1G", "minBusBandwidthGBps": 40, "timeoutSeconds": 900}

    def names(**changes):
        docs = _docs(render(profile_for("vllm", node=NODE, ncclTest={**test, **changes})))
        return (
            docs["Job"]["metadata"]["name"],
            docs["Service"]["metadata"]["name"],
            docs["ConfigMap"]["metadata"]["name"],
        )

    first = names()
    assert names() == first and len(set(first)) == 1
    assert names(maxBytes="2G")[0] != first[0] and names(minBusBandwidthGBps=80)[0] != first[0]
