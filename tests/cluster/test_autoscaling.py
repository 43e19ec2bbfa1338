"""Issue #35 req 4: the HPA scales a LeaderWorkerSet on the metric lwsgen's rules make. The example's
own recording rules run in real Prometheus, its own adapter rules in real prometheus-adapter, and the
HPA controller reads the result through the aggregation layer and the LWS /scale subresource
(metrics.py); only the raw series the engine, the endpoint picker and kube-state-metrics would
export are served by a stand-in exporter, for the set's real pods."""

from __future__ import annotations

import pytest
import yaml

from tests.cluster import checks, flow
from tests.cluster.api import wait_for
from tests.cluster.deploy import REPO, rendered_in
from tests.cluster.metrics import Exporter, MetricsPath, kube_pod_labels, series

pytestmark = pytest.mark.cluster

EXAMPLE = "vllm-llama31-405b"  # scales on the endpoint picker's queue, recorded per leader pod
NAMESPACE = "autoscale"
QUEUE = 40.0  # requests waiting in the pool: ten times the HPA's target of 4 per group


def _docs(path):
    return list(yaml.safe_load_all(path.read_text()))


def test_the_hpa_scales_the_set_on_the_rendered_metric(cluster, tmp_path):
    # its own node label: the group the HPA adds waits for nodes, and must not take a later test's
    own_nodes = {"lwsgen.test/pool": NAMESPACE}
    example = rendered_in(REPO / "profiles" / f"{EXAMPLE}.yaml", NAMESPACE, tmp_path, f"{EXAMPLE}-hpa", own_nodes)
    problems = flow.run(cluster, example)  # applied, made, placed, ready; its nodes cordoned after
    assert not problems, "\n".join(problems)
    api, out = cluster.admin, example.out_dir
    [hpa] = [d for d in _docs(out / "horizontalpodautoscaler.yaml") if d["kind"] == "HorizontalPodAutoscaler"]
    lws_name, start = hpa["spec"]["scaleTargetRef"]["name"], hpa["spec"]["minReplicas"]
    [pool] = [d["metadata"]["name"] for d in _docs(out / "inferencepool.yaml")]

    def exported() -> str:
        pods = api.list("v1", "Pod", NAMESPACE)
        return kube_pod_labels(pods) + series(
            "llm_d_epp_average_queue_size", {"namespace": NAMESPACE, "name": pool}, QUEUE
        )

    exporter = Exporter(exported)
    try:
        [rule] = _docs(out / "prometheusrule.yaml")
        adapter = _docs(out / "prometheus-adapter-rules.yaml")[0]["rules"]
        path = MetricsPath(cluster, tmp_path / "metrics").start(rule["spec"]["groups"], adapter, exporter)

        name = hpa["metadata"]["name"]

        def reading():
            status = api.get("autoscaling/v2", "HorizontalPodAutoscaler", name, NAMESPACE).get("status") or {}
            values = [m["pods"]["current"]["averageValue"] for m in status.get("currentMetrics") or [] if "pods" in m]
            return status if values and float(values[0]) == QUEUE else None

        try:
            status = wait_for(f"the HPA reads {QUEUE} from the custom metrics API", reading, attempts=240)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{path.explain(api)}") from None
        # lwsgen's scale-up policy lets one group in per 300 s, and raising the set to minReplicas
        # was a scale-up: the controller holds the next one back, and says so
        limited = {c["type"]: c for c in status["conditions"]}["ScalingLimited"]
        assert (limited["status"], limited["reason"]) == ("True", "ScaleUpLimit"), limited
        # as if the period had passed: the next group comes in through the LWS /scale subresource
        period = {"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}]}}}
        api.merge_patch("autoscaling/v2", "HorizontalPodAutoscaler", name, NAMESPACE, {"spec": period})

        def raised():
            lws = api.get(checks.LWS, "LeaderWorkerSet", lws_name, NAMESPACE)
            return lws if lws["spec"]["replicas"] > start else None

        lws = wait_for(f"the HPA raises {lws_name} above {start}", raised, attempts=240)
        assert lws["spec"]["replicas"] == start + 1  # one group per period, not the maximum at once
    finally:
        exporter.stop()
    assert not cluster.alive()
