"""Model delivery: the claim, the download Job and the pods' wait and local copy, rendered and checked;
the download script run for real (huggingface_hub) against a stand-in hub on loopback, through an
interruption and a wrong revision; the wait and copy scripts run with bash."""

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fastyaml
from conftest import REPO, merged
from lwsgen.check import budget
from lwsgen.pipeline import load_profile
from standin_hub.hub import Hub, Repo

REVISION = "be673f326cab4cd22ccfef76109faf68e41aa5f1"
SCRIPTS = REPO / "templates" / "scripts"


def _profile(**changes):
    base = {
        "name": "demo",
        "namespace": "inference",
        "runtime": "vllm",
        "image": "vllm/vllm-openai:v0.33.0",
        "model": {
            "source": {"repo": "meta-llama/Llama-3.1-405B-Instruct", "revision": REVISION},
            "family": "llama-3.1-405b",
            "tokenSecret": {"name": "hf-token", "key": "token"},
        },
        "parallelism": {"tensor": 8, "pipeline": 2},
        "node": {"gpus": 8},
        "service": {"type": "ClusterIP"},
        "storage": {
            "claimName": "models",
            "mountPath": "/models",
            "create": {"size": "2Ti", "storageClassName": "efs"},
        },
    }
    return merged(base, **changes)


def _llamacpp(**changes):
    """The download profile on llama.cpp: two one-GPU pods splitting the layers."""
    llamacpp = {
        "runtime": "llamacpp",
        "image": "registry.example.com/llama.cpp-rpc:b10470",
        "parallelism": {"tensor": 1, "pipeline": 2},
        "node": {"gpus": 1},
    }
    return _profile(**llamacpp, **changes)


def _docs(rendered, name):
    return [d for d in fastyaml.load_all(rendered.files[name]) if d]


def _pod(rendered, side="leaderTemplate"):
    [lws] = _docs(rendered, "leaderworkerset.yaml")
    return lws["spec"]["leaderWorkerTemplate"][side]["spec"]


