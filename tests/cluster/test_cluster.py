"""make test-cluster: every example applied to the real control plane (tests/cluster/controlplane.py)
and followed through the real controllers, scheduler and webhooks (flow.py); each prints
`<example> PASS|FAIL` with what failed (conftest.py)."""

from __future__ import annotations

import pytest

from tests.cluster import flow
from tests.cluster.deploy import REPO, Example
from tests.conftest import PROFILES

pytestmark = pytest.mark.cluster

EXAMPLES = sorted(p.stem for p in PROFILES.glob("*.yaml"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example(cluster, name):
    example = Example(name, PROFILES / f"{name}.yaml", REPO / "out" / name)
    if (example.out_dir / "inferenceservice.yaml").exists():  # KServe's InferenceService controller is not run
        problems = flow.applied_only(cluster, example)
        assert not problems, "\n".join(problems)
        pytest.skip("every object taken by the API server; KServe's InferenceService controller does not run here")
    if (example.out_dir / "llminferenceservice.yaml").exists() and not cluster.kserve:
        pytest.skip("make kserve builds KServe's LLMInferenceService controller")
    problems = flow.run(cluster, example)
    dead = cluster.alive()
    assert not dead, dead
    assert not problems, "\n".join(problems)
