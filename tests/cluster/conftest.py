"""make test-cluster prints one line per example, `<example> PASS|FAIL`, and what failed under it."""

from __future__ import annotations

import pytest

from tests.cluster.controlplane import ControlPlane


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """One control plane for the session; each test's objects go to their own nodes."""
    plane = ControlPlane(tmp_path_factory.mktemp("cluster"))
    try:
        yield plane.start()
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def loopback_plane(tmp_path_factory):
    """A second control plane whose pods get loopback IPs (kwok --cidr 127.244.0.1/16): a process bound
    to a pod's IP is that pod's server, for the tests that run real servers behind real pods. Without
    KServe (its tests run on the first plane)."""
    plane = ControlPlane(tmp_path_factory.mktemp("loopback-plane"), pod_cidr="127.244.0.1/16", kserve=False)
    try:
        yield plane.start()
    finally:
        plane.stop()


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    example = report.nodeid.rsplit("[", 1)[-1].rstrip("]") if "[" in report.nodeid else report.nodeid.split("::")[-1]
    verdict = "PASS" if report.passed else "SKIP" if report.skipped else "FAIL"
    detail = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash else str(report.longrepr)
        detail = "".join(f"\n  {line}" for line in message.splitlines()[:40])
    print(f"\n{example} {verdict}{detail}", flush=True)