def _env(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


SNAPSHOT = f"meta-llama/Llama-3.1-405B-Instruct/{REVISION}"


def test_the_claim_is_emitted_and_kept(render):
    [claim] = _docs(render(_profile()), "persistentvolumeclaim.yaml")
    assert claim["metadata"]["name"] == "models"
    assert claim["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Delete=false,Prune=false"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "efs",
        "resources": {"requests": {"storage": "2Ti"}},
    }


def test_one_job_downloads_the_pinned_revision_into_its_own_directory(render):
    rendered = render(_profile(**{"gitops.argocd.syncWaves": True}))
    [job] = _docs(rendered, "model-download.yaml")
    assert job["metadata"]["name"].startswith("demo-model-") and len(job["metadata"]["name"]) == len("demo-model-") + 8
    assert job["metadata"]["labels"]["lwsgen/model-revision"] == REVISION
    spec = job["spec"]
    assert spec["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onExitCodes": {"containerName": "download", "operator": "In", "values": [2]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},  # drains, preemption
    ]
    assert spec["backoffLimit"] == 6 and spec["activeDeadlineSeconds"] == budget.budget(_built(_profile())).download
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    env = _env(container)
    assert env["LWSGEN_TARGET"] == f"/models/{SNAPSHOT}" and env["LWSGEN_REVISION"] == REVISION
    assert json.loads(env["LWSGEN_ALLOW_PATTERNS"])[:2] == ["*.json", "*.safetensors"]
    assert env["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-token", "key": "token"}}
    assert env["HF_HUB_OFFLINE"] == "0" and container["securityContext"]["readOnlyRootFilesystem"] is True
    for side in ("leaderTemplate", "workerTemplate"):  # the serving pods read the claim: no token
        assert "HF_TOKEN" not in _env(_pod(rendered, side)["containers"][0])
    assert {"name": "model", "mountPath": "/models", "readOnly": False} in container["volumeMounts"]
    assert pod["restartPolicy"] == "Never" and "nodeSelector" not in pod and "tolerations" not in pod
    waves = {
        name: int(_docs(rendered, name)[0]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        for name in ("persistentvolumeclaim.yaml", "configmap.yaml", "model-download.yaml", "leaderworkerset.yaml")
    }
    assert waves["model-download.yaml"] < waves["leaderworkerset.yaml"]  # Argo CD waits for the Job to complete
    assert waves["persistentvolumeclaim.yaml"] <= waves["model-download.yaml"] >= waves["configmap.yaml"]
    assert "model-download.yaml" in fastyaml.load(rendered.files["kustomization.yaml"])["resources"]


def _job_name(rendered):
    return _docs(rendered, "model-download.yaml")[0]["metadata"]["name"]


def test_a_new_revision_or_pod_is_a_new_job_and_a_revision_a_new_directory(render):
    other = "0123456789abcdef0123456789abcdef01234567"
    first, moved = render(_profile()), render(_profile(**{"model.source.revision": other}))
    assert _job_name(first) == _job_name(render(_profile()))  # stable: the same Job, applied again
    assert _job_name(moved) != _job_name(first)
    assert _job_name(render(_profile(image="vllm/vllm-openai:v0.33.1"))) != _job_name(first)  # a Job cannot change
    args = _pod(moved)["containers"][0]["args"]
    assert f"/models/meta-llama/Llama-3.1-405B-Instruct/{other}" in args


def _await_model_jobs(node):
    """LWSGEN_MODEL_JOB of every await-model init container anywhere in an object."""
    if isinstance(node, dict):
        if node.get("name") == "await-model":
            yield _env(node)["LWSGEN_MODEL_JOB"]
        for value in node.values():
            yield from _await_model_jobs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _await_model_jobs(value)


@pytest.mark.parametrize("platform", ["lws", "kserve"])
def test_every_role_waits_for_the_one_job_the_set_emits(render, platform):
    """A profile with roles emits one download Job, named for the set: each role's pods name that Job
    (they named a <name>-<role>-model-... Job that does not exist)."""
    data = fastyaml.load((REPO / "profiles" / "vllm-deepseek-r1-pd-kserve.yaml").read_text(encoding="utf-8"))
    data["platform"] = platform
    rendered = render(data)
    workload = "llminferenceservice.yaml" if platform == "kserve" else "disaggregatedset.yaml"
    named = [job for doc in _docs(rendered, workload) for job in _await_model_jobs(doc)]
    assert len(named) == 4 and set(named) == {_job_name(rendered)}, named


def test_before_kubernetes_1_26_the_job_has_no_pod_failure_policy(render):
    [job] = _docs(render(_profile(kubernetesVersion="1.25")), "model-download.yaml")
    assert "podFailurePolicy" not in job["spec"] and job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_serving_pods_wait_for_the_marker_then_read_the_snapshot(render):
    rendered = render(_profile())
    for side in ("leaderTemplate", "workerTemplate"):
        pod = _pod(rendered, side)
        [wait] = [c for c in pod["initContainers"] if c["name"] == "await-model"]
        env = _env(wait)
        assert env["LWSGEN_MODEL_MARKER"] == f"/models/{SNAPSHOT}/.lwsgen-complete"
        assert env["LWSGEN_MODEL_JOB"] == _job_name(rendered)
        assert int(env["LWSGEN_MODEL_WAIT_SECONDS"]) == budget.budget(_built(_profile())).download
        assert {"name": "model", "mountPath": "/models", "readOnly": True} in wait["volumeMounts"]
    assert f"/models/{SNAPSHOT}" in _pod(rendered)["containers"][0]["args"]


def test_a_local_cache_is_copied_and_read_by_the_engine(render):
    rendered = render(
        _profile(**{"storage.localCache": {"volume": "ephemeral", "storageClassName": "nvme", "size": "900Gi"}})
    )
    pod = _pod(rendered)
    assert [c["name"] for c in pod["initContainers"]] == ["await-model", "cache-model"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "model-local"]
    template = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert template["storageClassName"] == "nvme" and template["resources"]["requests"]["storage"] == "900Gi"
    copy = _env(pod["initContainers"][1])
    assert copy["LWSGEN_MODEL_TO"] == f"/lwsgen/model-cache/{SNAPSHOT}"
    assert f"/lwsgen/model-cache/{SNAPSHOT}" in pod["containers"][0]["args"]
    assert {"name": "model-local", "mountPath": "/lwsgen/model-cache", "readOnly": True} in pod["containers"][0][
        "volumeMounts"
    ]


def test_llamacpp_workers_do_not_mount_the_model(render):
    profile = {
        "name": "demo",
        "runtime": "llamacpp",
        "image": "registry.example.com/llama.cpp-rpc:b10470",
        "model": {"path": "/models/m.gguf"},
        "parallelism": {"tensor": 1, "pipeline": 2},
        "node": {"gpus": 1},
        "service": {"type": "ClusterIP"},
        "storage": {"claimName": "models", "mountPath": "/models"},
    }
    rendered = render(profile)
    mounts = {
        side: [m["name"] for m in _pod(rendered, side)["containers"][0]["volumeMounts"]]
        for side in ("leaderTemplate", "workerTemplate")
    }
    assert "model" in mounts["leaderTemplate"] and "model" not in mounts["workerTemplate"]
    assert "model" not in [v["name"] for v in _pod(rendered, "workerTemplate")["volumes"]]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"model.path": "/models/x"}, "model.path: is derived from model.source"),
        ({"model": {"family": "llama-3.1-405b"}}, "model: missing required field 'path' or 'source'"),
        ({"storage": None}, "model.source: is downloaded into storage, once per cluster"),
        ({"name": "a" * 49}, "shorten the name to 48"),
    ],
)
def test_what_a_download_cannot_work_with_is_refused(said, changes, message):
    profile = _profile(**{k: v for k, v in changes.items() if v is not None})
    if changes.get("storage", 1) is None:
        del profile["storage"]
    errors, _ = said(profile)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"storage.create.accessModes": ["ReadWriteOnce"]}, "storage.create.accessModes: the download Job writes"),
        ({"storage.create.size": "500Gi"}, "storage.create.size: 500Gi is smaller than the model (812 GB)"),
        ({"storage.localCache": {"size": "100Gi"}}, "storage.localCache.size: 100Gi is smaller than the model"),
        (
            {"storage.localCache": {"size": "900Gi"}, "node.ephemeralStorage": "500Gi"},
            "an emptyDir of 900Gi counts against the pod's ephemeral storage",
        ),
        ({"model.source.file": "../etc/passwd"}, "model.source.file: '../etc/passwd' must name one file"),
    ],
)
def test_a_claim_or_cache_that_cannot_hold_or_serve_the_model_is_refused(said, changes, message):
    errors, _ = said(_profile(**changes))
    assert any(message in e for e in errors), errors


