"""sglang: the same launch on every pod, dist-init at the leader, metrics flag when monitored."""

import pytest

import fastyaml
from conftest import PROFILES, SHARED, lws_of, merged
from lwsgen.pipeline import render_profile
from runtimes.scripts import bin_dir, fake, run

SGLANG = {
    "name": "ds",
    "runtime": "sglang",
    "image": "lmsysorg/sglang:v0.5.23",
    "model": {"path": "deepseek-ai/DeepSeek-R1"},
    "parallelism": {"tensor": 16},
    "node": {"gpus": 8},
    "monitoring": {"enabled": False},
}


def _args(rendered):
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return (
        lwt["leaderTemplate"]["spec"]["containers"][0]["args"],
        lwt["workerTemplate"]["spec"]["containers"][0]["args"],
    )


def _value(args, flag):
    return args[args.index(flag) + 1]


def test_every_pod_runs_the_same_launch_and_the_leader_adds_host_and_port(render):
    leader, worker = _args(render(SGLANG))
    assert leader[: len(worker)] == worker
    assert leader[len(worker) :] == ["--host", "0.0.0.0", "--port", "30000"]
    assert _value(worker, "--tp-size") == "16" and "--pp-size" not in worker
    assert _value(worker, "--dist-init-addr") == "$(LWS_LEADER_ADDRESS):20000"
    assert _value(worker, "--nnodes") == "$(LWS_GROUP_SIZE)" and _value(worker, "--node-rank") == "$(LWS_WORKER_INDEX)"


def test_pipeline_goes_to_pp_size_and_tensor_to_tp(render):
    leader, _ = _args(render(merged(SGLANG, parallelism={"tensor": 8, "pipeline": 2})))
    assert _value(leader, "--tp-size") == "8" and _value(leader, "--pp-size") == "2"


# --pp-size from v0.4.6.post2 (server_args.py; absent in v0.4.6.post1): before, at and after.
def test_pipeline_on_an_sglang_without_pp_size_names_the_first_version_that_has_it(said):
    errors, _ = said(
        merged(SGLANG, image="lmsysorg/sglang:v0.4.6.post1-cu124", parallelism={"tensor": 8, "pipeline": 2})
    )
    assert len(errors) == 1 and errors[0].startswith(
        "parallelism.pipeline: parallelism.pipeline 2 needs SGLang 0.4.6.post2"
    )
    assert "this profile runs 0.4.6.post1 (from the image tag)" in errors[0]
    for image in ("lmsysorg/sglang:v0.4.6.post2-cu124", "lmsysorg/sglang:v0.4.7-cu124"):
        assert said(merged(SGLANG, image=image, parallelism={"tensor": 8, "pipeline": 2}))[0] == []


def test_runtime_version_lifts_the_gate_for_a_custom_tag(said):
    profile = merged(SGLANG, image="registry.example.com/sglang:prod", parallelism={"tensor": 8, "pipeline": 2})
    assert said(merged(profile, runtimeVersion="0.4.6.post1"))[0] != []
    errors, warnings = said(merged(profile, runtimeVersion="0.5.23"))
    assert errors == [] and not any("assumed" in w for w in warnings)


def _probes(rendered):
    leader = lws_of(rendered)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    return leader["startupProbe"], leader["readinessProbe"]


# /health generates a token from v0.4.10.post2 (up to 20 s), /ready from v0.5.20: (tag, path, timeout).
PROBE_MATRIX = [
    ("v0.4.10.post1-cu124", "/health", 5),
    ("v0.4.10.post2-cu124", "/health", 25),
    ("v0.5.19", "/health", 25),
    ("v0.5.20", "/ready", 5),
    ("v0.5.23", "/ready", 5),
]


@pytest.mark.parametrize("tag, path, timeout", PROBE_MATRIX)
def test_readiness_follows_the_health_endpoint_of_the_version(render, tag, path, timeout):
    startup, readiness = _probes(render(merged(SGLANG, image=f"lmsysorg/sglang:{tag}")))
    for probe in (startup, readiness):
        assert probe["httpGet"]["path"] == path and probe["timeoutSeconds"] == timeout
        assert probe["periodSeconds"] >= probe["timeoutSeconds"]
    # the startup budget still covers rendezvous (900 s) + load (1800 s) at the longer period
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 2700


