"""`lwsgen validate --crd PATH`: custom resources against CRDs the user gives (../shared/crds, the
upstream ones), strictly, with their x-kubernetes-validations CEL rules evaluated."""

import shutil

import pytest
import yaml

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
    obj = yaml.safe_load(path.read_text())
    obj["spec"]["minReplicaCount"] = 9  # above maxReplicaCount 4: KEDA's CRD rule refuses it
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
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
    path.write_text(yaml.safe_dump(pool))
    assert main(["validate", str(path), "--crd", CRDS]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any("spec.endpointPickerRef" in line for line in lines)  # a Service reference needs its port
    assert any("spec.targetPorts" in line for line in lines)  # port numbers must be unique


@pytest.mark.parametrize("missing", ["nowhere"])
def test_a_missing_crd_path_is_a_usage_error_not_a_crash(tmp_path, capsys, missing):
    code = main(["validate", str(REPO / "out"), "--crd", str(tmp_path / missing)])
    assert code in (1, 2) and "internal error" not in capsys.readouterr().err
