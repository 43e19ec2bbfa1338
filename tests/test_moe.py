"""Mixture-of-experts layouts: parallelism.data and parallelism.expert derived per runtime and
version (vLLM data parallelism across nodes, SGLang data-parallel attention), refused where lwsgen
does not derive them, the metrics that follow, and the pod settings RDMA all-to-all asks for."""

import pytest

from conftest import lws_of, merged, objects_of
from runtimes.scripts import bin_dir, fake, run

VLLM = {
    "name": "q",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.33.0",
    "model": {"path": "/models/qwen"},
    "parallelism": {"data": 16, "tensor": 1, "expert": True},
    "node": {"gpus": 8},
    "monitoring": {"enabled": True},
    "service": {"type": "ClusterIP"},
}
SGLANG = {**VLLM, "runtime": "sglang", "image": "lmsysorg/sglang:v0.5.23"}


def _containers(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]


def _value(args, flag):
    return args[args.index(flag) + 1]


def _env(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_group_size_is_data_x_tensor_x_pipeline_over_the_node(render):
    rendered = render(merged(VLLM, parallelism={"data": 4, "tensor": 4, "expert": True}))
    assert lws_of(rendered)["spec"]["leaderWorkerTemplate"]["size"] == 2  # 16 GPUs / 8


def test_vllm_data_parallel_as_its_docs_deploy_it(render):
    leader, worker = _containers(render(VLLM))
    for args in (leader["args"], worker["args"]):
        assert (_value(args, "--data-parallel-size"), _value(args, "--data-parallel-size-local")) == ("16", "8")
        assert _value(args, "--data-parallel-address") == "$(LWS_LEADER_ADDRESS)"
        assert _value(args, "--data-parallel-rpc-port") == "29550" and _value(args, "--tensor-parallel-size") == "1"
        assert "--enable-expert-parallel" in args and "--nnodes" not in args
    assert "--headless" in worker["args"] and _value(leader["args"], "--port") == "8080"
    assert _env(worker)["LWSGEN_DP_RANKS_PER_POD"] == "8" and "LWSGEN_DP_RANKS_PER_POD" not in _env(leader)
    assert _env(leader)["LWSGEN_LEADER_PORT"] == "29550"


def test_a_worker_appends_its_first_data_parallel_rank(tmp_path):
    fake(bin_dir(tmp_path), "getent", 'echo "127.0.0.1 $2"')
    fake(bin_dir(tmp_path), "vllm")
    env = {
        "LWS_LEADER_ADDRESS": "q-0.q.ns",
        "LWS_GROUP_SIZE": "3",
        "LWS_WORKER_INDEX": "2",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "5",
        "LWSGEN_DP_RANKS_PER_POD": "8",
    }
    proc, calls = run("await-leader.sh", tmp_path, env, ("vllm", "serve", "/m", "--headless"))
    assert proc.returncode == 0, proc.stdout
    assert calls[-1].endswith("vllm serve /m --headless --data-parallel-start-rank 16")


# VLLM_ALL2ALL_BACKEND's DeepEP modes from 0.9.1, the --all2all-backend flag from 0.11.1
@pytest.mark.parametrize(
    "tag, flag, env", [("v0.10.2", None, "deepep_low_latency"), ("v0.11.1", "deepep_low_latency", None)]
)
def test_vllm_all_to_all_by_version(render, tag, flag, env):
    profile = merged(VLLM, image=f"vllm/vllm-openai:{tag}", **{"parallelism.allToAll": "deepep-low-latency"})
    leader, worker = _containers(render(profile))
    for container in (leader, worker):
        args = container["args"]
        assert (_value(args, "--all2all-backend") if "--all2all-backend" in args else None) == flag
        assert _env(container).get("VLLM_ALL2ALL_BACKEND") == env


@pytest.mark.parametrize(
    "changes, path, text",
    [
        ({"image": "vllm/vllm-openai:v0.8.5"}, "parallelism.data", "needs vLLM 0.9.0 or newer"),
        ({"launch.mode": "ray"}, "launch.mode", "not a Ray cluster"),
        ({"parallelism.tensor": 3, "parallelism.data": 8}, "parallelism.tensor", "do not divide the pod's 8"),
        ({"parallelism.allToAll": "deepep-auto"}, "parallelism.allToAll", "no automatic DeepEP mode"),
        (
            {"image": "vllm/vllm-openai:v0.9.0", "parallelism.allToAll": "deepep-low-latency"},
            "parallelism.allToAll",
            "needs vLLM 0.9.1 or newer",
        ),
        (
            {"parallelism.expert": False, "parallelism.allToAll": "deepep-low-latency"},
            "parallelism.allToAll",
            "set parallelism.expert",
        ),
    ],
)
def test_vllm_layouts_it_cannot_run_are_refused_at_their_field(said, changes, path, text):
    errors, _ = said(merged(VLLM, **changes))
    assert any(e.startswith(path + ": ") and text in e for e in errors), errors


@pytest.mark.parametrize(
    "tag, attention", [("v0.5.21", ["--enable-dp-attention", "--dp-size", "2"]), ("v0.5.22", ["--attn-dp-size", "2"])]
)
def test_sglang_data_parallel_attention_by_version(render, tag, attention):
    profile = merged(SGLANG, image=f"lmsysorg/sglang:{tag}", parallelism={"data": 2, "tensor": 8, "expert": True})
    leader, _ = _containers(render(profile))
    args = leader["args"]
    assert _value(args, "--tp-size") == "16" and _value(args, "--ep-size") == "16"  # DP attention divides tp
    start = args.index(attention[0])
    assert args[start : start + len(attention)] == attention


@pytest.mark.parametrize(
    "tag, backend", [("v0.4.10.post1", ["--enable-deepep-moe"]), ("v0.4.10.post2", ["--moe-a2a-backend", "deepep"])]
)
def test_sglang_deepep_by_version(render, tag, backend):
    profile = merged(SGLANG, image=f"lmsysorg/sglang:{tag}", **{"parallelism.allToAll": "deepep-low-latency"})
    args = _containers(render(profile))[0]["args"]
    start = args.index(backend[0])
    assert args[start : start + len(backend) + 2] == [*backend, "--deepep-mode", "low_latency"]


# The other nodes' placeholder server serves their schedulers' metrics from 0.4.10
@pytest.mark.parametrize("tag, every_pod", [("v0.4.9", False), ("v0.4.10", True), ("v0.5.23", True)])
def test_sglang_data_parallel_metrics_come_from_every_pod(render, tag, every_pod):
    rendered = render(merged(SGLANG, image=f"lmsysorg/sglang:{tag}"))
    objects = objects_of(rendered)
    selector = objects["podmonitor.yaml"]["spec"]["selector"]["matchLabels"]
    assert ("leaderworkerset.sigs.k8s.io/worker-index" not in selector) is every_pod
    _, worker = _containers(rendered)
    assert ("--enable-metrics" in worker["args"]) is every_pod
    assert ("http" in [p["name"] for p in worker.get("ports", [])]) is every_pod
    rules = [r["expr"] for g in objects["prometheusrule.yaml"]["spec"]["groups"] for r in g["rules"]]
    assert any("label_replace(sglang:num_queue_reqs{" in e and '"q-$1"' in e for e in rules) is every_pod


@pytest.mark.parametrize(
    "runtime, image",
    [("triton-trtllm", "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"), ("llamacpp", "r/llama.cpp:b10470")],
)
@pytest.mark.parametrize("field, value", [("data", 2), ("expert", True)])
def test_other_runtimes_refuse_data_and_expert_naming_who_can(said, runtime, image, field, value):
    profile = merged(VLLM, runtime=runtime, image=image, parallelism={field: value, "tensor": 8})
    errors, _ = said(profile)
    assert any(e.startswith(f"parallelism.{field}: ") and "for sglang, vllm, not " + runtime in e for e in errors)


def test_secondary_networks_become_the_multus_annotation(render):
    rendered = render(merged(VLLM, **{"node.networks": ["rdma-net-a", "infra/rdma-net-b@ib1"]}))
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    for side in ("leaderTemplate", "workerTemplate"):
        annotations = lwt[side]["metadata"]["annotations"]
        assert annotations["k8s.v1.cni.cncf.io/networks"] == "rdma-net-a,infra/rdma-net-b@ib1"


def test_host_access_only_when_the_profile_allows_it_and_said_each_time(render, said):
    spec = lws_of(render(VLLM))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert "hostNetwork" not in spec and "hostIPC" not in spec
    assert spec["containers"][0]["securityContext"]["privileged"] is False
    allowed = merged(VLLM, security={"allowHostNetwork": True, "allowHostIPC": True, "allowPrivileged": True})
    spec = lws_of(render(allowed))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet" and spec["hostIPC"] is True
    security = spec["containers"][0]["securityContext"]
    assert security["privileged"] is True and security["allowPrivilegeEscalation"] is True
    _, warnings = said(allowed)
    assert {w.split(":")[0] for w in warnings} >= {
        "security.allowHostNetwork",
        "security.allowHostIPC",
        "security.allowPrivileged",
    }
    assert any("the NetworkPolicy no longer isolates them" in w for w in warnings)


def test_a_data_degree_that_does_not_fill_whole_nodes_suggests_data_degrees_that_do(said):
    errors, _ = said(merged(VLLM, **{"parallelism.data": 12}))
    [error] = [e for e in errors if "not a multiple of node.gpus" in e]
    assert error.startswith("parallelism.data: world size 12 (data 12 x tensor 1 x pipeline 1)")
    assert "data 8 (1 node of 8 GPUs); data 16 (2 nodes of 8 GPUs)" in error


def test_deepep_across_nodes_without_rdma_is_said(said):
    deepep = merged(VLLM, **{"parallelism.allToAll": "deepep-low-latency"})
    assert any(w.startswith("parallelism.allToAll: DeepEP moves") for w in said(deepep)[1])
    with_rdma = merged(deepep, **{"node.rdmaResource": {"rdma/ib": 8}})
    assert not any(w.startswith("parallelism.allToAll") for w in said(with_rdma)[1])


def test_the_fit_check_spreads_experts_over_every_gpu_with_or_without_expert_parallelism(said):
    profile = merged(VLLM, **{"model.family": "qwen3-235b-a22b", "node.gpuProduct": "NVIDIA-H100-80GB-HBM3"})
    for expert in (True, False):
        _, warnings = said(merged(profile, **{"parallelism.expert": expert}))
        assert not any("more than the" in w for w in warnings), warnings
    _, small = said(
        merged(profile, parallelism={"data": 8, "tensor": 1}, **{"node.gpus": 8, "node.gpuProduct": "NVIDIA-L4"})
    )
    [warning] = [w for w in small if "more than the" in w]
    assert "with data 8 x tensor 1 x pipeline 1" in warning


def test_explain_shows_the_data_parallel_launch_and_layout(write_profile, capsys):
    from lwsgen.cli import main

    old = merged(VLLM, image="vllm/vllm-openai:v0.10.1.1")
    assert main(["explain", str(write_profile(old))]) == 0
    out = capsys.readouterr().out
    assert "├─ engine: vLLM 0.10.1.1 (from the image tag), launch data-parallel (head and --headless engines)\n" in out
    assert "├─ parallelism: data 16 x tensor 1 x pipeline 1, experts over every GPU of the group\n" in out
