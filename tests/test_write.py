"""Stages 5 and 7: one kind per file, a kustomization, atomic all-or-nothing writes, drift checks."""

import fastyaml
from conftest import merged
from lwsgen.cli import main


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_one_kind_per_file_and_a_kustomization_listing_them(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    assert main(["render", str(write_profile(minimal)), "-o", str(out)]) == 0
    directory = out / "demo"
    files = sorted(p.name for p in directory.iterdir())
    assert files == [
        ".lwsgen-files",
        "configmap.yaml",
        "kustomization.yaml",
        "kustomize-openapi.yaml",
        "kustomizeconfig.yaml",
        "leaderworkerset.yaml",
        "networkpolicy.yaml",
        "service.yaml",
    ]
    kustomization = fastyaml.load((directory / "kustomization.yaml").read_text())
    assert kustomization["resources"] == [
        "configmap.yaml",
        "leaderworkerset.yaml",
        "networkpolicy.yaml",
        "service.yaml",
    ]
    for name in kustomization["resources"]:
        docs = list(fastyaml.load_all((directory / name).read_text()))
        assert len({d["kind"] for d in docs}) == 1


def test_rerender_is_byte_identical_and_leaves_files_untouched(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    profile = write_profile(minimal)
    assert main(["render", str(profile), "-o", str(out)]) == 0
    first = _tree(out)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.yaml")}
    assert main(["render", str(profile), "-o", str(out)]) == 0
    assert _tree(out) == first
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.yaml")} == stamps
    assert "0 changed" in capsys.readouterr().out


def test_a_failing_profile_in_a_batch_leaves_every_output_untouched(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    good = write_profile(minimal, "a/good.yaml")
    assert main(["render", str(good), "-o", str(out)]) == 0
    before = _tree(out)
    write_profile(merged(minimal, replicas=5), "a/good.yaml")  # would change the good output
    write_profile(merged(minimal, name="other", **{"node.gpus": 3}), "a/bad.yaml")  # world 16 not a multiple of 3
    assert main(["render", str(tmp_path / "a"), "-o", str(out)]) == 1
    assert _tree(out) == before
    assert "not a multiple of node.gpus 3" in capsys.readouterr().err
    assert not list(out.rglob("*.tmp"))


def test_files_no_longer_emitted_are_removed_and_foreign_files_kept(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    triton = merged(
        minimal,
        runtime="triton-trtllm",
        image="nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3",
        model={"path": "/models/repo"},
    )
    path = write_profile(triton)
    assert main(["render", str(path), "-o", str(out)]) == 0
    assert (out / "demo" / "role.yaml").exists()
    (out / "demo" / "notes.md").write_text("mine")
    write_profile(minimal)  # vLLM needs no RBAC
    assert main(["render", str(path), "-o", str(out)]) == 0
    names = sorted(p.name for p in (out / "demo").iterdir())
    assert "role.yaml" not in names and "serviceaccount.yaml" not in names and "rolebinding.yaml" not in names
    assert "notes.md" in names


def test_check_reports_missing_stale_and_extra_files_and_writes_nothing(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    path = write_profile(minimal)
    assert main(["render", str(path), "--check", "-o", str(out)]) == 1
    assert f"{out}/demo/leaderworkerset.yaml: missing" in capsys.readouterr().out
    assert not out.exists()
    assert main(["render", str(path), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["render", str(path), "--check", "-o", str(out)]) == 0
    assert "1 output directory is up to date" in capsys.readouterr().out
    (out / "demo" / "service.yaml").write_text("edited by hand\n")
    (out / "demo" / "extra.yaml").write_text("x: 1\n")
    (out / "demo" / "configmap.yaml").unlink()
    assert main(["render", str(path), "--check", "-o", str(out)]) == 1
    report = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("  ")]  # no diff lines
    assert report == [
        f"{out}/demo/configmap.yaml: missing",
        f"{out}/demo/service.yaml: stale (differs from what {path} renders)",
        f"{out}/demo/extra.yaml: extra (not written by lwsgen, not rendered from {path}): remove it, or render --force",
    ]
    assert (out / "demo" / "service.yaml").read_text() == "edited by hand\n"


def test_stdout_prints_one_stream_and_writes_nothing(write_profile, minimal, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["render", str(write_profile(minimal)), "--stdout", "-o", str(out)]) == 0
    docs = list(fastyaml.load_all(capsys.readouterr().out))
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "LeaderWorkerSet", "NetworkPolicy", "Service"]
    assert not out.exists()


def test_two_profiles_with_one_name_are_refused(write_profile, minimal, tmp_path, capsys):
    write_profile(minimal, "p/a.yaml")
    write_profile(minimal, "p/b.yaml")
    assert main(["render", str(tmp_path / "p"), "-o", str(tmp_path / "out")]) == 1
    assert "'demo' is also the name of" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_written_files_are_world_readable_not_executable(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    main(["render", str(write_profile(minimal)), "-o", str(out)])
    assert {oct(p.stat().st_mode & 0o777) for p in (out / "demo").iterdir()} == {"0o644"}


def test_check_shows_a_bounded_diff_and_speaks_json_and_github(write_profile, minimal, tmp_path, capsys):
    import json

    out, path = tmp_path / "out", write_profile(minimal)
    assert main(["render", str(path), "-o", str(out)]) == 0
    service = out / "demo" / "service.yaml"
    service.write_text(service.read_text().replace("type: ClusterIP", "type: NodePort") + "# " * 2000 + "\n" * 60)
    (out / "demo" / "extra.yaml").write_text("x: 1\n")
    capsys.readouterr()
    assert main(["render", str(path), "--check", "-o", str(out)]) == 1
    text = capsys.readouterr().out.splitlines()
    assert "  -  type: NodePort" in text and "  +  type: ClusterIP" in text
    assert any(line.startswith("  ... ") and line.endswith(" more diff lines") for line in text)
    assert main(["render", str(path), "--check", "-o", str(out), "--format", "github"]) == 1
    annotations = sorted(capsys.readouterr().out.splitlines(), reverse=True)
    assert annotations == [
        f"::error file={service},line=1,col=1::{service}: stale (differs from what {path} renders)",
        f"::error file={out}/demo/extra.yaml,line=1,col=1::{out}/demo/extra.yaml: "
        f"extra (not written by lwsgen, not rendered from {path}): remove it, or render --force",
    ]
    assert main(["render", str(path), "--check", "-o", str(out), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["state"], r["file"]) for r in rows] == [("stale", str(service)), ("foreign", f"{out}/demo/extra.yaml")]
    assert rows[0]["diff"][0].endswith("(committed)") and len(rows[0]["diff"]) == 41