def test_the_leader_enables_metrics_only_when_monitoring(render):
    leader, worker = _args(render(merged(SGLANG, monitoring={"enabled": True})))
    assert "--enable-metrics" in leader and "--enable-metrics" not in worker
    assert "--enable-metrics" not in _args(render(SGLANG))[0]


def test_same_flags_as_the_upstream_lws_sglang_example():
    upstream = next(fastyaml.load_all((SHARED / "reference" / "lws_docs_examples_sglang_lws.yaml").read_text()))
    up_lwt = upstream["spec"]["leaderWorkerTemplate"]
    up_leader = up_lwt["leaderTemplate"]["spec"]["containers"][0]["command"]
    up_worker = up_lwt["workerTemplate"]["spec"]["containers"][0]["command"]
    leader, worker = _args(render_profile(PROFILES / "sglang-deepseek-r1.yaml"))
    for ours, theirs in ((leader, up_leader), (worker, up_worker)):
        # upstream's --tp is argparse's prefix of --tp-size (server_args.py has no --tp of its own)
        flags = [{"--tp": "--tp-size"}.get(a, a) for a in theirs if a.startswith("--")]
        assert [f for f in flags if f not in ours] == []
        for flag in ("--dist-init-addr", "--nnodes", "--node-rank"):
            assert _value(ours, flag) == _value(theirs, flag)
    up_env = {e["name"] for e in up_lwt["leaderTemplate"]["spec"]["containers"][0]["env"]}
    rendered = render_profile(PROFILES / "sglang-deepseek-r1.yaml")
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    # upstream's pods download the model with HF_TOKEN; ours read the claim the download Job filled
    assert up_env - {"HF_TOKEN"} <= {e["name"] for e in lwt["leaderTemplate"]["spec"]["containers"][0]["env"]}
    job = fastyaml.load(rendered.files["model-download.yaml"])
    assert "HF_TOKEN" in {e["name"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_await_leader_retries_until_the_leader_resolves_then_execs(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", '[ "$(grep -c getent "$CALLS")" -ge 3 ]')
    fake(bins, "python3")
    env = {"LWS_LEADER_ADDRESS": "ds-0.ds.default", "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}
    env |= {"LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}
    proc, calls = run("await-leader.sh", tmp_path, env, ("python3", "-m", "sglang.launch_server", "--tp", "16"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("lwsgen worker: waiting: the leader address ds-0.ds.default does not resolve yet") == 2
    assert calls[-1].endswith("python3 -m sglang.launch_server --tp 16")


def test_await_leader_gives_up_after_its_deadline(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", "exit 2")
    fake(bins, "python3")
    env = {"LWS_LEADER_ADDRESS": "x", "LWSGEN_RENDEZVOUS_TIMEOUT": "1", "LWSGEN_POLL_SECONDS": "0.2"}
    env |= {"LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "1"}
    proc, calls = run("await-leader.sh", tmp_path, env, ("python3",))
    assert proc.returncode == 1 and "gave up after 1s: the leader address x does not resolve yet" in proc.stdout
    assert not any("python3" in c for c in calls)


def test_the_leader_waits_for_its_workers_names_before_the_engine(tmp_path):
    bins = bin_dir(tmp_path)
    fake(bins, "getent", '[ "$2" != ds-0-2.ds.default ] || [ "$(grep -c ds-0-2 "$CALLS")" -ge 3 ]')
    fake(bins, "python3")
    env = {"LWS_LEADER_ADDRESS": "ds-0.ds.default", "LWSGEN_RENDEZVOUS_TIMEOUT": "30"}
    env |= {"LWS_GROUP_SIZE": "3", "LWS_WORKER_INDEX": "0"}
    proc, calls = run("await-leader.sh", tmp_path, env, ("python3", "-m", "sglang.launch_server"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lwsgen leader: waiting: 1 of 2 workers do not resolve yet (ds-0-2.ds.default)" in proc.stdout
    assert calls[-1].endswith("python3 -m sglang.launch_server")
