"""`lwsgen validate` on hand-edited and overlay-built output sees what would break the group
(#33: each of these was accepted before)."""

import shutil
import subprocess

import pytest

import fastyaml
from conftest import REPO, tool
from lwsgen.cli import main

EXAMPLE = "vllm-llama31-405b"


def _edited(tmp_path, edit, example=EXAMPLE):
    shutil.copytree(REPO / "out" / example, tmp_path / example)
    path = tmp_path / example / "leaderworkerset.yaml"
    lws = fastyaml.load(path.read_text())
    edit(lws["spec"]["leaderWorkerTemplate"])
    path.write_text(fastyaml.dump(lws, sort_keys=False))
    return tmp_path / example


def _leader(lwt):
    return lwt["leaderTemplate"]["spec"]["containers"][0]


def _worker(lwt):
    return lwt["workerTemplate"]["spec"]["containers"][0]


def _drop_env(container, name):
    container["env"] = [e for e in container["env"] if e["name"] != name]


BROKEN = {
    "leader without GPUs": (
        lambda t: _leader(t)["resources"]["limits"].pop("nvidia.com/gpu"),
        "the leader asks no GPU and each worker 8 nvidia.com/gpu",
    ),
    "workers with 4 GPUs": (
        lambda t: _worker(t)["resources"]["limits"].update({"nvidia.com/gpu": 4}),
        "the leader asks 8 nvidia.com/gpu and each worker 4 nvidia.com/gpu",
    ),
    "leader without image": (lambda t: _leader(t).pop("image"), "container 'leader' has no image"),
    "leader without command or args": (
        lambda t: (_leader(t).pop("command"), _leader(t).pop("args", None)),
        "the engine container has neither command nor args",
    ),
    "leader with args and no command": (
        lambda t: _leader(t).pop("command"),
        "the engine container has args but no command: it would run its image's entrypoint",
    ),
    "workers on AMD GPUs": (
        lambda t: (
            [_worker(t)["resources"][k].update({"amd.com/gpu": 8}) for k in ("limits", "requests")]
            and [_worker(t)["resources"][k].pop("nvidia.com/gpu") for k in ("limits", "requests")]
        ),
        "the leader asks 8 nvidia.com/gpu and each worker 8 amd.com/gpu",
    ),
    "workers on another image": (
        lambda t: _worker(t).update(image="vllm/vllm-openai:v0.32.0"),
        "the workers run 'vllm/vllm-openai:v0.32.0' and the leader 'vllm/vllm-openai:v0.33.0'",
    ),
    "workers on another node type": (
        lambda t: t["workerTemplate"]["spec"].update(nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A10G"}),
        "the workers' nodeSelector differs from the leader's",
    ),
    "workers told another tensor size": (
        lambda t: _worker(t)["args"].__setitem__(_worker(t)["args"].index("--tensor-parallel-size") + 1, "4"),
        "the workers are given --tensor-parallel-size 4 and the leader --tensor-parallel-size 8",
    ),
    "leader without HF_TOKEN": (
        lambda t: _drop_env(_leader(t), "HF_TOKEN"),
        "has no HF_TOKEN from its Secret, which the worker reads",
    ),
    "worker without the model mount": (
        lambda t: _worker(t).update(volumeMounts=[m for m in _worker(t)["volumeMounts"] if m["name"] != "model"]),
        "does not mount 'model', which the leader mounts",
    ),
    "memory 800GB": (
        lambda t: _leader(t)["resources"]["limits"].update(memory="800GB"),
        "limits.memory: '800GB' is not a Kubernetes quantity",
    ),
    "cpu lots": (
        lambda t: _worker(t)["resources"]["requests"].update(cpu="lots"),
        "'lots' is not a Kubernetes quantity",
    ),
    "sizeLimit 16 gigs": (
        lambda t: t["leaderTemplate"]["spec"]["volumes"][0]["emptyDir"].update(sizeLimit="16 gigs"),
        "emptyDir.sizeLimit: '16 gigs' is not a Kubernetes quantity",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validate_refuses_what_would_break_the_group(case, tmp_path, capsys):
    edit, said = BROKEN[case]
    directory = _edited(tmp_path, edit)
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert said in out, out


def test_the_untouched_output_is_valid(tmp_path, capsys):
    assert main(["validate", str(_edited(tmp_path, lambda t: None))]) == 0, capsys.readouterr().out


def test_one_typo_is_one_finding(tmp_path, capsys):
    """Before: startupPolicyy in the LWS also failed the Service, PodMonitor and HPA that select it."""

    shutil.copytree(REPO / "out" / EXAMPLE, tmp_path / EXAMPLE)
    path = tmp_path / EXAMPLE / "leaderworkerset.yaml"
    lws = fastyaml.load(path.read_text())
    lws["spec"]["startupPolicyy"] = lws["spec"].pop("startupPolicy")
    path.write_text(fastyaml.dump(lws, sort_keys=False))
    assert main(["validate", str(tmp_path / EXAMPLE), "--format", "json"]) == 1
    import json

    findings = json.loads(capsys.readouterr().out)
    assert {f["file"].rsplit("/", 1)[-1] for f in findings} == {"leaderworkerset.yaml"}, findings
    assert len(findings) == 1 and "startupPolicyy" in findings[0]["path"]


def _build(tmp_path, overlay, base=REPO / "out" / EXAMPLE):
    """kubectl kustomize of an overlay (its resources name ../base) over a copy of the output `base`."""
    shutil.copytree(base, tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(fastyaml.dump(overlay))
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (tmp_path / "built.yaml").write_text(built.stdout)
    return tmp_path / "built.yaml"


@pytest.mark.tools
def test_an_image_retag_is_held_to_the_version_it_names(tmp_path, capsys):
    """Before: images newTag v0.8.5 on a vLLM 0.33 output kept --nnodes/--headless and validated."""
    built = _build(tmp_path, {"resources": ["../base"], "images": [{"name": "vllm/vllm-openai", "newTag": "v0.8.5"}]})
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "--nnodes needs vLLM 0.11.1 or newer" in out and "image 'vllm/vllm-openai:v0.8.5' runs 0.8.5" in out
    assert "--headless needs vLLM 0.9.0 or newer" in out
    newer = _build(
        tmp_path / "b", {"resources": ["../base"], "images": [{"name": "vllm/vllm-openai", "newTag": "v0.34.0"}]}
    )
    assert main(["validate", str(newer)]) == 0, capsys.readouterr().out


@pytest.mark.tools
def test_two_copies_in_one_namespace_name_what_points_at_the_other(tmp_path, capsys):
    """The base and a namePrefix copy side by side: the copy's --pool-name and PromQL still name the
    base's objects, and each picker Service selects both pickers' pods."""
    (tmp_path / "copy").mkdir()
    shutil.copytree(REPO / "out" / EXAMPLE, tmp_path / "base")
    (tmp_path / "copy" / "kustomization.yaml").write_text(fastyaml.dump({"resources": ["../base"], "namePrefix": "b-"}))
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / "kustomization.yaml").write_text(fastyaml.dump({"resources": ["../base", "../copy"]}))
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "both")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (tmp_path / "built.yaml").write_text(built.stdout)
    assert main(["validate", str(tmp_path / "built.yaml")]) == 1
    out = capsys.readouterr().out
    assert f"names InferencePool '{EXAMPLE}', the pool of another copy (this picker's is 'b-{EXAMPLE}';" in out
    assert f"selects LeaderWorkerSet '{EXAMPLE}', another copy's (this object's is 'b-{EXAMPLE}';" in out
    assert f"selects the pods of Deployments 'b-{EXAMPLE}-epp' and '{EXAMPLE}-epp'" in out


def _rendered_for_declared_version(tmp_path):
    """The valid case whose image tag (v0.8.5) is older than the vLLM its runtimeVersion declares (0.11.1)."""
    profile = REPO / "tests" / "cases" / "valid" / "runtime-version-newer-than-tag" / "profile.yaml"
    assert main(["render", str(profile), "-o", str(tmp_path / "out")]) == 0
    return tmp_path / "out" / "rebuilt"


def _retagged(tmp_path, rendered, images):
    return _build(tmp_path, {"resources": ["../base"], "images": images}, rendered)


@pytest.mark.tools
def test_the_declared_runtime_version_holds_only_for_the_image_it_was_declared_for(tmp_path, capsys):
    """Before: render wrote --nnodes/--headless for runtimeVersion 0.11.1, and validate refused them
    against the tag's 0.8.5. Now the pods record the declared version with its image; a retag is held
    to its own tag again."""
    rendered = _rendered_for_declared_version(tmp_path)
    capsys.readouterr()
    assert main(["validate", str(rendered)]) == 0, capsys.readouterr().out
    built = _retagged(tmp_path, rendered, [{"name": "vllm/vllm-openai", "newTag": "v0.9.0"}])
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "--nnodes needs vLLM 0.11.1 or newer" in out
    assert "image 'vllm/vllm-openai:v0.9.0' runs 0.9.0 (from the image tag)" in out


@pytest.mark.tools
@pytest.mark.parametrize(
    "images",
    [
        [{"name": "vllm/vllm-openai", "newName": "registry.internal/mirror/vllm-openai"}],
        [{"name": "vllm/vllm-openai", "newName": "registry.internal/mirror/vllm-openai", "newTag": "v0.8.5"}],
    ],
    ids=["mirror", "mirror-same-tag"],
)
def test_a_mirrored_image_keeps_its_declared_version(tmp_path, capsys, images):
    """The same release from another registry is what runtimeVersion was declared for."""
    built = _retagged(tmp_path, _rendered_for_declared_version(tmp_path), images)
    capsys.readouterr()
    assert main(["validate", str(built)]) == 0, capsys.readouterr().out


def _edited_declared(tmp_path, old, new):
    rendered = _rendered_for_declared_version(tmp_path)
    path = rendered / "leaderworkerset.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return rendered


def test_a_digest_pinned_image_keeps_its_declared_version_and_another_digest_does_not(tmp_path, capsys):
    digest = "sha256:" + "a" * 64
    pinned = _edited_declared(
        tmp_path, "image: vllm/vllm-openai:v0.8.5\n", f"image: vllm/vllm-openai:v0.8.5@{digest}\n"
    )
    capsys.readouterr()
    assert main(["validate", str(pinned)]) == 0, capsys.readouterr().out
    path = pinned / "leaderworkerset.yaml"
    other = "sha256:" + "b" * 64
    path.write_text(
        path.read_text()
        .replace(f"image: vllm/vllm-openai:v0.8.5@{digest}", f"image: vllm/vllm-openai:v0.8.5@{other}")
        .replace(
            "runtime-version-image: vllm/vllm-openai:v0.8.5", f"runtime-version-image: vllm/vllm-openai:v0.8.5@{digest}"
        )
    )
    assert main(["validate", str(pinned)]) == 1
    assert "runs 0.8.5 (from the image tag)" in capsys.readouterr().out


@pytest.mark.parametrize("written", ["0.10.2", "v0.10.2", "'0.10.2'"])
def test_a_declared_runtime_version_edited_older_is_held_to_what_it_says(tmp_path, capsys, written):
    rendered = _edited_declared(tmp_path, "lwsgen/runtime-version: 0.11.1", f"lwsgen/runtime-version: {written}")
    capsys.readouterr()
    assert main(["validate", str(rendered)]) == 1
    out = capsys.readouterr().out
    assert "--nnodes needs vLLM 0.11.1 or newer" in out
    assert "image 'vllm/vllm-openai:v0.8.5' runs 0.10.2 (from runtimeVersion)" in out


def test_a_declared_runtime_version_that_is_not_one_is_refused_at_the_annotation(tmp_path, capsys):
    rendered = _edited_declared(tmp_path, "lwsgen/runtime-version: 0.11.1", "lwsgen/runtime-version: newest")
    capsys.readouterr()
    assert main(["validate", str(rendered)]) == 1
    out = capsys.readouterr().out
    assert (
        """metadata.annotations["lwsgen/runtime-version"]: 'newest' is not a vLLM version: the engine flags """
        "cannot be held to it" in out
    )


def test_a_patch_of_the_declared_runtime_version_names_runtimeversion(tmp_path, capsys):
    profile = (REPO / "tests" / "cases" / "valid" / "runtime-version-newer-than-tag" / "profile.yaml").read_text()
    path = tmp_path / "profile.yaml"
    patch = {"metadata": {"annotations": {"lwsgen/runtime-version": "0.12.0"}}}
    lwt = {"leaderWorkerTemplate": {"leaderTemplate": patch}}
    path.write_text(
        profile + fastyaml.dump({"patches": [{"target": {"kind": "LeaderWorkerSet"}, "patch": {"spec": lwt}}]})
    )
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert (
        'metadata.annotations["lwsgen/runtime-version"]; lwsgen derives it from runtimeVersion: change that instead'
        in err
    )


@pytest.mark.tools
@pytest.mark.parametrize("name", ["pp", "sglang"])
def test_a_kserve_retag_is_held_to_the_engine_the_service_runs_whatever_its_name(tmp_path, capsys, name):
    """Before: KServe labels its pods with the service's name, which validate read as the runtime: a
    service named 'pp' went unchecked, one named 'sglang' was held to SGLang's flags."""
    profile = fastyaml.load((REPO / "profiles" / "vllm-llama31-405b.yaml").read_text())
    profile.update(name=name, platform="kserve", image="vllm/vllm-openai:v0.8.5", runtimeVersion="0.11.1")
    for key in ("gateway", "autoscaling", "networkPolicy"):
        profile.pop(key, None)
    (tmp_path / "profile.yaml").write_text(fastyaml.dump(profile))
    assert main(["render", str(tmp_path / "profile.yaml"), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    built = _retagged(tmp_path, tmp_path / "out" / name, [{"name": "vllm/vllm-openai", "newTag": "v0.9.0"}])
    capsys.readouterr()
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "spec.template.containers[0].args[9]: --nnodes needs vLLM 0.11.1 or newer" in out
    assert "image 'vllm/vllm-openai:v0.9.0' runs 0.9.0 (from the image tag)" in out


@pytest.mark.tools
def test_a_sidecar_a_strategic_merge_patch_puts_first_is_not_taken_for_the_engine(tmp_path, capsys):
    """kustomize puts a container a strategic-merge patch adds before the engine's: validate read the
    sidecar as the engine (no command, no GPU, no model) and refused the overlay four times over."""
    sidecar = {"name": "log-shipper", "image": "fluent/fluent-bit:3.2.0"}
    template = {"spec": {"containers": [sidecar]}}
    patch = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": EXAMPLE, "namespace": "inference"},
        "spec": {"leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}},
    }
    built = _build(tmp_path, {"resources": ["../base"], "patches": [{"patch": fastyaml.dump(patch)}]})
    lws = next(d for d in fastyaml.load_all(built.read_text()) if d["kind"] == "LeaderWorkerSet")
    assert lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["name"] == "log-shipper"
    assert main(["validate", str(built)]) == 0, capsys.readouterr().out


def test_a_kustomization_without_apiversion_and_kind_is_a_kustomization(tmp_path, capsys):
    """kustomize reads a kustomization.yaml without its header; validate called it neither a profile
    nor an object. Its paths are still checked."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources: [../base]\n")
    shutil.copytree(REPO / "out" / EXAMPLE, tmp_path / "base")
    assert main(["validate", str(overlay)]) == 0, capsys.readouterr().out
    (overlay / "kustomization.yaml").write_text("resources: [../nowhere]\n")
    assert main(["validate", str(overlay)]) == 1
    assert "../nowhere" in capsys.readouterr().out
