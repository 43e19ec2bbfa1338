"""`render DIR` and `validate` in a real repository layout: profiles only, bases as partial profiles,
any subset of an output directory's files (what pre-commit passes)."""

import json
import shutil

import jsonschema_rs

import fastyaml
from conftest import PROFILES, REPO, merged
from lwsgen.check.schema import partial_schema, profile_schema
from lwsgen.cli import main


def _repo(tmp_path):
    """A repository as teams keep one: profiles with a base, out/, .github/, a pre-commit config, docs."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    shutil.copytree(PROFILES, root / "profiles")
    shutil.copytree(REPO / "out", root / "out")
    (root / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(REPO / "docs" / "github-actions.yml", root / ".github" / "workflows" / "lwsgen.yml")
    shutil.copy(REPO / ".pre-commit-hooks.yaml", root / ".pre-commit-config.yaml")
    (root / "docs").mkdir()
    (root / "docs" / "notes.yaml").write_text("title: not a profile\nitems: [a, b]\n")
    base = fastyaml.load((PROFILES / "vllm-llama31-405b.yaml").read_text())
    del base["name"]
    base["base"] = True
    (root / "profiles" / "team").mkdir()
    (root / "profiles" / "team" / "base.yaml").write_text(fastyaml.dump(base))
    (root / "profiles" / "team" / "prod.yaml").write_text("extends: base.yaml\nname: team-prod\n")
    return root


def test_render_of_a_whole_repository_renders_its_profiles_only(tmp_path, capsys, monkeypatch):
    root = _repo(tmp_path)
    monkeypatch.chdir(root)
    assert main(["render", ".", "-o", "out"]) == 0
    written = sorted(line.split("/")[1] for line in capsys.readouterr().out.splitlines())
    assert written == sorted([*(p.stem for p in PROFILES.glob("*.yaml")), "team-prod"])


def test_validate_profiles_and_out_passes_with_a_base(tmp_path, capsys, monkeypatch):
    root = _repo(tmp_path)
    monkeypatch.chdir(root)
    assert main(["render", "profiles", "-o", "out"]) == 0
    capsys.readouterr()
    assert main(["validate", "profiles", "out"]) == 0, capsys.readouterr().out
    assert main(["validate", "profiles/team/base.yaml"]) == 0  # alone, as pre-commit passes a changed base
    (root / "profiles" / "team" / "base.yaml").write_text("runtime: vllm\nnode: {gpus: many}\n")
    assert main(["validate", "profiles/team/base.yaml"]) == 1
    assert "node.gpus: must be an integer, not a string" in capsys.readouterr().out


def test_validate_reads_the_siblings_of_a_changed_output_file(tmp_path, capsys, monkeypatch):
    root = _repo(tmp_path)
    monkeypatch.chdir(root)
    hpa = "out/triton-llama3-405b/horizontalpodautoscaler.yaml"
    text = (root / hpa).read_text()
    (root / hpa).write_text(text.replace("maxReplicas: 2", "maxReplicas: 3"))
    assert main(["validate", "profiles/triton-llama3-405b.yaml", hpa]) == 0, capsys.readouterr().out
    assert main(["validate", "out/triton-llama3-405b/service.yaml"]) == 0
    (root / hpa).write_text(text.replace("name: triton-llama3-405b\n  minReplicas", "name: elsewhere\n  minReplicas"))
    assert main(["validate", hpa]) == 1
    assert "spec.scaleTargetRef: must target a LeaderWorkerSet" in capsys.readouterr().out


def test_editors_accept_overlays_and_bases():
    overlay = {"extends": "base.yaml", "name": "x"}
    base = {"runtime": "vllm", "node": {"gpus": 8}}
    assert jsonschema_rs.validator_for(profile_schema()).is_valid(overlay)
    assert not jsonschema_rs.validator_for(profile_schema()).is_valid(base)
    assert jsonschema_rs.validator_for(partial_schema()).is_valid(base)
    assert not jsonschema_rs.validator_for(partial_schema()).is_valid(merged(base, **{"node.gpus": "many"}))
    assert json.loads((REPO / "schemas" / "profile-partial.schema.json").read_text()) == partial_schema()


def test_base_only_is_read_as_yaml_reads_it(tmp_path, capsys):
    """Any YAML spelling of base: true marks a base; the words inside a string do not."""
    profiles = tmp_path / "p"
    profiles.mkdir()
    complete = (PROFILES / "vllm-llama31-405b.yaml").read_text()
    (profiles / "quoted.yaml").write_text('"base": !!bool true\nruntime: vllm\nnode: {gpus: 8}\n')
    (profiles / "a.yaml").write_text(complete + 'annotations:\n  note: "deploy after\nbase: true\n  "\n')
    assert main(["render", str(profiles), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["vllm-llama31-405b"]
