"""Every rendered object against the upstream CRDs (strict), kubernetes-validate's own validator,
and a real `kubectl kustomize` of every output directory."""

import functools
import subprocess
from pathlib import Path

import pytest

import fastyaml
from conftest import PROFILES, SHARED, lws_of, tool
from crd import errors as crd_errors
from lwsgen.derive import kinds
from lwsgen.pipeline import render_profile

CASES = Path(__file__).parent / "cases" / "valid"
ALL_PROFILES = sorted(PROFILES.glob("*.yaml")) + sorted(CASES.glob("*/profile.yaml"))
CRDS = SHARED / "crds"
# Custom resources (checked against the upstream CRDs); every other object (lwsgen's core kinds and
# those a profile's templates add) is Kubernetes' own, checked by kubernetes-validate.
CUSTOM_KINDS = {kind for _, kind in kinds.project_schemas()}
NOT_OBJECTS = {
    "kustomization.yaml",
    "prometheus-adapter-rules.yaml",
    "eksctl-nodegroup.yaml",
    "kustomizeconfig.yaml",
    "kustomize-openapi.yaml",
}


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
        for obj in fastyaml.load_all(text):
            if name in NOT_OBJECTS or obj["kind"] not in CUSTOM_KINDS:
                continue
            assert crd_errors(obj, CRDS) == [], name


@pytest.fixture(scope="module")
def kubernetes_validate():
    """kubernetes-validate's validator, with each schema file it reads parsed once a process (it read
    the 1 MB _definitions.json again for every object: a third of these tests' time)."""
    import kubernetes_validate
    from kubernetes_validate import utils as module  # validate() is defined there, beside schema_contents

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "schema_contents", functools.cache(module.schema_contents))
        yield kubernetes_validate


@pytest.mark.parametrize("path", ALL_PROFILES, ids=_ids(ALL_PROFILES))
def test_core_kinds_pass_kubernetes_validate_strict(rendered, path, kubernetes_validate):
    for name, text in rendered[path].files.items():
        for obj in fastyaml.load_all(text):
            if name not in NOT_OBJECTS and obj["kind"] not in CUSTOM_KINDS:
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
    from lwsgen.output.write import write_all

    result = rendered[path]
    write_all(tmp_path, [result])
    built = subprocess.run(
        [tool("kubectl"), "kustomize", str(tmp_path / result.name)], capture_output=True, text=True, check=True
    ).stdout
    built_kinds = sorted(doc["kind"] for doc in fastyaml.load_all(built))
    listed = fastyaml.load(result.files["kustomization.yaml"])["resources"]
    expected = sorted(doc["kind"] for name in listed for doc in fastyaml.load_all(result.files[name]))
    assert built_kinds == expected


AWKWARD = [
    "08",
    "1_000",
    "0o17",
    "0x1F",
    "1:30",
    "24.08",
    "1e3",
    ".5",
    "-1",
    "y",
    "N",
    "yes",
    "on",
    "True",
    "~",
    "null",
    "",
    "0.0.0.0",
    "512Gi",
    "9059d6",
    "--tp",
    "a: b",
    "a #b",
    "a#b",
    "- x",
    "? x",
    "[x]",
    "{x}",
    "x, y",
    "'q'",
    '"q"',
    "&a",
    "*a",
    "!t",
    "%p",
    "@x",
    "`x`",
    "|x",
    ">x",
    "a |b",
    "^re$",
    'sum(x{namespace="a"}) by (pod)',
    "  lead",
    "trail  ",
    "é ü",
    "multi\nline\n",
    "x\n\tindented with a tab\n",
    "keep\n\n",
    "strip\nno newline",
    "  indented\nblock\n",
    "tab\there\n",
    "x\u2028y",
    "\ufeffbom",
    "---",
    "...",
]


@pytest.mark.tools
def test_go_yaml_readers_take_written_strings_as_the_same_strings(tmp_path):
    """kustomize (Go, yaml.v3) reads lwsgen's YAML: every string stays the same string, none
    becomes a number or boolean (which a ConfigMap would refuse)."""
    import random

    from lwsgen.output.parse import dump

    pieces = [
        " ",
        "\n",
        "\t",
        "-",
        ":",
        "#",
        "'",
        '"',
        "|",
        "a",
        "0",
        "1",
        ".",
        "_",
        "e",
        "x",
        "~",
        "{",
        "[",
        ",",
        "y",
        "é",
    ]
    rng = random.Random(0)
    generated = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 7))) for _ in range(2000)]
    data = {f"k{i}": value for i, value in enumerate(AWKWARD + generated)}
    (tmp_path / "configmap.yaml").write_text(
        dump(({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data},))
    )
    (tmp_path / "kustomization.yaml").write_text(dump(({"resources": ["configmap.yaml"]},)))
    built = subprocess.run(
        [tool("kubectl"), "kustomize", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert fastyaml.load(built)["data"] == data
