"""Bounded, literal, confined input and fenced output (issue: safe under hostile files): each refusal
is one positioned line, exit 1, nothing written."""

import os
import signal
import subprocess
import sys

import pytest

import fastyaml
from conftest import REPO, lws_of, merged, objects_of
from lwsgen.cli import main
from runtimes.test_all_runtimes import profile_for


def _fails(path, capsys, *expected):
    out = path.parent / "out"
    assert main(["render", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err and not out.exists()
    for text in expected:
        assert text in err, err
    return err


def test_an_alias_bomb_is_refused_quickly(write_profile, capsys):
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    _fails(write_profile("\n".join(lines) + "\n"), capsys, "expands to more than 50000 YAML nodes")


def test_a_named_pipe_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "profile.yaml"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", str(fifo)], capture_output=True, text=True, timeout=20, cwd=REPO
    )
    assert proc.returncode == 1 and "is a named pipe, not a file" in proc.stderr


def test_a_directory_read_as_a_profile_is_refused_by_name(tmp_path):
    """The reader every profile and base goes through says what is there instead of a file, as for a
    pipe; a directory made it raise IsADirectoryError (and leak the descriptor)."""
    from lwsgen.load.source import read_bytes
    from lwsgen.problems import ProblemsError

    opened = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ProblemsError) as err:
        read_bytes(tmp_path, "base")
    assert "is a directory, not a file" in str(err.value.problems[0])
    assert len(os.listdir("/proc/self/fd")) == opened


def test_a_profile_over_one_mebibyte_is_refused(write_profile, capsys):
    _fails(write_profile("name: x\n" + "# padding\n" * 110_000), capsys, "a profile is at most 1048576 bytes")


@pytest.mark.parametrize(
    "value, message",
    [
        ("8.0", "must be an integer, not 8.0"),
        ("1" + "0" * 100, "101-digit number is out of range"),
        ("9" * 5000, "a value YAML cannot read as a number"),
    ],
)
def test_numbers_that_are_not_whole_or_not_int64_are_refused(write_profile, capsys, value, message):
    _fails(
        write_profile(f"name: x\nruntime: vllm\nimage: a:1\nmodel: {{path: m}}\nnode: {{gpus: {value}}}\n"),
        capsys,
        message,
    )


@pytest.mark.parametrize("char", ["\\x1b", "\\x7f", "\\x85", "\\ufffe", "\\r"])
def test_control_characters_in_strings_are_refused(write_profile, minimal, capsys, char):
    text = fastyaml.dump(minimal) + f'annotations: {{note: "a{char}b"}}\n'
    _fails(write_profile(text), capsys, "annotations.note: contains the control character U+")


def test_label_and_annotation_limits_are_kubernetes_own(write_profile, minimal, capsys):
    _fails(
        write_profile(merged(minimal, labels={"team": "y" * 64, "bad key!": "v"})),
        capsys,
        "labels.team: must be at most 63 characters long",
        """labels["bad key!"]: key 'bad key!' is not""",
    )
    _fails(write_profile(merged(minimal, labels={"x" * 64: "v"})), capsys, "its name part is 64 characters; at most 63")
    _fails(
        write_profile(merged(minimal, annotations={"a" * 254 + "/b": "c"})),
        capsys,
        "its prefix is 254 characters; at most 253",
    )
    _fails(
        write_profile(merged(minimal, annotations={"big": "x" * (256 * 1024)})),
        capsys,
        "annotations of one object total 262147 bytes; at most 262144",
    )


def test_extends_is_bounded_and_confined_to_the_repository(write_profile, minimal, tmp_path, capsys):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_text(fastyaml.dump(minimal))
    _fails(write_profile(f"extends: {outside}\nname: x\n", "abs.yaml"), capsys, "absolute paths and paths that leave")
    _fails(
        write_profile(f"extends: ../{outside.name}\nname: x\n", "up.yaml"), capsys, "paths that leave them are refused"
    )
    write_profile(minimal, "chain/p0.yaml")
    for i in range(1, 40):
        write_profile(f"extends: p{i - 1}.yaml\n", f"chain/p{i}.yaml")
    _fails(tmp_path / "chain" / "p39.yaml", capsys, "more than 32 bases in one extends chain")


