"""trtllm-serve: every rank under mpirun over kubectl exec, the launch triton-trtllm uses."""

import json
import subprocess
import sys

import pytest

import fastyaml
from conftest import SHARED, lws_of, objects_of
from groupsim.kubeenv import expand
from lwsgen import resources
from runtimes.scripts import bin_dir, fake, run

TRTLLM = {
    "name": "t",
    "runtime": "trtllm-serve",
    "image": "nvcr.io/nvidia/tensorrt-llm/release:0.21.0",
    "model": {"path": "meta-llama/Llama-3.1-405B-Instruct", "extraArgs": ["--max_batch_size", "64"]},
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8},
    "monitoring": {"enabled": False},
}


def test_leader_runs_trtllm_serve_on_every_rank_with_tp_and_pp(render):
    rendered = render(TRTLLM)
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    assert leader["command"] == ["/bin/bash", "/lwsgen/scripts/mpi-leader.sh"]
    assert leader["args"] == ["trtllm-llmapi-launch", "/bin/bash", "/lwsgen/scripts/exec-argv.sh"]
    serve = {e["name"]: e.get("value") for e in leader["env"]}["LWSGEN_SERVE_ARGV"]
    assert json.loads(serve) == [
        "trtllm-serve",
        "meta-llama/Llama-3.1-405B-Instruct",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--tp_size",
        "8",
        "--pp_size",
        "2",
        "--max_batch_size",
        "64",
    ]
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert lwt["workerTemplate"]["spec"]["containers"][0]["command"] == ["/bin/bash", "/lwsgen/scripts/mpi-worker.sh"]
    assert [c["name"] for c in lwt["leaderTemplate"]["spec"]["initContainers"]] == ["install-kubectl"]
    assert sorted(objects_of(rendered)) == [
        "configmap.yaml",
        "kustomization.yaml",
        "kustomize-openapi.yaml",
        "kustomizeconfig.yaml",
        "leaderworkerset.yaml",
        "networkpolicy.yaml",
        "role.yaml",
        "rolebinding.yaml",
        "service.yaml",
        "serviceaccount.yaml",
    ]