def test_an_ephemeral_cache_of_the_default_class_is_warned_about(said):
    _, warnings = said(_profile(**{"storage.localCache": {"size": "900Gi", "volume": "ephemeral"}}))
    assert any(w.startswith("storage.localCache.storageClassName: is unset") for w in warnings), warnings


def test_a_split_gguf_downloads_every_part(render):
    profile = _llamacpp(
        **{"model.source.file": "Q4_K_M/model-00001-of-00003.gguf", "model.source.image": "python:3.12"},
    )
    del profile["model"]["family"]
    [job] = _docs(render(profile), "model-download.yaml")
    env = _env(job["spec"]["template"]["spec"]["containers"][0])
    assert json.loads(env["LWSGEN_ALLOW_PATTERNS"]) == ["Q4_K_M/model-*-of-00003.gguf"]


def test_llamacpp_needs_the_file_and_an_image_to_download_with(said):
    profile = _llamacpp()
    errors, _ = said(profile)
    assert any("llamacpp loads one file: set model.source.file" in e for e in errors), errors
    assert any("has no python3 with huggingface_hub" in e for e in errors), errors


def test_a_local_cache_needs_a_source(said):
    profile = _profile(**{"storage.localCache": {"size": "900Gi"}})
    del profile["model"]["source"]
    profile["model"]["path"] = "/models/x"
    errors, _ = said(profile)
    assert any(e.startswith("storage.localCache: copies the snapshot model.source downloads") for e in errors), errors


def _built(profile, write=None):
    import tempfile

    path = Path(tempfile.mkdtemp()) / "profile.yaml"
    path.write_text(fastyaml.dump(profile))
    return load_profile(path)[0]


