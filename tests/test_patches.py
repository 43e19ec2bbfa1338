"""Strategic-merge patches on lwsgen's output, built by the real kustomize: every version here
(kubectl's embedded kustomize, and the standalone one `make tools` builds from its Go module).

Before kustomize-openapi.yaml, kustomize knew no merge keys for LeaderWorkerSet or
DisaggregatedSet: a patch adding one env var to the leader left the container `{name, env}` (no
image, command, GPUs or mounts), and a DisaggregatedSet patch on one role dropped the other.
With a custom schema kustomize also drops its built-in one (kyaml/openapi SetSchema), so the
endpoint picker's Deployment is patched here too."""

import shutil
import subprocess

import pytest

import fastyaml
from conftest import REPO, tool
from lwsgen.cli import main

pytestmark = pytest.mark.tools
STANDALONE = REPO / ".tools" / "bin" / "kustomize"


def _builders() -> list[tuple[str, list[str]]]:
    found = [("kubectl", [tool("kubectl"), "kustomize"])]
    if STANDALONE.exists():
        found.append(("standalone", [str(STANDALONE), "build"]))
    return found


BUILDERS = _builders()


@pytest.fixture(params=[name for name, _ in BUILDERS])
def build(request, tmp_path):
    command = dict(BUILDERS)[request.param]

    def run(example: str, overlay: dict) -> dict:
        shutil.copytree(REPO / "out" / example, tmp_path / "base", dirs_exist_ok=True)
        (tmp_path / "overlay").mkdir(exist_ok=True)
        (tmp_path / "overlay" / "kustomization.yaml").write_text(fastyaml.dump({"resources": ["../base"], **overlay}))
        built = subprocess.run([*command, str(tmp_path / "overlay")], capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        (tmp_path / "built.yaml").write_text(built.stdout)
        return {(d["kind"], d["metadata"]["name"]): d for d in fastyaml.load_all(built.stdout) if d}

    return run


def _patch(kind: str, api: str, name: str, spec: dict) -> dict:
    body = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "inference"}, "spec": spec}
    return {"patch": fastyaml.dump(body)}


def _pod(spec: dict) -> dict:
    return {"spec": spec}


def _original(example: str, kind: str) -> dict:
    files = {"LeaderWorkerSet": "leaderworkerset.yaml", "DisaggregatedSet": "disaggregatedset.yaml"}
    return fastyaml.load((REPO / "out" / example / files[kind]).read_text())


def _without(container: dict, key: str, name: str) -> dict:
    return {**container, key: [e for e in container.get(key, []) if e.get("name") != name]}


def test_a_leader_patch_adds_env_a_port_and_a_mount_and_keeps_the_engine_container(build):
    example, name = "vllm-llama31-405b", "vllm-llama31-405b"
    leader = _pod(
        {
            "containers": [
                {
                    "name": "leader",
                    "env": [{"name": "VLLM_EXTRA", "value": "1"}],
                    "ports": [{"name": "debug", "containerPort": 9999}],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        }
    )
    spec = {"leaderWorkerTemplate": {"leaderTemplate": leader}}
    objects = build(example, {"patches": [_patch("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", name, spec)]})
    before = _original(example, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    after = objects[("LeaderWorkerSet", name)]["spec"]["leaderWorkerTemplate"]
    [patched] = after["leaderTemplate"]["spec"]["containers"]
    [original] = before["leaderTemplate"]["spec"]["containers"]
    for key in ("image", "command", "args", "resources", "readinessProbe"):
        assert patched.get(key) == original.get(key), key
    assert _without(patched, "env", "VLLM_EXTRA")["env"] == original["env"]
    assert sorted(p["containerPort"] for p in patched["ports"]) == sorted(
        [*(p["containerPort"] for p in original["ports"]), 9999]
    )
    assert _without(patched, "volumeMounts", "scratch")["volumeMounts"] == original["volumeMounts"]
    volumes = after["leaderTemplate"]["spec"]["volumes"]
    assert sorted(v["name"] for v in volumes) == sorted(
        [*(v["name"] for v in before["leaderTemplate"]["spec"]["volumes"]), "scratch"]
    )
    assert after["workerTemplate"] == before["workerTemplate"]


def test_a_patch_on_one_role_of_a_disaggregated_set_keeps_the_other_and_the_container(build):
    example = name = "sglang-deepseek-r1-pd"
    leader = _pod({"containers": [{"name": "leader", "env": [{"name": "SGLANG_EXTRA", "value": "1"}]}]})
    roles = [{"name": "decode", "spec": {"leaderWorkerTemplate": {"leaderTemplate": leader}}}]
    patch = _patch("DisaggregatedSet", "disaggregatedset.x-k8s.io/v1", name, {"roles": roles})
    objects = build(example, {"patches": [patch]})
    before = {r["name"]: r for r in _original(example, "DisaggregatedSet")["spec"]["roles"]}
    after = {r["name"]: r for r in objects[("DisaggregatedSet", name)]["spec"]["roles"]}
    assert after["prefill"] == before["prefill"]
    [patched] = after["decode"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    [original] = before["decode"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    assert _without(patched, "env", "SGLANG_EXTRA") == original


def test_core_kinds_still_merge_under_the_custom_schema(build):
    """The endpoint picker's Deployment and the PrometheusRule's groups, in the same build."""
    example = name = "vllm-llama31-405b"
    picker = _patch(
        "Deployment",
        "apps/v1",
        f"{name}-epp",
        {"template": _pod({"containers": [{"name": "epp", "env": [{"name": "EXTRA", "value": "1"}]}]})},
    )
    group = {"name": "team.extra", "rules": [{"record": "team:up", "expr": "up"}]}
    rules = _patch("PrometheusRule", "monitoring.coreos.com/v1", name, {"groups": [group]})
    objects = build(example, {"patches": [picker, rules]})
    [epp] = objects[("Deployment", f"{name}-epp")]["spec"]["template"]["spec"]["containers"]
    assert epp["image"].startswith("ghcr.io/llm-d/") and epp["args"] and {"name": "EXTRA", "value": "1"} in epp["env"]
    groups = [g["name"] for g in objects[("PrometheusRule", name)]["spec"]["groups"]]
    assert len(groups) == 5 and "team.extra" in groups  # runtime, gpu, router, alerts and the patch's


def test_replicas_in_an_overlay_sets_the_leaderworkerset(build, tmp_path, capsys):
    example = name = "vllm-qwen3-235b-a22b"
    objects = build(example, {"replicas": [{"name": name, "count": 3}]})
    assert objects[("LeaderWorkerSet", name)]["spec"]["replicas"] == 3
    assert main(["validate", str(tmp_path / "built.yaml")]) == 0, capsys.readouterr().out


def test_the_standalone_kustomize_is_tested_where_make_tools_built_it():
    """make tools builds kustomize v5.7.1 from its Go module; without it this suite covers one version."""
    if not STANDALONE.exists():
        pytest.skip("no standalone kustomize in .tools/bin (make tools builds it where Go is installed)")
    version = subprocess.run([str(STANDALONE), "version"], capture_output=True, text=True).stdout
    assert "v5.7.1" in version, version
