"""triton-trtllm: MPI over kubectl exec from a stock NGC image; scripts run against fake tools."""

import re
import subprocess

import pytest

from conftest import lws_of, merged, objects_of
from lwsgen.runtimes import triton_trtllm
from runtimes.scripts import bin_dir, env_of, fake, run

TRITON = {
    "name": "llama",
    "namespace": "inference",
    "runtime": "triton-trtllm",
    "image": "nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3",
    "model": {"path": "/var/run/models/repo", "extraArgs": ["--log-verbose=1", "--exit-timeout-secs=30"]},
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8},
    "storage": {"claimName": "efs-claim"},
    "monitoring": {"enabled": False},
}


@pytest.fixture
def rendered(render):
    return render(TRITON)


def _templates(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"], lwt["workerTemplate"]


def test_leader_runs_the_launcher_with_world_size_and_gpus_per_pod(rendered):
    leader, _ = _templates(rendered)
    container = leader["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "/lwsgen/scripts/mpi-leader.sh"]
    assert container["args"] == [
        "/bin/bash",
        "/lwsgen/scripts/triton-rank.sh",
        "/var/run/models/repo",
        "tensorrt_llm",
        "--log-verbose=1",
        "--exit-timeout-secs=30",
    ]
    env = env_of(container)
    assert env["LWSGEN_WORLD_SIZE"] == "16" and env["LWSGEN_GPUS_PER_POD"] == "8"
    assert env["LWSGEN_MPIRUN"] == "/opt/hpcx/ompi/bin/mpirun"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8000, "grpc": 8001, "metrics": 8002}
    group_key = next(e for e in container["env"] if e["name"] == "GROUP_KEY")
    assert group_key["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['leaderworkerset.sigs.k8s.io/group-key']"


def test_stock_image_gets_kubectl_from_an_init_container_and_scripts_from_a_configmap(rendered):
    leader, worker = _templates(rendered)
    [init] = leader["spec"]["initContainers"]
    assert init["image"] == "registry.k8s.io/kubectl:v1.31.4"
    assert init["volumeMounts"] == [{"name": "tools", "mountPath": "/lwsgen/bin"}]
    assert all(c["image"] == TRITON["image"] for c in leader["spec"]["containers"] + worker["spec"]["containers"])
    configmap = objects_of(rendered)["configmap.yaml"]
    assert sorted(configmap["data"]) == ["kubectl-rsh", "lib.sh", "mpi-leader.sh", "mpi-worker.sh", "triton-rank.sh"]
    for template in (leader, worker):
        mounts = {m["mountPath"]: m["name"] for m in template["spec"]["containers"][0]["volumeMounts"]}
        assert mounts["/lwsgen/scripts"] == "launch-scripts"
        volume = next(v for v in template["spec"]["volumes"] if v["name"] == "launch-scripts")
        assert volume["configMap"] == {"name": "llama-launch", "defaultMode": 0o555}


def test_only_the_leader_gets_the_api_and_rbac_is_least_privilege(rendered):
    leader, worker = _templates(rendered)
    assert leader["spec"]["serviceAccountName"] == "llama-launcher"
    assert leader["spec"]["automountServiceAccountToken"] is True
    assert "serviceAccountName" not in worker["spec"] and worker["spec"]["automountServiceAccountToken"] is False
    objs = objects_of(rendered)
    role = objs["role.yaml"]
    assert role["metadata"]["namespace"] == "inference"
    rules = {tuple(r["resources"]): sorted(r["verbs"]) for r in role["rules"]}
    assert rules == {("pods",): ["get", "list"], ("pods/exec",): ["create", "get"]}
    assert not any("*" in r["verbs"] or "*" in r["resources"] or "*" in r["apiGroups"] for r in role["rules"])
    binding = objs["rolebinding.yaml"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "llama-launcher"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "llama-launcher", "namespace": "inference"}]
    assert objs["serviceaccount.yaml"]["metadata"]["name"] == "llama-launcher"


def test_every_script_passes_bash_n(rendered, tmp_path):
    for name, text in objects_of(rendered)["configmap.yaml"]["data"].items():
        path = tmp_path / name
        path.write_text(text)
        subprocess.run(["bash", "-n", str(path)], check=True)


LEADER_ENV = {
    "GROUP_KEY": "abc123",
    "POD_NAME": "llama-0",
    "POD_NAMESPACE": "inference",
    "LWS_GROUP_SIZE": "3",
    "LWSGEN_WORLD_SIZE": "24",
    "LWSGEN_GPUS_PER_POD": "8",
    "LWSGEN_RENDEZVOUS_TIMEOUT": "30",
    "LWSGEN_WORKER_CONTAINER": "worker",
}
RANK = ("/bin/bash", "/lwsgen/scripts/triton-rank.sh", "/models/repo", "--log-verbose=1")


def test_leader_waits_for_every_worker_of_its_group_then_runs_mpirun_leader_first(tmp_path):
    bins = bin_dir(tmp_path)
    # kubectl answers as the kubelet reports: the leader's own container is not ready (its readiness
    # probe asks the server rank 0 starts after this wait), one worker ready, then the other (a
    # worker whose container died is listed not ready). Counting the leader's readiness never ends.
    fake(
        bins,
        "kubectl",
        'n=$(grep -c kubectl "$CALLS"); pods=("llama-0 false" "llama-0-2 true" "llama-0-1 true");'
        ' [ "$n" -lt 3 ] && pods[2]="llama-0-1 false"; printf "%s\\n" "${pods[@]:0:$((n < 3 ? n + 1 : 3))}"',
    )
    fake(bins, "mpirun")
    env = {**LEADER_ENV, "LWSGEN_MPIRUN": str(bins / "mpirun"), "LWS_LEADER_ADDRESS": "llama-0.llama.inference"}
    proc, calls = run("mpi-leader.sh", tmp_path, env, RANK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kubectl_calls = [c for c in calls if "/kubectl " in c]
    assert len(kubectl_calls) == 3
    assert "--selector leaderworkerset.sigs.k8s.io/group-key=abc123" in kubectl_calls[0]
    assert "--field-selector status.phase=Running" in kubectl_calls[0]
    assert "waiting: 1 of 2 workers of group abc123 run ready (llama-0-2)" in proc.stdout
    [mpirun] = [c for c in calls if "/mpirun " in c]
    hosts = "llama-0.llama.inference:8,llama-0-1.llama.inference:8,llama-0-2.llama.inference:8"
    assert f"-np 24 --host {hosts}" in mpirun
    assert "--mca plm_rsh_agent /lwsgen/scripts/kubectl-rsh" in mpirun
    assert mpirun.endswith("/bin/bash /lwsgen/scripts/triton-rank.sh /models/repo --log-verbose=1")


def test_leader_gives_up_after_its_deadline_with_a_clear_log(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "kubectl", 'echo "error: forbidden" >&2; exit 1')
    fake(bins, "mpirun")
    env = {
        **LEADER_ENV,
        "LWSGEN_MPIRUN": str(bins / "mpirun"),
        "LWSGEN_RENDEZVOUS_TIMEOUT": "1",
        "LWSGEN_POLL_SECONDS": "0.2",
    }
    proc, calls = run("mpi-leader.sh", tmp_path, env, RANK)
    assert proc.returncode == 1
    assert "listing the pods of this group failed: error: forbidden" in proc.stdout
    assert "gave up after 1s: 0 of 2 workers of group abc123 run ready (none)" in proc.stdout
    assert not any("/mpirun " in c for c in calls)


@pytest.mark.parametrize(
    "rank, expected, absent",
    [
        (
            "0",
            ["--http-port=8000", "--grpc-port=8001", "--metrics-port=8002", "--allow-metrics=true", "--id=rank0"]
            + ["--backend-config=python,shm-region-prefix-name=prefix0_"],
            ["--allow-http=false"],
        ),
        (
            "5",
            ["--allow-http=false", "--allow-grpc=false", "--allow-metrics=false", "--id=rank5"]
            + ["--backend-config=python,shm-region-prefix-name=prefix5_", "--model-control-mode=explicit"]
            + ["--load-model=tensorrt_llm --load-model=tensorrt_llm_draft"],
            ["--http-port=8000"],
        ),
    ],
)
def test_rank_zero_serves_and_other_ranks_only_compute(tmp_path, rank, expected, absent):
    fake(bin_dir(tmp_path), "tritonserver")
    env = {
        "OMPI_COMM_WORLD_RANK": rank,
        "LWSGEN_HTTP_PORT": "8000",
        "LWSGEN_GRPC_PORT": "8001",
        "LWSGEN_METRICS_PORT": "8002",
    }
    models = "tensorrt_llm,tensorrt_llm_draft"
    proc, [call] = run("triton-rank.sh", tmp_path, env, ("/models/repo", models, "--log-verbose=1", "two words"))
    assert proc.returncode == 0, proc.stderr
    args = call.split(" ", 1)[1]
    assert "--model-repository=/models/repo" in args and args.endswith("--log-verbose=1 two words")
    assert all(flag in args for flag in expected) and not any(flag in args for flag in absent)
    assert ("--load-model" in args) is (rank != "0")  # rank 0 loads the whole repository


def test_other_ranks_load_the_engine_models_of_the_profile(render):
    rendered = render(merged(TRITON, **{"model.engineModels": ["trt_engine", "draft_engine"]}))
    leader, _ = _templates(rendered)
    assert leader["spec"]["containers"][0]["args"][3] == "trt_engine,draft_engine"


def test_engine_models_belong_to_triton_only(said):
    from conftest import MINIMAL

    errors, _ = said(merged(MINIMAL, **{"model.engineModels": ["tensorrt_llm"]}))
    assert any(e.startswith("model.engineModels: ") and "triton-trtllm" in e for e in errors)


def _runtime_rules(rendered) -> list[dict]:
    rule = objects_of(rendered)["prometheusrule.yaml"]
    return [r for g in rule["spec"]["groups"] if g["name"].endswith(".runtime") for r in g["rules"]]


@pytest.mark.parametrize("served, model", [(None, "ensemble"), ("tensorrt_llm_bls", "tensorrt_llm_bls")])
def test_every_triton_record_counts_only_the_model_clients_call(render, served, model):
    """Per-request records read the entry model (each request is counted once per model); the
    queue/compute ratio reads every model but it, where requests really queue (an ensemble's own
    queue time is ~0 whatever the load: core r24.07 ensemble_scheduler.cc 1414/389)."""
    profile = merged(TRITON, **{"monitoring.enabled": True, **({"model.servedName": served} if served else {})})
    rules = _runtime_rules(render(profile))
    assert rules
    for rule in rules:
        selectors = re.findall(r"nv_inference_\w+\{([^}]*)\}", rule["expr"])
        wanted = f'model!="{model}"' if rule["record"].endswith("queue_compute:ratio_rate1m") else f'model="{model}"'
        assert selectors and all(wanted in s for s in selectors), rule["expr"]


def test_rsh_agent_runs_the_daemon_command_in_the_worker_container(tmp_path):
    fake(bin_dir(tmp_path), "kubectl")
    proc, [call] = run(
        "kubectl-rsh",
        tmp_path,
        {"POD_NAMESPACE": "inference", "LWSGEN_WORKER_CONTAINER": "worker"},
        ("llama-0-1.llama.inference", "orted", "-mca", "ess", "env"),  # mpirun passes the DNS name
    )
    assert proc.returncode == 0, proc.stderr
    assert call.endswith(
        "kubectl exec llama-0-1 --namespace inference --container worker -- /bin/sh -c orted -mca ess env"
    )


def test_worker_waits_to_be_driven_and_stops_cleanly_on_sigterm(tmp_path):
    import signal
    import time

    from lwsgen import resources

    script = tmp_path / "mpi-worker.sh"
    script.write_text(resources.script("mpi-worker.sh"))
    (tmp_path / "lib.sh").write_text(resources.script("lib.sh"))
    poll = 30  # a stop that waited for the next poll would take this long
    env = {"PATH": "/usr/bin:/bin", "LWSGEN_RENDEZVOUS_TIMEOUT": "120", "LWSGEN_POLL_SECONDS": str(poll)}
    proc = subprocess.Popen(["/bin/bash", str(script)], stdout=subprocess.PIPE, text=True, env=env)
    waiting = proc.stdout.readline()  # its trap is set before it says it waits
    assert "waiting for the leader to start MPI ranks" in waiting and proc.poll() is None
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=2 * poll)
    assert time.monotonic() - started < poll / 2 and "stopping (SIGTERM)" in out, out


def test_relative_model_path_is_refused():
    from lwsgen.check.schema import with_defaults
    from lwsgen.profile import from_data

    profile = from_data(
        with_defaults(
            {"name": "t", "runtime": "triton-trtllm", "image": "a:1", "model": {"path": "repo"}, "node": {"gpus": 8}}
        )
    )
    assert triton_trtllm.check(profile)[0][2] == "bad-model-path"


# Triton's table was checked from 24.07 (the launcher lwsgen follows, tensorrtllm_backend v0.11.0) to
# 26.07: older and newer releases are said.
@pytest.mark.parametrize(
    "tag, said_text",
    [
        ("20.03", "Triton (NGC tritonserver) 20.03 is older than any version lwsgen checked (from 24.07)"),
        ("24.07", None),
        ("26.07", None),
        ("27.01", "Triton (NGC tritonserver) 27.01 is newer than lwsgen's version table (checked up to 26.07)"),
    ],
)
def test_triton_versions_outside_the_table_are_said(said, tag, said_text):
    _, warnings = said(merged(TRITON, image=f"nvcr.io/nvidia/tritonserver:{tag}-trtllm-python-py3"))
    versions = [w for w in warnings if w.startswith("image: ")]
    if said_text is None:
        assert versions == []
    else:
        [warning] = versions
        assert warning.startswith(f"image: {said_text}")