def test_the_start_budget_follows_size_and_bandwidth(render):
    fast = budget.budget(_built(_profile()))
    assert fast.size_gb == pytest.approx(810, rel=0.01) and fast.load == budget.LOAD_FLOOR
    assert fast.download == math.ceil(2 * fast.size_gb / 0.5) + budget.DOWNLOAD_SETUP
    slow = budget.budget(_built(_profile(**{"storage.readGBps": 0.1})))
    assert slow.load == math.ceil(2 * (slow.size_gb / 2) / 0.1) + 600  # twice one pod's 405 GB at 0.1 GB/s + start
    probe = _pod(render(_profile(**{"storage.readGBps": 0.1})))["containers"][0]["startupProbe"]
    assert probe["failureThreshold"] * probe["periodSeconds"] >= slow.startup_probe
    fixed = budget.budget(_built(_profile(**{"model.loadTimeoutSeconds": 5000, "storage.readGBps": 0.1})))
    assert fixed.load == 5000 and fixed.load_from == "model.loadTimeoutSeconds"
    sized = budget.budget(_built(_profile(**{"model.sizeGB": 100})))
    assert sized.size_gb == 100 and sized.size_from == "model.sizeGB"


def test_a_hub_id_without_storage_gets_a_download_budget_and_a_warning(said):
    profile = {
        "name": "demo",
        "runtime": "vllm",
        "image": "vllm/vllm-openai:v0.33.0",
        "model": {"path": "meta-llama/Llama-3.1-405B-Instruct", "family": "llama-3.1-405b"},
        "parallelism": {"tensor": 8, "pipeline": 2},
        "node": {"gpus": 8},
        "replicas": 2,
        "service": {"type": "ClusterIP"},
    }
    plan = budget.budget(_built(profile))
    assert plan.per_pod_download and plan.load > 2 * plan.size_gb / 0.5  # the whole model, from the hub, per pod
    _, warnings = said(profile)
    assert any("about 812 GB each, 3,247 GB for the 4 pods there can be" in w for w in warnings), warnings


# --- the scripts, run for real ---

WEIGHTS = os.urandom(24_000_000)  # huggingface_hub writes 10 MB chunks: an interruption after two leaves 20 MB
FILES = {"config.json": b'{"architectures": ["LlamaForCausalLM"]}', "model.safetensors": WEIGHTS, "README.md": b"# hi"}


