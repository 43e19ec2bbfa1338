"""Issue #35 req 4: KEDA's operator (github.com/kedacore/keda/v2 v2.21.0, built by make keda from its
module's source) reconciles the scale-to-zero example's rendered ScaledObject on the real control
plane: it accepts both triggers, reports the object Ready, and makes the HPA through which it scales
the LeaderWorkerSet (/scale) with the rendered bounds and behaviour, one external metric per trigger.
The triggers' queries go to a real Prometheus (Debian's) evaluating the example's recording rules,
reached at the in-cluster name the triggers give: the operator runs in a mount namespace whose
/etc/hosts names loopback for it. With no load the set is idle, so KEDA, which has never seen it
active, scales it to zero through /scale. (Before Prometheus answered, the operator first said Ready
and then, at its first poll, "Triggers defined in ScaledObject are not working correctly".) The
metric path under load is test_autoscaling's."""

from __future__ import annotations

import shutil
import socket
import urllib.parse

import pytest

import fastyaml
from lwsgen.quantity import parse as quantity
from tests.cluster.api import load_all, wait_for
from tests.cluster.checks import LWS
from tests.cluster.controlplane import BIN, binary, free_port
from tests.cluster.deploy import REPO, Example, apply_all, provide
from tests.cluster.metrics import PROMETHEUS, _exited, _ok

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not (BIN / "keda-operator").exists(), reason="KEDA's operator: make keda builds it (make test-cluster does)"
    ),
]

EXAMPLE = "vllm-llama31-70b-scale-to-zero"
KEDA_CRDS = BIN.parent / "keda-crds"  # make keda copies them from the same source archive
SCALED_OBJECT = ("keda.sh/v1alpha1", "ScaledObject")


def _condition(obj: dict, kind: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _prometheus(cluster, root, objects: list[dict], port: int) -> None:
    """Prometheus on the port the triggers name, evaluating the example's recording rules."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"127.0.0.1:{port}, the port the triggers name, is taken: stop what listens there")
    groups = [g for o in objects if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]
    (root / "rules.yml").write_text(fastyaml.dump({"groups": groups}))
    config = {"global": {"evaluation_interval": "1s"}, "rule_files": [str(root / "rules.yml")]}
    (root / "prometheus.yml").write_text(fastyaml.dump(config))
    process = cluster.spawn("keda-prometheus", [
        PROMETHEUS, "--config.file", str(root / "prometheus.yml"), "--storage.tsdb.path", str(root / "tsdb"),
        "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "warn",
    ])  # fmt: skip
    url = f"http://127.0.0.1:{port}/-/ready"
    wait_for("Prometheus ready", lambda: _ok(url) or _exited(process, cluster), attempts=240)


def _operator(cluster, certs, host: str) -> None:
    """The operator as KEDA's own `make run` starts it (Makefile@v2.21.0: KEDA_CLUSTER_OBJECT_NAMESPACE=keda,
    WATCH_NAMESPACE empty), with the serving certificate its gRPC metrics service reads from --cert-dir."""
    serving, key = cluster.pki.issue("keda-operator", "keda-operator", server_names="IP:127.0.0.1")
    for made, name in ((serving, "tls.crt"), (key, "tls.key"), (cluster.pki.ca, "ca.crt")):
        shutil.copy(made, certs / name)
    kubeconfig = cluster.pki.kubeconfig("keda", cluster.server, "keda-operator", group="system:masters")
    env = {"KUBECONFIG": str(kubeconfig), "WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": "keda"}
    argv = [
        binary("keda-operator"), "--leader-elect=false", "--enable-cert-rotation=false", f"--cert-dir={certs}",
        f"--metrics-bind-address=127.0.0.1:{free_port()}", f"--health-probe-bind-address=127.0.0.1:{free_port()}",
        f"--metrics-service-bind-address=127.0.0.1:{free_port()}",
    ]  # fmt: skip
    hosts = certs / "hosts"
    hosts.write_text(f"127.0.0.1 localhost {host}\n")
    in_own_mounts = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount --bind "$0" /etc/hosts && exec "$@"',
    ]
    cluster.admin.ensure_namespace("keda")
    cluster.spawn("keda-operator", [*in_own_mounts, str(hosts), *argv], env)


def test_keda_reconciles_the_rendered_scaled_object(cluster, tmp_path):
    api = cluster.admin
    for path in sorted(KEDA_CRDS.glob("*.yaml")):
        for crd in load_all(path.read_text()):
            if crd["metadata"]["name"] != "scaledobjects.keda.sh":  # installed from ../shared/crds
                api.apply(crd)
    example = Example(EXAMPLE, REPO / "profiles" / f"{EXAMPLE}.yaml", REPO / "out" / EXAMPLE)
    objects = example.objects()
    provide(api, example, objects)
    assert apply_all(api, example, objects) == []
    [rendered] = [o for o in objects if o["kind"] == "ScaledObject"]
    name, namespace, spec = rendered["metadata"]["name"], rendered["metadata"]["namespace"], rendered["spec"]
    server = urllib.parse.urlsplit(spec["triggers"][0]["metadata"]["serverAddress"])
    assert {t["metadata"]["serverAddress"] for t in spec["triggers"]} == {server.geturl()}
    _prometheus(cluster, tmp_path, objects, server.port)
    _operator(cluster, tmp_path, server.hostname)
    try:

        def judged():
            assert not cluster.alive(), cluster.alive()
            obj = api.get(*SCALED_OBJECT, name, namespace)
            polled = _condition(obj, "Active").get("status") in ("True", "False")  # its triggers answered
            return obj if polled and _condition(obj, "Ready").get("status") in ("True", "False") else None

        scaled = wait_for("KEDA's verdict on the ScaledObject, after a poll", judged, attempts=600)
        assert _condition(scaled, "Ready")["status"] == "True", scaled["status"]
        assert _condition(scaled, "Active")["status"] == "False", scaled["status"]  # idle: no queue
        assert scaled["status"]["scaleTargetGVKR"]["group"] == "leaderworkerset.x-k8s.io"
        hpa_name = scaled["status"]["hpaName"]
        hpa = wait_for(
            "the HPA KEDA makes",
            lambda: api.find("autoscaling/v2", "HorizontalPodAutoscaler", hpa_name, namespace),
            attempts=600,
        )["spec"]
        assert hpa["scaleTargetRef"] == spec["scaleTargetRef"]
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (max(spec["minReplicaCount"], 1), spec["maxReplicaCount"])
        assert hpa["behavior"] == spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        targets = [
            (m["external"]["target"]["type"], quantity(m["external"]["target"]["averageValue"])) for m in hpa["metrics"]
        ]
        assert targets == [(t["metricType"], quantity(t["metadata"]["threshold"])) for t in spec["triggers"]]
        lws = rendered["spec"]["scaleTargetRef"]["name"]
        wait_for(
            "KEDA scales the idle set to zero (never active: no cooldown to wait)",
            lambda: api.get(LWS, "LeaderWorkerSet", lws, namespace)["spec"].get("replicas") == 0,
            attempts=600,
        )
    finally:
        cluster.retire("keda-operator")
        cluster.retire("keda-prometheus")
