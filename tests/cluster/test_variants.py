"""Issue #35 req 3 beyond the examples: the escape-hatch, disaggregated, scheduler and layout
variants of tests/cases/valid, each rendered into a namespace of its own and taken through the same
flow as the examples (flow.py): applied, made, placed, ready, selected, authorised."""

from __future__ import annotations

import pytest

from tests.cluster import flow
from tests.cluster.deploy import REPO, rendered_in

pytestmark = pytest.mark.cluster

CASES = REPO / "tests" / "cases" / "valid"
VARIANTS = (
    "escape-hatches",  # every hatch at once: pod fields, sidecars, patches, a template's PDB
    "vllm-encode-prefill-decode",  # a DisaggregatedSet of three roles behind the endpoint picker
    "kueue-topology-aware",  # Kueue's queue label and topology annotations, placed by kube-scheduler
    "single-pod-group",  # size 1: a set without workers
    "everything-set",  # every profile field at once: EFA and RDMA, taints, a priority class, a group per zone
    "sglang-prefill-decode-placed",  # a DisaggregatedSet of two slices, each kept in one rack (ExclusiveSlice)
    "kserve-pipeline",  # an LLMInferenceService of one stage per pod, with the preset KServe does not ship
    "kserve-exclusive-topology",  # two groups of KServe's LeaderWorkerSet, a zone each (KServe copies the annotation)
    "kserve-isvc-native",  # an InferenceService on KServe's mp backend: vLLM's own launch, no Ray
    "kserve-s3-model",  # model.uri s3://: KServe's storage initializer brings the weights to /mnt/models
    "kserve-oci-model",  # model.uri oci://: KServe's modelcar links /mnt/models into the image; the engine waits
    "kserve-pd-pipeline",  # spec.prefill: two LeaderWorkerSets KServe makes, both unshipped pipeline presets written
)
# volcano-gang: test_volcano_gang.py (a plane whose LWS controller makes PodGroups; no Volcano scheduler runs).


@pytest.mark.parametrize("case", VARIANTS)
def test_variant(cluster, case, tmp_path):
    if case.startswith("kserve") and not cluster.kserve:
        pytest.skip("make kserve builds KServe's LLMInferenceService controller")
    example = rendered_in(CASES / case / "profile.yaml", f"v-{case}", tmp_path, case)
    isvc = (example.out_dir / "inferenceservice.yaml").exists()
    problems = (flow.inference_service if isvc else flow.run)(cluster, example)
    dead = cluster.alive()
    assert not dead, dead
    assert not problems, "\n".join(problems)