def _download(hub, target, revision=REVISION, token=None, allow=("*.json", "*.safetensors")):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))},
        "HF_ENDPOINT": hub.endpoint,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": str(target.parent / "hf-home"),
        "LWSGEN_REPO": "org/tiny",
        "LWSGEN_REVISION": revision,
        "LWSGEN_TARGET": str(target),
        "LWSGEN_ALLOW_PATTERNS": json.dumps(list(allow)),
        **({"HF_TOKEN": token} if token else {}),
    }
    return subprocess.Popen(
        [sys.executable, str(SCRIPTS / "download-model.py")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_the_download_script_fetches_the_allowed_files_and_writes_the_marker_last(tmp_path):
    target = tmp_path / "models" / "org" / "tiny" / REVISION
    with Hub(Repo("org/tiny", REVISION, FILES), token="secret") as hub:
        run = _download(hub, target, token="secret")
        out, _ = run.communicate(timeout=60)
        assert run.returncode == 0, out
        assert (target / "model.safetensors").read_bytes() == WEIGHTS and not (target / "README.md").exists()
        marker = json.loads((target / ".lwsgen-complete").read_text())
        assert marker == {
            "repo": "org/tiny",
            "revision": REVISION,
            "allow": ["*.json", "*.safetensors"],
            "files": 2,
            "bytes": len(WEIGHTS) + len(FILES["config.json"]),
        }
        assert not (target / ".cache").exists()  # the snapshot holds the repository's files only
        fetched = len(hub.requests)
        again = _download(hub, target, token="secret")
        out, _ = again.communicate(timeout=60)
        assert again.returncode == 0 and "already complete" in out and len(hub.requests) == fetched  # nothing fetched


def test_an_interrupted_download_keeps_its_finished_files_and_fetches_the_rest(tmp_path):
    shards = {"model-00001-of-00002.safetensors": WEIGHTS, "model-00002-of-00002.safetensors": WEIGHTS[::-1]}
    target = tmp_path / "snapshot"
    with Hub(Repo("org/tiny", REVISION, {"config.json": FILES["config.json"], **shards})) as hub:
        hub.stall = ("model-00002-of-00002.safetensors", 21_000_000)
        first = _download(hub, target)
        deadline = time.monotonic() + 300  # a hang's bound: the loop ends on the download's own progress
        partial = target / ".cache" / "huggingface" / "download"
        while not (
            (target / "model-00001-of-00002.safetensors").exists()
            and any(p.stat().st_size >= 10_000_000 for p in partial.rglob("*.incomplete"))
        ):
            assert time.monotonic() < deadline and first.poll() is None, "the first shard did not finish"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)  # the pod is killed mid-download
        first.communicate(timeout=10)
        assert not (target / ".lwsgen-complete").exists()
        hub.stall, before = None, len(hub.requests)
        second = _download(hub, target)
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 0, out
        assert "partial file(s) of an interrupted run" in out
        for name, data in shards.items():
            assert (target / name).read_bytes() == data
        fetched = [
            path.rsplit("/", 1)[1]
            for method, path, _ in hub.requests[before:]
            if method == "GET" and "/resolve/" in path
        ]
        # the finished shard is not fetched again, the cut one is
        assert "model-00002-of-00002.safetensors" in fetched and "model-00001-of-00002.safetensors" not in fetched
        assert not list(partial.rglob("*.incomplete"))


def test_changed_patterns_fetch_again(tmp_path):
    target = tmp_path / "snapshot"
    with Hub(Repo("org/tiny", REVISION, FILES)) as hub:
        first = _download(hub, target)
        first.communicate(timeout=60)
        assert first.returncode == 0 and not (target / "README.md").exists()
        run = _download(hub, target, allow=("*",))
        out, _ = run.communicate(timeout=60)
    assert run.returncode == 0 and (target / "README.md").read_text() == "# hi", out
    assert json.loads((target / ".lwsgen-complete").read_text())["allow"] == ["*"]


FAKE_CLIENT = """
class HfApi:
    def list_repo_tree(self, repo, revision=None, recursive=False):
        class File:
            def __init__(self, path, size):
                self.path, self.size, self.blob_id = path, size, "0" * 40
        return [File("config.json", 2), File("model.safetensors", 10)]
def snapshot_download(repo_id, revision=None, local_dir=None, allow_patterns=None, local_dir_use_symlinks="auto"):
    # huggingface_hub 0.26 to 1.21 with the Hub unreachable: a non-empty local_dir is returned as it is
    open(local_dir + "/config.json", "w").write("{}")
    return local_dir
"""
FAKE_UTILS = """
import fnmatch
class HfHubHTTPError(Exception):
    pass
class GatedRepoError(HfHubHTTPError):
    pass
class RepositoryNotFoundError(HfHubHTTPError):
    pass
class RevisionNotFoundError(HfHubHTTPError):
    pass
def filter_repo_objects(items, allow_patterns=None):
    return [i for i in items if not allow_patterns or any(fnmatch.fnmatch(i, p) for p in allow_patterns)]
"""


def test_a_client_that_returns_a_partial_snapshot_gets_no_marker(tmp_path):
    package = tmp_path / "fake" / "huggingface_hub"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_CLIENT)
    (package / "utils.py").write_text(FAKE_UTILS)
    target = tmp_path / "snapshot"
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(tmp_path / "fake"),
        "LWSGEN_REPO": "org/tiny",
        "LWSGEN_REVISION": REVISION,
        "LWSGEN_TARGET": str(target),
        "LWSGEN_ALLOW_PATTERNS": "",
    }
    script = [sys.executable, str(SCRIPTS / "download-model.py")]
    run = subprocess.run(script, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 file(s) are not complete after the download (model.safetensors): retrying" in run.stdout
    assert not (target / ".lwsgen-complete").exists()


@pytest.mark.parametrize(
    "revision, token, allow, said",
    [
        ("f" * 40, None, ("*",), "org/tiny has no revision ffffffffff"),
        (REVISION, "wrong", ("*",), "is gated"),
        (REVISION, "invalid", ("*",), "the Hub refused the token for org/tiny (HTTP 401)"),
        (REVISION, "secret", ("*.gguf",), "no file of org/tiny@"),
    ],
)
def test_a_download_that_cannot_succeed_exits_2_and_says_why(tmp_path, revision, token, allow, said):
    refusal = None if token == "invalid" else "GatedRepo"
    with Hub(Repo("org/tiny", REVISION, FILES), token="secret" if token else None, refusal=refusal) as hub:
        run = _download(hub, tmp_path / "snapshot", revision=revision, token=token, allow=allow)
        out, _ = run.communicate(timeout=60)
    assert run.returncode == 2 and said in out, out
    assert not (tmp_path / "snapshot" / ".lwsgen-complete").exists()


def _bash(script, env, timeout=30):
    return subprocess.run(
        ["bash", str(SCRIPTS / script)],
        env={"PATH": os.environ["PATH"], "LWSGEN_POLL_SECONDS": "0.2", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_pods_wait_for_the_marker_and_give_up_with_what_to_do(tmp_path):
    marker = tmp_path / ".lwsgen-complete"
    env = {
        "LWSGEN_MODEL_MARKER": str(marker),
        "LWSGEN_MODEL_JOB": "demo-model-be673f32",
        "LWSGEN_NAMESPACE": "inference",
        "LWSGEN_MODEL_WAIT_SECONDS": "2",
    }
    late = _bash("await-model.sh", env)
    assert late.returncode == 1
    assert (
        "did not appear within 2 s" in late.stdout
        and "kubectl logs -n inference job/demo-model-be673f32" in late.stdout
    )
    waiting = subprocess.Popen(
        ["bash", str(SCRIPTS / "await-model.sh")],
        env={"PATH": os.environ["PATH"], "LWSGEN_POLL_SECONDS": "0.2", **env, "LWSGEN_MODEL_WAIT_SECONDS": "60"},
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(1)
    assert waiting.poll() is None  # still waiting
    marker.write_text('{"files": 2}')
    out, _ = waiting.communicate(timeout=30)
    assert waiting.returncode == 0 and "waiting for job/demo-model-be673f32" in out and "the model is complete" in out


def test_the_local_copy_is_whole_or_not_there(tmp_path):
    source = tmp_path / "claim" / "snap"
    source.mkdir(parents=True)
    (source / "model.safetensors").write_bytes(WEIGHTS)
    (source / "config.json").write_text("{}")
    target = tmp_path / "local" / "snap"
    env = {"LWSGEN_MODEL_FROM": str(source), "LWSGEN_MODEL_TO": str(target), "LWSGEN_COPY_SECONDS": "60"}
    copied = _bash("cache-model.sh", env)
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert hashlib.sha256((target / "model.safetensors").read_bytes()).digest() == hashlib.sha256(WEIGHTS).digest()
    assert (target / ".lwsgen-cached").exists() and not Path(f"{target}.partial").exists()
    again = _bash("cache-model.sh", env)
    assert again.returncode == 0 and "already cached" in again.stdout


def test_mistakes_in_the_source_are_said_in_words(said):
    errors, _ = said(_profile(**{"model.source.revision": 123456}))
    # quoting 123456 would not make it a commit: the message says what would
    assert any("model.source.revision: must be a full commit hash: 40 lower-case" in e for e in errors), errors
    errors, _ = said(_profile(**{"model.source.revision": "be673f3"}))
    assert any("is not a full commit hash: 40 lower-case hexadecimal digits" in e for e in errors), errors
    llamacpp = _llamacpp(
        **{"model.source.file": "m-00002-of-00002.gguf", "model.source.image": "python:3.12"},
    )
    errors, _ = said(llamacpp)
    assert any("llama.cpp loads a split GGUF from its first part: 'm-00001-of-00002.gguf'" in e for e in errors), errors


def test_an_emptydir_cache_without_reserved_disk_is_warned_about(said):
    _, warnings = said(_profile(**{"storage.localCache": {"size": "900Gi"}}))
    assert any("node.ephemeralStorage is unset: the scheduler does not reserve it" in w for w in warnings), warnings
