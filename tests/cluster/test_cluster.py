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
    kserve = any((example.out_dir / f).exists() for f in ("inferenceservice.yaml", "llminferenceservice.yaml"))
    if kserve and not cluster.kserve:
        pytest.skip("make kserve builds KServe's controllers")
    if (example.out_dir / "inferenceservice.yaml").exists():
        problems = flow.inference_service(cluster, example)
    else:
        problems = flow.run(cluster, example)
    dead = cluster.alive()
    assert not dead, dead
    assert not problems, "\n".join(problems)
