"""Every rendered object against the upstream CRDs (strict), kubernetes-validate's own validator,
and a real `kubectl kustomize` of every output directory."""

import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import PROFILES, SHARED, lws_of, tool
from crd import errors as crd_errors
from lwsgen.pipeline import render_profile

CASES = Path(__file__).parent / "cases" / "valid"
ALL_PROFILES = sorted(PROFILES.glob("*.yaml")) + sorted(CASES.glob("*/profile.yaml"))
CRDS = SHARED / "crds"
CORE_KINDS = {"Service", "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "HorizontalPodAutoscaler", "NetworkPolicy"}
NOT_OBJECTS = {"kustomization.yaml", "prometheus-adapter-rules.yaml", "eksctl-nodegroup.yaml"}


def _ids(paths):
    return [p.parent.name if p.name == "profile.yaml" else p.stem for p in paths]


@pytest.fixture(scope="module")
def rendered():
    return {path: render_profile(path) for path in ALL_PROFILES}


def test_shared_material_is_there():
    assert (CRDS / "leaderworkerset.x-k8s.io_leaderworkersets.yaml").is_file(), f"../shared not found at {SHARED}"


@pytest.mark.parametrize("path", ALL_PROFILES, ids=_ids(ALL_PROFILES))
def test_custom_resources_pass_the_upstream_crd_strictly(rendered, path):
    for name, text in rendered[path].files.items():
        for obj in yaml.safe_load_all(text):
            if name in NOT_OBJECTS or obj["kind"] in CORE_KINDS | {"Job"}:
                continue
            assert crd_errors(obj, CRDS) == [], name


@pytest.mark.parametrize("path", ALL_PROFILES, ids=_ids(ALL_PROFILES))
def test_core_kinds_pass_kubernetes_validate_strict(rendered, path):
    import kubernetes_validate

    for name, text in rendered[path].files.items():
        for obj in yaml.safe_load_all(text):
            if name not in NOT_OBJECTS and obj["kind"] in CORE_KINDS | {"Job"}:
                kubernetes_validate.validate(obj, "1.33", strict=True)


def test_the_crd_check_rejects_unknown_fields(minimal, render):
    lws = lws_of(render(minimal))
    lws["spec"]["leaderWorkerTemplate"]["sizes"] = 2
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["imagePullPolicyy"] = "x"
    found = crd_errors(lws, CRDS)
    assert any("sizes" in e for e in found) and any("imagePullPolicyy" in e for e in found)


@pytest.mark.tools
@pytest.mark.parametrize("path", ALL_PROFILES, ids=_ids(ALL_PROFILES))
def test_kubectl_kustomize_builds_every_output_directory(rendered, path, tmp_path):
    from lwsgen.write import write_one

    result = rendered[path]
    write_one(tmp_path, result)
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / result.deployment.name)],
                           capture_output=True, text=True, check=True).stdout
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(built))
    listed = yaml.safe_load(result.files["kustomization.yaml"])["resources"]
    expected = sorted(yaml.safe_load(result.files[name])["kind"] for name in listed)
    assert kinds == expected
