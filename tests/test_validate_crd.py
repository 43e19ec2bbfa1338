"""`lwsgen validate --crd PATH`: custom resources against CRDs the user gives (../shared/crds, the
upstream ones), strictly, with their x-kubernetes-validations CEL rules evaluated."""

import json
import shutil

import pytest
import yaml

import fastyaml
from conftest import REPO, SHARED
from lwsgen.cli import main

CRDS = str(SHARED / "crds")


def test_every_example_passes_the_upstream_crds(capsys):
    assert main(["validate", str(REPO / "out"), "--crd", CRDS]) == 0, capsys.readouterr().out


def _scaled(tmp_path):
    directory = tmp_path / "sglang"
    shutil.copytree(REPO / "out" / "sglang-deepseek-r1", directory)
    return directory / "scaledobject.yaml"


def test_a_cel_rule_of_the_crd_is_evaluated(tmp_path, capsys):
    path = _scaled(tmp_path)
    obj = fastyaml.load(path.read_text())
    obj["spec"]["minReplicaCount"] = 9  # above maxReplicaCount 4: KEDA's CRD rule refuses it
    path.write_text(fastyaml.dump(obj, sort_keys=False))
    assert main(["validate", str(path), "--crd", CRDS]) == 1
    out = capsys.readouterr().out
    assert f"{path}:" in out and "spec:" in out and "minReplicaCount" in out


def test_unknown_fields_are_rejected_by_the_given_crd(tmp_path, capsys):
    path = _scaled(tmp_path)
    path.write_text(
        path.read_text().replace("  pollingInterval: 30\n", "  pollingInterval: 30\n  pollingIntervall: 5\n")
    )
    assert main(["validate", str(path), "--crd", CRDS]) == 1
    assert "pollingIntervall" in capsys.readouterr().out


def test_an_inference_pool_rule(tmp_path, capsys):
    pool = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "p"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "targetPorts": [{"number": 8000}, {"number": 8000}],
            "endpointPickerRef": {"name": "epp", "kind": "Service"},
        },
    }
    path = tmp_path / "pool.yaml"
    path.write_text(fastyaml.dump(pool))
    assert main(["validate", str(path), "--crd", CRDS]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any("spec.endpointPickerRef" in line for line in lines)  # a Service reference needs its port
    assert any("spec.targetPorts" in line for line in lines)  # port numbers must be unique


@pytest.mark.parametrize("missing", ["nowhere"])
def test_a_missing_crd_path_is_a_usage_error_not_a_crash(tmp_path, capsys, missing):
    code = main(["validate", str(REPO / "out"), "--crd", str(tmp_path / missing)])
    assert code in (1, 2) and "internal error" not in capsys.readouterr().err


KEDA_CRD = SHARED / "crds" / "keda.sh_scaledobjects.yaml"


def test_a_crd_file_is_read_from_its_cached_json_only_while_its_text_is_the_same(tmp_path, monkeypatch):
    """Parsed CRD files are kept as JSON named by their text's SHA-256: the same text reads them
    back as the YAML reads, any change to the text reads the YAML again, a damaged or foreign cache
    entry is not read, and YAML beyond JSON is not kept."""
    from lwsgen.output import crd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kept = tmp_path / "cache" / "lwsgen" / "crds"
    text = KEDA_CRD.read_text(encoding="utf-8")
    from_yaml = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    assert crd._documents(text) == from_yaml
    [entry] = kept.iterdir()
    assert crd._documents(text) == from_yaml  # now from the JSON

    planted = [{"kind": "CustomResourceDefinition", "planted": True}]
    entry.write_text(json.dumps(planted))
    assert crd._documents(text) == planted  # read from the entry of this text (what makes this test able to fail)
    assert crd._documents(text + "\n# edited\n") == from_yaml  # another text: another entry
    entry.write_text("{not json")
    assert crd._documents(text) == from_yaml  # damaged: read again (and kept again)
    entry.write_text(json.dumps(planted))
    kept.chmod(0o777)  # writable by others: what is in it could be anyone's
    assert crd._documents(text) == from_yaml
    kept.chmod(0o700)

    monkeypatch.setenv("LWSGEN_NO_CACHE", "1")
    entry.write_text(json.dumps(planted))
    assert crd._documents(text) == from_yaml

    monkeypatch.delenv("LWSGEN_NO_CACHE")
    dated = "kind: CustomResourceDefinition\nwhen: 2026-12-07\n"
    assert crd._documents(dated) == crd._documents(dated) != [] and len(list(kept.iterdir())) == 2


def test_the_crd_cache_never_writes_or_prunes_a_directory_someone_else_could_have_made(tmp_path, monkeypatch):
    """A `crds` cache directory that is a link (or writable by others) is neither written nor pruned:
    it could be anyone's directory of JSON files."""
    from lwsgen.output import crd

    shared = tmp_path / "shared"
    (shared / "lwsgen").mkdir(parents=True)
    (shared / "lwsgen").chmod(0o777)
    victim = tmp_path / "victim"
    victim.mkdir()
    for index in range(crd.KEPT_CRD_FILES + 5):
        (victim / f"keep{index}.json").write_text("{}")
    (shared / "lwsgen" / "crds").symlink_to(victim)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    text = KEDA_CRD.read_text(encoding="utf-8")
    assert crd._documents(text) == list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    assert sorted(p.name for p in victim.iterdir()) == sorted(f"keep{i}.json" for i in range(crd.KEPT_CRD_FILES + 5))


def test_a_crd_file_nested_past_pythons_recursion_is_read_whether_or_not_it_is_kept(tmp_path, monkeypatch):
    from lwsgen.output import crd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    text = "[" * 990 + "]" * 990
    assert crd._documents(text) == crd._documents(text) == list(yaml.load_all(text, Loader=yaml.CSafeLoader))


def test_a_crd_file_with_an_alias_that_contains_itself_is_read_and_not_kept(tmp_path, monkeypatch):
    from lwsgen.output import crd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    [doc] = crd._documents("a: &x [*x]\n")
    assert doc["a"][0] is doc["a"]
    assert not list((tmp_path / "cache").rglob("*.json"))
