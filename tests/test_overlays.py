"""kustomize overlays keep every reference of lwsgen's output consistent, through the
kustomizeconfig.yaml each kustomization names in `configurations:`; what cannot follow (names inside
PromQL, pod names in the leader's Role) is reported by `lwsgen validate` on the built output."""

import shutil
import subprocess

import pytest

import fastyaml
from conftest import REPO, tool
from lwsgen.cli import main

pytestmark = pytest.mark.tools
OVERLAY = {
    "resources": ["../base"],
    "namePrefix": "prod-",
    "nameSuffix": "-a",
    "labels": [{"pairs": {"team": "ml"}, "includeSelectors": True, "includeTemplates": True}],
    "images": [{"name": "vllm/vllm-openai", "newTag": "v0.9.2"}],
}


def _build(tmp_path, example, overlay):
    shutil.copytree(REPO / "out" / example, tmp_path / "base")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text(fastyaml.dump(overlay))
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in fastyaml.load_all(built.stdout) if d}, built.stdout


def test_name_prefix_suffix_labels_and_images_keep_every_reference(tmp_path):
    objects, _ = _build(tmp_path, "vllm-llama31-405b", OVERLAY)
    lws = objects[("LeaderWorkerSet", "prod-vllm-llama31-405b-a")]
    name = lws["metadata"]["name"]
    for side in ("leaderTemplate", "workerTemplate"):
        pod = lws["spec"]["leaderWorkerTemplate"][side]
        [volume] = [v for v in pod["spec"]["volumes"] if "configMap" in v]
        assert ("ConfigMap", volume["configMap"]["name"]) in objects
        assert pod["metadata"]["labels"]["team"] == "ml"
        assert pod["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.9.2"
    service = objects[("Service", "prod-vllm-llama31-405b-leader-a")]
    leader_labels = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"]
    assert service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"] == name
    assert all(
        leader_labels.get(k, v) == v for k, v in service["spec"]["selector"].items() if "leaderworkerset" not in k
    )
    monitor = objects[("PodMonitor", name)]
    assert monitor["spec"]["selector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] == name
    policy = objects[("NetworkPolicy", name)]
    assert policy["spec"]["podSelector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] == name
    peers = [p for rule in policy["spec"]["ingress"] for p in rule.get("from", []) if "podSelector" in p]
    lws_peers = [p for p in peers if "leaderworkerset.sigs.k8s.io/name" in p["podSelector"]["matchLabels"]]
    assert lws_peers and all(
        p["podSelector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] == name for p in lws_peers
    )
    # the gateway's objects: the route names the renamed pool, the pool the renamed LWS and EPP Service,
    # and the EPP's Deployment, Service and NetworkPolicy select its pods under the added label
    pool = objects[("InferencePool", name)]
    assert pool["spec"]["selector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] == name
    pool_labels = pool["spec"]["selector"]["matchLabels"]
    assert pool_labels["team"] == "ml"
    assert all(leader_labels.get(k) == v for k, v in pool_labels.items() if "leaderworkerset" not in k)
    assert ("Service", pool["spec"]["endpointPickerRef"]["name"]) in objects
    route = objects[("HTTPRoute", name)]
    assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == name
    picker = objects[("Deployment", "prod-vllm-llama31-405b-epp-a")]
    pod = picker["spec"]["template"]
    assert ("ServiceAccount", pod["spec"]["serviceAccountName"]) in objects
    assert ("ConfigMap", pod["spec"]["volumes"][0]["configMap"]["name"]) in objects
    for selector in (
        picker["spec"]["selector"]["matchLabels"],
        objects[("Service", "prod-vllm-llama31-405b-epp-a")]["spec"]["selector"],
        objects[("NetworkPolicy", "prod-vllm-llama31-405b-epp-a")]["spec"]["podSelector"]["matchLabels"],
    ):
        assert selector["team"] == "ml" and all(pod["metadata"]["labels"].get(k) == v for k, v in selector.items())


def test_scale_targets_and_service_accounts_follow(tmp_path):
    objects, _ = _build(tmp_path, "triton-llama3-405b", {**OVERLAY, "images": []})
    name = "prod-triton-llama3-405b-a"
    assert objects[("HorizontalPodAutoscaler", name)]["spec"]["scaleTargetRef"]["name"] == name
    lws = objects[("LeaderWorkerSet", name)]
    account = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["serviceAccountName"]
    assert ("ServiceAccount", account) in objects


def test_validate_says_the_pickers_pool_flag_cannot_follow_a_rename(tmp_path, capsys):
    _, text = _build(tmp_path, "vllm-llama31-405b", {"resources": ["../base"], "namePrefix": "prod-"})
    built = tmp_path / "built.yaml"
    built.write_text(text)
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "names InferencePool 'vllm-llama31-405b', which is not in this set (a flag does not follow" in out


def test_validate_names_what_an_overlay_cannot_follow(tmp_path, capsys):
    overlay = {"resources": ["../base"], "namePrefix": "prod-", "namespace": "prod"}
    _, text = _build(tmp_path, "triton-llama3-405b", overlay)
    built = tmp_path / "built.yaml"
    built.write_text(text)
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "not a pod of a LeaderWorkerSet in this set" in out  # the Role's resourceNames
    assert "names in PromQL do not follow a kustomize namePrefix" in out
    assert "a kustomize `namespace:` overlay does not reach into PromQL" in out
    assert "render the profile with the new namespace instead" in out
    assert "does not name the PodMonitor's own namespace 'prod'" in out
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        subprocess.run(
            [tool("kubectl"), "kustomize", str(tmp_path / "base")], capture_output=True, text=True, check=True
        ).stdout
    )
    assert main(["validate", str(plain)]) == 0, capsys.readouterr().out


def test_the_model_claim_and_download_job_follow_a_rename(tmp_path):
    objects, _ = _build(tmp_path, "sglang-deepseek-r1", {"resources": ["../base"], "namePrefix": "prod-"})
    claim = "prod-deepseek-r1-weights"
    assert ("PersistentVolumeClaim", claim) in objects
    [job] = [o for (kind, _), o in objects.items() if kind == "Job"]
    lws = objects[("LeaderWorkerSet", "prod-sglang-deepseek-r1")]["spec"]["leaderWorkerTemplate"]
    for spec in (job["spec"]["template"]["spec"], lws["leaderTemplate"]["spec"], lws["workerTemplate"]["spec"]):
        claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v]
        scripts = [v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v]
        assert claims == [claim] and ("ConfigMap", scripts[0]) in objects


def test_validate_says_the_keda_query_cannot_follow_a_rename(tmp_path, capsys):
    _, text = _build(
        tmp_path, "sglang-deepseek-r1", {"resources": ["../base"], "namePrefix": "prod-", "namespace": "prod"}
    )
    built = tmp_path / "built.yaml"
    built.write_text(text)
    assert main(["validate", str(built)]) == 1
    out = capsys.readouterr().out
    assert "spec.triggers[0].metadata.query: selects LeaderWorkerSet 'sglang-deepseek-r1'" in out
    assert "selects namespace 'inference', not the object's own 'prod'" in out
