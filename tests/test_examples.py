"""The example profiles describe the upstream deployments, and the committed out/ is their current output."""

import pytest

import fastyaml
from conftest import PROFILES, REPO, SHARED, lws_of, objects_of
from lwsgen.output.write import drift
from lwsgen.pipeline import render_profile

EXAMPLES = sorted(PROFILES.glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_committed_output_is_current(path):
    result = render_profile(path, display=f"profiles/{path.name}")
    assert drift(REPO / "out", result) == [], "out/ is stale: run `make render`"


def test_out_holds_nothing_but_example_outputs():
    names = {render_profile(p).name for p in EXAMPLES}
    assert {p.name for p in (REPO / "out").iterdir()} == names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_profiles_carry_the_schema_modeline(path):
    assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../schemas/profile.schema.json"


def _reference(name):
    return list(fastyaml.load_all((SHARED / "reference" / name).read_text()))


def test_triton_example_has_the_awsome_inference_shape():
    result = render_profile(PROFILES / "triton-llama3-405b.yaml")
    claim = _reference("awsome-inference_pvc_claim.yaml")[0]["metadata"]["name"]
    [nccl] = _reference("awsome-inference_nccl_test.yaml")
    worker = nccl["spec"]["mpiReplicaSpecs"]["Worker"]
    lwt = lws_of(result)["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == worker["replicas"] == 2
    assert result.profile.world_size == 16 and result.profile.gpus_per_pod == nccl["spec"]["slotsPerWorker"]
    for side in ("leaderTemplate", "workerTemplate"):
        spec = lwt[side]["spec"]
        assert spec["nodeSelector"] == worker["template"]["spec"]["nodeSelector"]
        limits = spec["containers"][0]["resources"]["limits"]
        assert limits["vpc.amazonaws.com/efa"] == str(
            worker["template"]["spec"]["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"]
        )
        assert {"name": "model", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}} in spec["volumes"]
    assert lwt["leaderTemplate"]["spec"]["containers"][0]["image"].startswith("nvcr.io/nvidia/tritonserver:")
    assert "replicas" not in lws_of(result)["spec"]  # autoscaled, min 1 max 2 as in awsome-inference


def test_vllm_example_has_the_lws_example_shape():
    [upstream, upstream_service] = _reference("lws_docs_examples_vllm_GPU_lws.yaml")
    result = render_profile(PROFILES / "vllm-llama31-405b.yaml")
    lws = lws_of(result)
    # as many groups as upstream's replicas, at least: the HPA adds more when requests queue
    hpa = fastyaml.load(result.files["horizontalpodautoscaler.yaml"])
    assert "replicas" not in lws["spec"] and hpa["spec"]["minReplicas"] == upstream["spec"]["replicas"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == upstream["spec"]["leaderWorkerTemplate"]["size"]
    upstream_leader = upstream["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    # the same image repository, on a current vLLM (upstream's v0.8.5 is older than native multi-node)
    assert leader["image"].split(":")[0] == upstream_leader["image"].split(":")[0]
    assert leader["resources"]["limits"]["memory"] == upstream_leader["resources"]["limits"]["memory"]
    assert (
        leader["resources"]["limits"]["ephemeral-storage"]
        == upstream_leader["resources"]["limits"]["ephemeral-storage"]
    )
    assert "meta-llama/Llama-3.1-405B-Instruct" in upstream_leader["command"][-1]
    # the same model, from the claim it was downloaded into once (upstream downloads it in every pod)
    assert leader["args"][:3] == ["vllm", "serve", "/models/meta-llama/Llama-3.1-405B-Instruct"]
    service = objects_of(result)["service.yaml"]
    assert service["spec"]["type"] == upstream_service["spec"]["type"] == "ClusterIP"
    # upstream selects role: leader (any LWS); ours selects the leaders of this LWS only
    assert "role" in upstream_service["spec"]["selector"]
    assert service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"] == "vllm-llama31-405b"
