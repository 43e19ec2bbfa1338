"""vllm: Ray head on the leader, workers join with retries; parallelism flags from the profile."""

import socket

from conftest import SHARED, lws_of, merged
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
    assert args[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert args[args.index("--tensor-parallel-size") + 1] == "8"
    assert args[args.index("--pipeline-parallel-size") + 1] == "2"
    assert args[args.index("--distributed-executor-backend") + 1] == "ray"
    assert args[args.index("--model") + 1] == "meta-llama/Llama-3.1-405B-Instruct"
    assert args[args.index("--served-model-name") + 1] == "vllm"
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
        "kustomizeconfig.yaml",
        "leaderworkerset.yaml",
        "networkpolicy.yaml",
        "service.yaml",
    ]
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    assert lwt["leaderTemplate"]["spec"]["automountServiceAccountToken"] is False


def test_flags_match_the_upstream_lws_vllm_example():
    """Same engine flags as kubernetes-sigs/lws docs/examples/vllm (spelled with dashes)."""
    import yaml

    upstream = next(yaml.safe_load_all((SHARED / "reference" / "lws_docs_examples_vllm_GPU_lws.yaml").read_text()))
    command = upstream["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    for flag in ("--tensor-parallel-size", "--pipeline_parallel_size", "--port", "--model"):
        assert flag in command
    assert "vllm.entrypoints.openai.api_server" in command and "$(LWS_LEADER_ADDRESS)" in str(upstream)


RAY_ENV = {"LWS_GROUP_SIZE": "3", "LWSGEN_RAY_PORT": "6379", "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}


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