def test_same_group_key_env_and_exec_rbac_as_the_upstream_tensorrt_llm_example(render):
    upstream = next(fastyaml.load_all((SHARED / "reference" / "lws_docs_examples_tensorrt-llm_lws.yaml").read_text()))
    up_env = upstream["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["env"]
    up_group_key = next(e for e in up_env if e["name"] == "GROUP_KEY")
    rendered = render(TRTLLM)
    leader = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert next(e for e in leader["env"] if e["name"] == "GROUP_KEY") == up_group_key
    up_rules = [
        d
        for d in fastyaml.load_all((SHARED / "reference" / "lws_docs_examples_tensorrt-llm_rbac.yaml").read_text())
        if d and d["kind"] == "Role"
    ][0]["rules"]
    up_exec = next(r for r in up_rules if "pods/exec" in r["resources"])
    ours = objects_of(rendered)["role.yaml"]["rules"]
    assert set(up_exec["verbs"]) <= set(next(r for r in ours if "pods/exec" in r["resources"])["verbs"])
    # upstream also grants deployments, jobs and services in apps and batch; the launch needs pods only
    assert {res for r in ours for res in r["resources"]} == {"pods", "pods/exec"}


def test_mpi_leader_runs_the_trtllm_serve_ranks_over_the_group(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "kubectl", 'printf "t-0 true\\nt-0-1 true\\n"')
    fake(bins, "mpirun")
    env = {
        "GROUP_KEY": "k",
        "POD_NAME": "t-0",
        "POD_NAMESPACE": "ns",
        "LWS_LEADER_ADDRESS": "t-0.t.ns",
        "LWS_GROUP_SIZE": "2",
        "LWSGEN_WORLD_SIZE": "16",
        "LWSGEN_GPUS_PER_POD": "8",
        "LWSGEN_MPIRUN": str(bins / "mpirun"),
        "LWSGEN_RENDEZVOUS_TIMEOUT": "10",
    }
    proc, calls = run("mpi-leader.sh", tmp_path, env, ("trtllm-llmapi-launch", "trtllm-serve", "m", "--tp_size", "8"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls[-1].endswith("-np 16 --host t-0.t.ns:8,t-0-1.t.ns:8 trtllm-llmapi-launch trtllm-serve m --tp_size 8")


# What upstream trtllm-llmapi-launch does with its arguments (tensorrt_llm/llmapi/trtllm-llmapi-launch).
UPSTREAM_LAUNCH = 'task_with_command="${@:1}"\n$task_with_command'
TRICKY = [
    "--backend",
    "pytorch",
    "--metadata_server_config_file",
    '{"kv_cache_config": {"free_gpu_memory_fraction": 0.9}}',
]
TRICKY += ["--reasoning_parser", "two words", "*", "$HOME", "it's"]


def test_extra_args_reach_trtllm_serve_byte_for_byte_through_trtllm_llmapi_launch(render, tmp_path):
    profile = {
        "name": "t",
        "runtime": "trtllm-serve",
        "image": "nvcr.io/nvidia/tensorrt-llm/release:0.21.0",
        "model": {"path": "meta-llama/Llama-3.1-8B-Instruct", "extraArgs": TRICKY},
        "node": {"gpus": 8},
        "parallelism": {"tensor": 8},
        "service": {"type": "ClusterIP"},
    }
    leader = lws_of(render(profile))["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    [written] = [e["value"] for e in leader["env"] if e["name"] == "LWSGEN_SERVE_ARGV"]
    argv = expand(written, lambda name: None)  # as the kubelet hands the value over ($$ is $)
    bins = bin_dir(tmp_path)
    fake(bins, "trtllm-llmapi-launch", UPSTREAM_LAUNCH)
    fake(bins, "trtllm-serve", 'printf "%s\\0" "$@" > "$CALLS.argv"')
    (bins / "python3").symlink_to(sys.executable)
    (tmp_path / "lwsgen" / "scripts").mkdir(parents=True)
    script = tmp_path / "exec-argv.sh"
    script.write_text(resources.script("exec-argv.sh"))
    rank = [str(bins / "trtllm-llmapi-launch"), "/bin/bash", str(script)]  # the rank command, script path local
    assert leader["args"][:2] == ["trtllm-llmapi-launch", "/bin/bash"]
    env = {"PATH": f"{bins}:/usr/bin:/bin", "CALLS": str(tmp_path / "calls"), "LWSGEN_SERVE_ARGV": argv}
    proc = subprocess.run(rank, env=env, capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    received = (tmp_path / "calls.argv").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in received[-len(TRICKY) :]] == TRICKY


def _serve_argv(rendered) -> list[str]:
    leader = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    return json.loads({e["name"]: e.get("value") for e in leader["env"]}["LWSGEN_SERVE_ARGV"])


# /prometheus/metrics with return_perf_metrics from 1.1.0rc5 (PR #5785), the iteration gauges with
# enable_iter_perf_stats from 1.3.0rc0 (PR #12545): (tag, options lwsgen writes, autoscaling metrics).
METRICS_MATRIX = [
    ("0.21.0", None, ("gpu-utilization",)),
    ("1.1.0rc4", None, ("gpu-utilization",)),
    ("1.1.0rc5", {"return_perf_metrics": True}, ("gpu-utilization", "queue-compute-ratio")),
    ("1.2.1", {"return_perf_metrics": True}, ("gpu-utilization", "queue-compute-ratio")),
    (
        "1.3.0rc0",
        {"return_perf_metrics": True, "enable_iter_perf_stats": True},
        ("gpu-utilization", "queue-compute-ratio", "queue-length", "kv-cache-usage"),
    ),
]


@pytest.mark.parametrize("tag, options, autoscaling", METRICS_MATRIX)
def test_metrics_endpoint_options_and_rules_follow_the_version(render, tag, options, autoscaling):
    from lwsgen import runtimes

    profile = {**TRTLLM, "image": f"nvcr.io/nvidia/tensorrt-llm/release:{tag}", "monitoring": {"enabled": True}}
    rendered = render(profile)
    files = objects_of(rendered)
    argv = _serve_argv(rendered)
    if options is None:
        assert "podmonitor.yaml" not in files and "--extra_llm_api_options" not in argv
        assert "trtllm-options.yaml" not in files["configmap.yaml"]["data"]
    else:
        assert files["podmonitor.yaml"]["spec"]["podMetricsEndpoints"][0]["path"] == "/prometheus/metrics"
        assert argv[argv.index("--extra_llm_api_options") + 1] == "/lwsgen/scripts/trtllm-options.yaml"
        assert fastyaml.load(files["configmap.yaml"]["data"]["trtllm-options.yaml"]) == options
    assert runtimes.capabilities(rendered.profile).autoscaling_metrics == autoscaling


def test_no_metrics_warning_names_the_release_that_has_them(said):
    _, warnings = said({**TRTLLM, "monitoring": {"enabled": True}})
    [warning] = [w for w in warnings if w.startswith("monitoring.enabled")]
    assert "TensorRT-LLM 1.1.0rc5 and newer serve them" in warning


def test_extra_args_may_not_replace_the_options_file_lwsgen_writes(said):
    profile = {**TRTLLM, "image": "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "monitoring": {"enabled": True}}
    profile["model"] = {**TRTLLM["model"], "extraArgs": ["--extra_llm_api_options", "/models/mine.yaml"]}
    [error] = said(profile)[0]
    assert error.startswith("model.extraArgs[0]: --extra_llm_api_options is a flag lwsgen derives for trtllm-serve")
    assert "put your LLM API options in model.llmApiOptions" in error


def test_llm_api_options_of_the_profile_join_the_metrics_options(render):
    options = {"kv_cache_config": {"free_gpu_memory_fraction": 0.9}, "return_perf_metrics": False}
    profile = {**TRTLLM, "image": "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "monitoring": {"enabled": True}}
    profile["model"] = {**TRTLLM["model"], "llmApiOptions": options}
    written = fastyaml.load(objects_of(render(profile))["configmap.yaml"]["data"]["trtllm-options.yaml"])
    assert written == {"kv_cache_config": {"free_gpu_memory_fraction": 0.9}, "return_perf_metrics": True}
    quiet = {**profile, "monitoring": {"enabled": False}}
    assert fastyaml.load(objects_of(render(quiet))["configmap.yaml"]["data"]["trtllm-options.yaml"]) == {
        "kv_cache_config": {"free_gpu_memory_fraction": 0.9},
        "return_perf_metrics": False,
    }


def test_an_llm_api_option_monitoring_overrides_is_said(said):
    profile = {**TRTLLM, "image": "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "monitoring": {"enabled": True}}
    profile["model"] = {**TRTLLM["model"], "llmApiOptions": {"return_perf_metrics": False}}
    [warning] = [w for w in said(profile)[1] if w.startswith("model.llmApiOptions")]
    assert warning.startswith("model.llmApiOptions.return_perf_metrics: is set to True because monitoring")
    assert not any(w.startswith("model.llmApiOptions") for w in said({**profile, "monitoring": {"enabled": False}})[1])
