"""vllm: native multi-node launch (--nnodes, --headless workers) from 0.11.1, a Ray cluster before
it or when asked; parallelism flags from the profile; metric names by version."""

import socket

import pytest

import fastyaml
from conftest import SHARED, lws_of, merged, objects_of
from runtimes.scripts import bin_dir, env_of, fake, run

VLLM = {
    "name": "vllm",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.8.5",
    "model": {
        "path": "meta-llama/Llama-3.1-405B-Instruct",
        "tokenSecret": {"name": "hf-token", "key": "token"},
        "extraArgs": ["--max-model-len", "8192", "--chat-template", "{{ messages }} $(HOME): x"],
    },
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8},
    "monitoring": {"enabled": False},
}


def _containers(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"]["spec"]["containers"][0], lwt["workerTemplate"]["spec"]["containers"][0]


def test_leader_serves_with_parallelism_from_the_profile_and_extra_args_verbatim(render):
    leader, _ = _containers(render(VLLM))
    assert leader["command"] == ["/bin/bash", "/lwsgen/scripts/ray-leader.sh"]
    args = leader["args"]
    # vllm serve <model> (the console script since before 0.8.5, pyproject.toml@v0.8.5 line 41)
    assert args[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-405B-Instruct"]
    assert args[args.index("--tensor-parallel-size") + 1] == "8"
    assert args[args.index("--pipeline-parallel-size") + 1] == "2"
    assert args[args.index("--distributed-executor-backend") + 1] == "ray"
    assert "--nnodes" not in args and "--headless" not in args
    # served as vllm serve would serve it by default: under the model as given, the Hub id
    assert args[args.index("--served-model-name") + 1] == "meta-llama/Llama-3.1-405B-Instruct"
    assert args[-4:] == ["--max-model-len", "8192", "--chat-template", "{{ messages }} $$(HOME): x"]  # kept literal


def test_parallelism_changes_flags_group_size_and_gpu_requests_together(render):
    rendered = render(merged(VLLM, **{"parallelism.tensor": 4, "parallelism.pipeline": 4, "node.gpus": 4}))
    leader, worker = _containers(rendered)
    assert leader["args"][leader["args"].index("--tensor-parallel-size") + 1] == "4"
    assert leader["args"][leader["args"].index("--pipeline-parallel-size") + 1] == "4"
    assert lws_of(rendered)["spec"]["leaderWorkerTemplate"]["size"] == 4
    for container in (leader, worker):
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_hf_token_comes_from_the_secret_never_inline(render):
    for container in _containers(render(VLLM)):
        [token] = [e for e in container["env"] if e["name"] == "HF_TOKEN"]
        assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}


def test_workers_run_the_ray_join_script_and_only_the_leader_has_probes(render):
    leader, worker = _containers(render(VLLM))
    assert worker["command"] == ["/bin/bash", "/lwsgen/scripts/ray-worker.sh"]
    assert env_of(worker)["LWSGEN_RAY_PORT"] == "6379"
    assert leader["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "startupProbe" not in worker and "readinessProbe" not in worker


def test_no_rbac_and_no_service_account_token_for_ray(render):
    rendered = render(VLLM)
    assert sorted(rendered.files) == [
        "configmap.yaml",
        "kustomization.yaml",
        "kustomize-openapi.yaml",
        "kustomizeconfig.yaml",
        "leaderworkerset.yaml",
        "networkpolicy.yaml",
        "service.yaml",
    ]
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    assert lwt["leaderTemplate"]["spec"]["automountServiceAccountToken"] is False


def test_flags_match_the_upstream_lws_vllm_example():
    """Same engine flags as kubernetes-sigs/lws docs/examples/vllm (spelled with dashes)."""

    upstream = next(fastyaml.load_all((SHARED / "reference" / "lws_docs_examples_vllm_GPU_lws.yaml").read_text()))
    command = upstream["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    for flag in ("--tensor-parallel-size", "--pipeline_parallel_size", "--port", "--model"):
        assert flag in command
    assert "vllm.entrypoints.openai.api_server" in command and "$(LWS_LEADER_ADDRESS)" in str(upstream)


NATIVE = merged(VLLM, image="vllm/vllm-openai:v0.33.0")


def _value(args, flag):
    return args[args.index(flag) + 1]


def test_native_launch_every_pod_a_node_of_nnodes_and_the_workers_headless(render):
    leader, worker = _containers(render(NATIVE))
    for container in (leader, worker):
        assert container["command"] == ["/bin/bash", "/lwsgen/scripts/await-leader.sh"]
        args = container["args"]
        assert args[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-405B-Instruct"]
        assert _value(args, "--nnodes") == "$(LWS_GROUP_SIZE)" and _value(args, "--node-rank") == "$(LWS_WORKER_INDEX)"
        assert _value(args, "--master-addr") == "$(LWS_LEADER_ADDRESS)" and _value(args, "--master-port") == "29501"
        assert _value(args, "--tensor-parallel-size") == "8" and _value(args, "--pipeline-parallel-size") == "2"
        assert "--distributed-executor-backend" not in args  # vLLM refuses ray with nnodes > 1
        assert args[-4:] == ["--max-model-len", "8192", "--chat-template", "{{ messages }} $$(HOME): x"]
        [own_ip] = [e for e in container["env"] if e["name"] == "VLLM_HOST_IP"]
        assert own_ip["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert "--headless" in worker["args"] and "--headless" not in leader["args"]
    assert _value(leader["args"], "--port") == "8080" and "--port" not in worker["args"]
    assert env_of(leader)["LWSGEN_LEADER_PORT"] == "29501" == str(leader["ports"][1]["containerPort"])
    assert env_of(worker)["LWSGEN_BEACON_PORT"] == "29600" == str(worker["ports"][0]["containerPort"])
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}


# (image tag, launch.mode, expected launch): native from 0.11.1 (PR #23691), before, at and after.
MODES = [
    ("v0.11.0", None, "ray"),
    ("v0.11.1", None, "native"),
    ("v0.33.0", None, "native"),
    ("v0.33.0", "ray", "ray"),
    ("v0.11.1", "native", "native"),
]


@pytest.mark.parametrize("tag, mode, launch", MODES)
def test_launch_mode_defaults_by_version_and_follows_the_profile(render, tag, mode, launch):
    profile = merged(VLLM, image=f"vllm/vllm-openai:{tag}", **({"launch.mode": mode} if mode else {}))
    leader, worker = _containers(render(profile))
    script = {"native": "await-leader.sh", "ray": "ray-leader.sh"}[launch]
    assert leader["command"][-1].endswith(script)
    assert ("--nnodes" in worker.get("args", [])) is (launch == "native")


def test_native_launch_on_a_vllm_without_it_names_the_first_version(said):
    errors, _ = said(merged(VLLM, image="vllm/vllm-openai:v0.11.0", **{"launch.mode": "native"}))
    [error] = errors
    assert error.startswith("launch.mode: launch.mode native needs vLLM 0.11.1 or newer")
    assert "PR #23691" in error and "this profile runs 0.11.0 (from the image tag)" in error


def test_launch_mode_on_a_runtime_without_a_choice_is_an_error(said):
    profile = {
        "name": "s",
        "runtime": "sglang",
        "image": "lmsysorg/sglang:v0.5.23",
        "model": {"path": "/models/m"},
        "node": {"gpus": 8},
        "launch": {"mode": "ray"},
    }
    [error] = said(profile)[0]
    assert (
        error
        == "launch.mode: sglang has one launch mode and no choice of it; launch.mode ray applies to: aphrodite, vllm"
    )


# The KV-cache gauge: vllm:kv_cache_usage_perc from 0.9.2 (PR #18354), vllm:gpu_cache_usage_perc before.
@pytest.mark.parametrize(
    "tag, gauge",
    [("v0.9.1", "gpu_cache_usage_perc"), ("v0.9.2", "kv_cache_usage_perc"), ("v0.33.0", "kv_cache_usage_perc")],
)
def test_the_kv_cache_rule_reads_the_gauge_the_version_exports(render, tag, gauge):
    rendered = render(merged(VLLM, image=f"vllm/vllm-openai:{tag}", **{"monitoring.enabled": True}))
    exprs = " ".join(
        r["expr"] for g in objects_of(rendered)["prometheusrule.yaml"]["spec"]["groups"] for r in g["rules"]
    )
    other = {"gpu_cache_usage_perc": "kv_cache_usage_perc", "kv_cache_usage_perc": "gpu_cache_usage_perc"}[gauge]
    assert f"vllm:{gauge}{{" in exprs and f"vllm:{other}" not in exprs


@pytest.mark.parametrize(
    "image, said_text",
    [
        (
            "vllm/vllm-openai@sha256:" + "a" * 64,
            "the image reference (a digest, no tag) does not say which vLLM version",
        ),
        ("registry.example.com/vllm:prod", "the image tag 'prod' does not say which vLLM version"),
    ],
)
def test_a_version_the_tag_does_not_tell_is_assumed_out_loud(said, image, said_text):
    errors, warnings = said(merged(VLLM, image=image))
    assert errors == []
    [warning] = [w for w in warnings if "does not say" in w]
    assert warning.startswith("image: " + said_text) and "assumed 0.33.0" in warning and "set runtimeVersion" in warning


def test_a_version_newer_than_the_table_is_said(said):
    [warning] = [w for w in said(merged(VLLM, image="vllm/vllm-openai:v0.40.0"))[1] if "newer" in w]
    assert "vLLM 0.40.0 is newer than lwsgen's version table (checked up to 0.33.0)" in warning


def test_strict_makes_an_assumed_version_an_error(tmp_path, write_profile):
    from lwsgen.cli import main

    path = write_profile(merged(VLLM, image="registry.example.com/vllm:prod"))
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict"]) == 1
    assert not (tmp_path / "out").exists()
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0


RAY_ENV = {"LWS_GROUP_SIZE": "3", "LWSGEN_RAY_PORT": "6379", "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}


@pytest.mark.parametrize("script", ["ray-leader.sh", "ray-worker.sh"])
def test_a_ray_launch_without_ray_in_the_image_fails_at_once_saying_so(tmp_path, script):
    bin_dir(tmp_path)
    env = {**RAY_ENV, "LWS_LEADER_ADDRESS": "v-0.v.ns"}
    proc, calls = run(script, tmp_path, env, ("serve",), timeout=5)
    assert proc.returncode == 1 and calls == []
    assert "this image has no Ray (no 'ray' on PATH)" in proc.stdout and "launch.mode native" in proc.stdout


def test_ray_leader_waits_for_every_node_then_execs_the_serve_command(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "ray")
    # Ray reports 1, 2, then 3 alive nodes.
    fake(bins, "python3", 'echo "$(grep -c python3 "$CALLS")"')
    fake(bins, "serve")
    proc, calls = run("ray-leader.sh", tmp_path, RAY_ENV, ("serve", "--tensor-parallel-size", "8", "two words"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls[0].endswith("ray start --head --port=6379 --disable-usage-stats")
    assert "waiting: 2 of 3 Ray nodes joined" in proc.stdout
    [served] = [c for c in calls if c.split()[0].endswith("/serve")]
    assert served.endswith("serve --tensor-parallel-size 8 two words")


def test_ray_leader_ends_the_group_when_the_gcs_stops_answering(tmp_path):
    """A GCS that does not answer cannot say the group is whole: each such poll fails (it used to
    count as intact and reset the streak, so a group with a dead node kept serving)."""
    bins = bin_dir(tmp_path)
    fake(bins, "ray")
    # the GCS answers 3 alive nodes until the engine runs, then never answers (the check's bound ends it)
    fake(bins, "python3", '[ -e "$CALLS.serving" ] && exec sleep 30; echo 3')
    fake(bins, "serve", 'touch "$CALLS.serving"; exec sleep 60')
    env = {**RAY_ENV, "LWSGEN_POLL_SECONDS": "0.2", "LWSGEN_CHECK_SECONDS": "1", "LWSGEN_STOP_SECONDS": "2"}
    proc, _ = run("ray-leader.sh", tmp_path, env, ("serve",), timeout=30)
    assert proc.returncode == 1, proc.stdout
    assert "watch: the Ray GCS did not answer within 1s (3 of 3)" in proc.stdout
    assert "the group lost a member (the Ray GCS did not answer within 1s)" in proc.stdout


def test_ray_leader_gives_up_after_its_deadline(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "ray")
    fake(bins, "python3", "echo 1")
    fake(bins, "serve")
    proc, calls = run(
        "ray-leader.sh",
        tmp_path,
        {**RAY_ENV, "LWSGEN_RENDEZVOUS_TIMEOUT": "1", "LWSGEN_POLL_SECONDS": "0.2"},
        ("serve",),
    )
    assert proc.returncode == 1
    assert "gave up after 1s: 1 of 3 Ray nodes joined" in proc.stdout
    assert not any(c.endswith("/serve") for c in calls)


def test_ray_worker_retries_an_unresolvable_leader_then_joins_and_blocks(tmp_path):
    bins = bin_dir(tmp_path)
    # DNS fails twice (leader not yet resolvable), then resolves to this machine, where the Ray head listens.
    fake(bins, "getent", '[ "$(grep -c getent "$CALLS")" -ge 3 ] && echo "127.0.0.1 $2"')
    fake(bins, "ray")
    with socket.create_server(("127.0.0.1", 0)) as head:
        port = str(head.getsockname()[1])
        env = {"LWS_LEADER_ADDRESS": "vllm-0.vllm.default", "LWSGEN_RAY_PORT": port, "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}
        proc, calls = run("ray-worker.sh", tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [c.split()[0].rsplit("/", 1)[1] for c in calls] == ["getent"] * 4 + ["ray", "ray"]
    assert "ray health-check --address vllm-0.vllm.default:" in calls[-2]
    assert calls[-1].endswith(f"ray start --address=vllm-0.vllm.default:{port} --block")
    assert proc.stdout.count("waiting: the leader address vllm-0.vllm.default does not resolve yet") == 2


def test_ray_worker_gives_up_after_its_deadline(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", "exit 2")
    fake(bins, "ray")
    env = {
        "LWS_LEADER_ADDRESS": "x",
        "LWSGEN_RAY_PORT": "6379",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "1",
        "LWSGEN_POLL_SECONDS": "0.2",
    }
    proc, calls = run("ray-worker.sh", tmp_path, env)
    assert proc.returncode == 1
    assert "gave up after 1s: the leader address x does not resolve yet" in proc.stdout
    assert not any("ray start" in c for c in calls)


def test_ray_worker_retries_a_join_that_fails_at_once_within_its_bound(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", 'echo "127.0.0.1 $2"')
    # The first `ray start` fails at once (the head went away between check and join); the second blocks.
    fake(bins, "ray", '[ "$1" != start ] || [ "$(grep -c "ray start" "$CALLS")" -ge 2 ] || exit 1')
    with socket.create_server(("127.0.0.1", 0)) as head:
        port = str(head.getsockname()[1])
        env = {"LWS_LEADER_ADDRESS": "v-0.v.ns", "LWSGEN_RAY_PORT": port, "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}
        proc, calls = run("ray-worker.sh", tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [c.split(maxsplit=2)[1] for c in calls if "/ray " in c] == ["health-check", "start", "stop", "start"]
    assert "waiting: ray start exited with status 1 after 0s; retrying" in proc.stdout


@pytest.mark.parametrize("runtime, given", [("vllm", "b6123"), ("aphrodite", "b0"), ("sglang", "b5")])
def test_a_runtime_version_the_engine_would_not_spell_is_an_error(said, runtime, given):
    from conftest import MINIMAL

    errors, _ = said(merged(MINIMAL, runtime=runtime, runtimeVersion=given, **{"parallelism.pipeline": 1}))
    assert any(e.startswith(f"runtimeVersion: '{given}' is not a ") for e in errors), errors
