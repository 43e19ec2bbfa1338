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
    problems = flow.run(cluster, Example(name, PROFILES / f"{name}.yaml", REPO / "out" / name))
    dead = cluster.alive()
    assert not dead, dead
    assert not problems, "\n".join(problems)