def test_duplicate_names_are_reported_at_the_name(write_profile, minimal, tmp_path, capsys):
    a, b = write_profile(minimal, "a.yaml"), write_profile(merged(minimal, namespace="other"), "b.yaml")
    assert main(["render", str(a), str(b), "-o", str(tmp_path / "out")]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{b}:1:7: name: 'demo' is also the name of {a}")


def test_the_leader_may_exec_only_into_its_own_workers(render):
    rendered = render(
        profile_for("triton-trtllm", autoscaling={"enabled": True, "maxReplicas": 3}, monitoring={"enabled": True})
    )
    rules = fastyaml.load(rendered.files["role.yaml"])["rules"]
    [exec_rule] = [r for r in rules if r["resources"] == ["pods/exec"]]
    assert exec_rule["resourceNames"] == ["demo-0-1", "demo-1-1", "demo-2-1"]  # every group up to maxReplicas
    single = render(profile_for("triton-trtllm", **{"parallelism.tensor": 8}))  # one pod: nothing to exec into
    assert [r["resources"] for r in fastyaml.load(single.files["role.yaml"])["rules"]] == [["pods"]]


@pytest.mark.parametrize("launcher", ["mpijob", "job"])
def test_nccl_test_pods_are_fenced_by_their_own_network_policy(render, launcher):
    test = {"enabled": True, "launcher": launcher, "image": "nvcr.io/nvidia/pytorch:24.07-py3"}
    docs = {d["kind"]: d for d in fastyaml.load_all(render(profile_for("vllm", ncclTest=test)).files["nccl-test.yaml"])}
    policy = docs["NetworkPolicy"]["spec"]
    pods = docs["MPIJob"]["spec"]["mpiReplicaSpecs"]["Worker"] if launcher == "mpijob" else docs["Job"]["spec"]
    labels = pods["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in policy["podSelector"]["matchLabels"].items())
    assert policy["ingress"] == [{"from": [{"podSelector": policy["podSelector"]}]}]


def test_an_open_load_balancer_is_a_warning_and_strict_refuses_it(write_profile, minimal, tmp_path, capsys):
    path = write_profile(merged(minimal, service={"type": "LoadBalancer"}))
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0
    assert "service.type: warning: a LoadBalancer with no service.loadBalancerSourceRanges" in capsys.readouterr().err
    assert main(["render", str(path), "-o", str(tmp_path / "strict"), "--strict"]) == 1
    ranged = write_profile(
        merged(minimal, service={"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]})
    )
    assert main(["render", str(ranged), "-o", str(tmp_path / "ranged")]) == 0
    assert "warning" not in capsys.readouterr().err


KEY = {"name": "serving-key", "key": "token"}


@pytest.mark.parametrize(
    "runtime, variable", [("vllm", "VLLM_API_KEY"), ("aphrodite", "APHRODITE_API_KEY"), ("llamacpp", "LLAMA_API_KEY")]
)
def test_api_keys_come_from_the_secret_in_the_engines_own_variable(render, runtime, variable):
    profile = profile_for(
        runtime,
        service={"type": "ClusterIP", "apiKeySecret": KEY},
        **({"parallelism.tensor": 16} if runtime != "llamacpp" else {}),
    )
    lwt = lws_of(render(profile))["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    assert {"name": variable, "valueFrom": {"secretKeyRef": KEY}} in leader["env"]
    assert not any("serving-key" in arg for arg in leader.get("args", []))
    assert all(e["name"] != variable for e in lwt["workerTemplate"]["spec"]["containers"][0].get("env", []))


def test_llamacpp_metrics_are_scraped_with_the_key(render):
    profile = profile_for("llamacpp", service={"type": "ClusterIP", "apiKeySecret": KEY}, monitoring={"enabled": True})
    [endpoint] = objects_of(render(profile))["podmonitor.yaml"]["spec"]["podMetricsEndpoints"]
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": KEY}


def test_sglang_gets_its_key_as_a_flag_at_exec_time_never_logged(render, tmp_path):
    from runtimes.scripts import bin_dir, fake, run

    profile = profile_for("sglang", service={"type": "ClusterIP", "apiKeySecret": KEY})
    leader = lws_of(render(profile))["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    env = {e["name"]: e for e in leader["env"]}
    assert (
        env["LWSGEN_API_KEY"]["valueFrom"] == {"secretKeyRef": KEY}
        and env["LWSGEN_API_KEY_FLAG"]["value"] == "--api-key"
    )
    bins = bin_dir(tmp_path)
    fake(bins, "getent", 'echo "127.0.0.1 $2"')
    fake(bins, "python3")
    env = {
        "LWS_LEADER_ADDRESS": "demo-0.demo.default",
        "LWS_GROUP_SIZE": "2",
        "LWS_WORKER_INDEX": "0",
        "LWSGEN_API_KEY": "s3cr3t",
        "LWSGEN_API_KEY_FLAG": "--api-key",
        "LWSGEN_RENDEZVOUS_TIMEOUT": "5",
    }
    proc, calls = run("await-leader.sh", tmp_path, env, ("python3", "-m", "sglang.launch_server"))
    assert proc.returncode == 0, proc.stderr
    assert calls[-1].endswith("python3 -m sglang.launch_server --api-key s3cr3t")
    assert "s3cr3t" not in proc.stdout + proc.stderr


def test_runtimes_without_an_api_key_refuse_one(write_profile, capsys):
    path = write_profile(profile_for("triton-trtllm", service={"type": "ClusterIP", "apiKeySecret": KEY}))
    _fails(
        path, capsys, "service.apiKeySecret: triton-trtllm has no API key option", "aphrodite, llamacpp, sglang, vllm"
    )


def test_sigint_is_exit_130_not_a_traceback(write_profile, minimal, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwsgen", "render", str(write_profile(minimal)), "-o", str(tmp_path / "out")],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
