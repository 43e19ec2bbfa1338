"""The escape hatches (docs/escape-hatches.md): pod fields for both roles and per role, Service
ports, HPA behavior and KEDA scale to zero, patches and user templates; what each produces, and
that none of them changes what lwsgen derives or opens what security.* keeps shut."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest

import fastyaml
from conftest import REPO, lws_of, merged, objects_of, tool
from lwsgen.output.hatches import merge
from lwsgen.problems import ProblemsError

BASE = {
    "name": "example",
    "namespace": "inference",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.33.0",
    "model": {"path": "/models/llama"},
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8, "gpuProduct": "NVIDIA-H100-80GB-HBM3", "cpu": "96", "memory": "1000Gi"},
    "storage": {"claimName": "models", "mountPath": "/models"},
    "monitoring": {"enabled": True},
    "service": {"type": "ClusterIP"},
}
GATEWAY = {"enabled": True, "parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}]}
LIMITS = {"limits": {"cpu": "200m", "memory": "128Mi"}}
SIDECAR = {"name": "log-shipper", "image": "fluent/fluent-bit:3.2.4", "resources": LIMITS}
PROXY = {
    "name": "auth-proxy",
    "image": "quay.io/oauth2-proxy/oauth2-proxy:v7.8.1",
    "ports": [{"name": "auth", "containerPort": 4180}],
    "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
}


def _with(**fields) -> dict:
    return {**copy.deepcopy(BASE), **copy.deepcopy(fields)}


def _pods(rendered) -> tuple[dict, dict]:
    lwt = lws_of(rendered)["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"], lwt["workerTemplate"]


def _ops(kind: str, *operations: dict) -> dict:
    """A JSON 6902 patch of the one object of a kind."""
    return {"target": {"kind": kind}, "jsonPatch": list(operations)}


def _errors(render, profile) -> list[str]:
    with pytest.raises(ProblemsError) as raised:
        render(profile)
    return [f"{p.path}: {p.message}" for p in raised.value.problems]


# --- pod fields ---------------------------------------------------------------------------------


def test_pod_fields_reach_both_roles_and_role_settings_only_theirs(render):
    rendered = render(
        _with(
            podAnnotations={"fluentbit.io/parser": "json"},
            podLabels={"team": "inference"},
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
            volumes=[{"name": "chat-templates", "configMap": {"name": "chat-templates"}}],
            volumeMounts=[{"name": "chat-templates", "mountPath": "/etc/chat-templates", "readOnly": True}],
            containers=[SIDECAR],
            dnsConfig={"options": [{"name": "ndots", "value": "2"}]},
            leader={"containers": [PROXY], "podAnnotations": {"fluentbit.io/parser": "leader"}},
            worker={"podLabels": {"team": "workers"}, "dnsConfig": {"searches": ["svc.example"]}},
        )
    )
    leader, worker = _pods(rendered)
    assert leader["metadata"]["annotations"]["fluentbit.io/parser"] == "leader"
    assert worker["metadata"]["annotations"]["fluentbit.io/parser"] == "json"
    assert leader["metadata"]["labels"]["team"] == "inference" and worker["metadata"]["labels"]["team"] == "workers"
    assert [c["name"] for c in leader["spec"]["containers"]] == ["leader", "log-shipper", "auth-proxy"]
    assert [c["name"] for c in worker["spec"]["containers"]] == ["worker", "log-shipper"]
    assert worker["spec"]["dnsConfig"] == {"searches": ["svc.example"]}
    assert leader["spec"]["dnsConfig"] == {"options": [{"name": "ndots", "value": "2"}]}
    for pod in (leader, worker):
        assert pod["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
        assert {"name": "chat-templates", "configMap": {"name": "chat-templates"}} in pod["spec"]["volumes"]
        assert pod["spec"]["containers"][0]["volumeMounts"][-1]["mountPath"] == "/etc/chat-templates"
    # pod labels are never selected on
    selector = objects_of(rendered)["service.yaml"]["spec"]["selector"]
    assert "team" not in selector


def test_the_gpu_product_is_required_in_every_term_of_the_profiles_affinity(render):
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    pool = {"key": "pool", "operator": "In", "values": ["gpu"]}
    anti = {"preferredDuringSchedulingIgnoredDuringExecution": []}
    written = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchExpressions": [pool]}]
            }
        },
        "podAntiAffinity": anti,
    }
    leader, _ = _pods(render(_with(affinity=written)))
    product = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
    terms = leader["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [{"matchExpressions": [zone, product]}, {"matchExpressions": [pool, product]}]
    assert leader["spec"]["affinity"]["podAntiAffinity"] == anti


def test_the_nccl_test_runs_on_the_nodes_the_affinity_picks_not_beside_other_pods(render):
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    written = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}
        },
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
    }
    rendered = render(_with(affinity=written, ncclTest={"enabled": True, "launcher": "job"}))
    job = next(d for d in objects_of(rendered)["nccl-test.yaml"] if d["kind"] == "Job")
    placed = job["spec"]["template"]["spec"]["affinity"]
    assert list(placed) == ["nodeAffinity"]
    terms = placed["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert (
        terms[0]["matchExpressions"][0] == zone and terms[0]["matchExpressions"][1]["key"] == "nvidia.com/gpu.product"
    )


def test_role_env_args_and_resources_go_to_that_roles_engine_only(render):
    rendered = render(
        _with(
            env={"NCCL_DEBUG": "WARN"},
            leader={"env": {"NCCL_DEBUG": "INFO"}, "args": ["--max-num-seqs", 128, "$(HF_TOKEN)"]},
            worker={"resources": {"memory": "900Gi", "hugepages-2Mi": "1Gi"}},
        )
    )
    leader, worker = (pod["spec"]["containers"][0] for pod in _pods(rendered))
    assert [e["value"] for e in leader["env"] if e["name"] == "NCCL_DEBUG"] == ["INFO"]
    assert [e["value"] for e in worker["env"] if e["name"] == "NCCL_DEBUG"] == ["WARN"]
    assert leader["args"][-3:] == ["--max-num-seqs", "128", "$$(HF_TOKEN)"]  # literal text, never the Secret
    assert worker["resources"]["limits"]["memory"] == "900Gi" == worker["resources"]["requests"]["memory"]
    assert worker["resources"]["limits"]["hugepages-2Mi"] == "1Gi"
    assert leader["resources"]["limits"]["memory"] == "1000Gi"


def test_sidecars_are_hardened_like_lwsgens_own_unless_they_say_otherwise(render):
    mine = {**SIDECAR, "securityContext": {"readOnlyRootFilesystem": True, "runAsUser": 1000}}
    leader, _ = _pods(render(_with(security={"runAsUser": 500}, containers=[mine], initContainers=[PROXY])))
    sidecar = leader["spec"]["containers"][1]
    assert sidecar["securityContext"] == {
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "runAsUser": 1000,
    }
    assert sidecar["imagePullPolicy"] == "IfNotPresent"
    assert leader["spec"]["initContainers"][-1]["name"] == "auth-proxy"
    assert leader["spec"]["initContainers"][-1]["securityContext"]["runAsUser"] == 500


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"volumes": [{"name": "dshm", "emptyDir": {}}]}, "volumes[0].name: lwsgen names a volume 'dshm'"),
        ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, "volumes[0].hostPath: a hostPath volume"),
        (
            {"volumes": [{"name": "c", "emptyDir": {}}], "volumeMounts": [{"name": "c", "mountPath": "/dev/shm/x"}]},
            "volumeMounts[0].mountPath: /dev/shm/x overlaps where lwsgen mounts shared memory",
        ),
        ({"volumeMounts": [{"name": "nope", "mountPath": "/x"}]}, "volumeMounts[0].name: no volume 'nope'"),
        ({"containers": [{"name": "s", "image": "a:1"}]}, "containers[0]: needs resources.limits.cpu"),
        ({"containers": [{**SIDECAR, "resources": {"limits": {"cpu": 1}}}]}, "needs resources.limits.memory"),
        (
            {
                "containers": [
                    {**SIDECAR, "resources": {"requests": {"memory": "64Mi"}, "limits": {"cpu": 1, "memory": "1Gi"}}}
                ]
            },
            "containers[0].resources.requests.memory: requests memory below or without its limit",
        ),
        (
            {"containers": [{**SIDECAR, "resources": {"limits": {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": 1}}}]},
            "containers[0].resources: nvidia.com/gpu is the engine's",
        ),
        (
            {"containers": [{**SIDECAR, "securityContext": {"privileged": True}}]},
            "containers[0].securityContext.privileged: privileged gives the container the node",
        ),
        (
            {"containers": [{**SIDECAR, "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]},
            "containers[0].securityContext.capabilities.add[0]: capability SYS_ADMIN is not kept",
        ),
        ({"containers": [{**SIDECAR, "name": "leader"}]}, "containers[0].name: lwsgen names a container 'leader'"),
        ({"containers": [SIDECAR], "leader": {"initContainers": [SIDECAR]}}, "a second container named 'log-shipper'"),
        ({"podLabels": {"app.kubernetes.io/name": "x"}}, 'podLabels["app.kubernetes.io/name"]: pod label'),
        (
            {"podAnnotations": {"kueue.x-k8s.io/podset-group-name": "x"}},
            "lwsgen derives it; set scheduling.requiredTopology instead",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["A100"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "nvidia.com/gpu.product is required from node.gpuProduct in every term",
        ),
        ({"leader": {"resources": {"vpc.amazonaws.com/efa": 4}}}, "comes from the node shape; set node.efa instead"),
        ({"worker": {"env": {"LWS_WORKER_INDEX": "1"}}}, "worker.env.LWS_WORKER_INDEX: LWS_WORKER_INDEX is set by"),
        ({"affinity": {"nodeAfinity": {}}}, "affinity.nodeAfinity: unknown field 'nodeAfinity'"),
        (
            {
                "containers": [
                    {
                        **SIDECAR,
                        "args": ["--key=$(KEY)"],
                        "env": [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                    }
                ]
            },
            "containers[0].args[0]: $(KEY) puts a Secret on the process's command line",
        ),
        ({"podAnnotations": {"big": "x" * 300_000}}, "podAnnotations: pod annotations total 300003 bytes"),
        (
            {"leader": {"containers": [{**SIDECAR, "imagePull": "x"}]}},
            "leader.containers[0].imagePull: unknown field 'imagePull'",
        ),
    ],
)
def test_pod_fields_that_would_undo_or_open_something_are_refused(render, fields, expected):
    errors = _errors(render, _with(**fields))
    assert any(expected in e for e in errors), errors


def test_worker_args_are_refused_where_the_worker_runs_no_command_of_its_own(render):
    ray = _with(launch={"mode": "ray"}, worker={"args": ["--verbose"]})
    assert any("worker.args: the vllm worker runs no command of its own" in e for e in _errors(render, ray))


def test_a_hatch_value_is_checked_where_the_profile_sets_it(write_profile, tmp_path, capsys):
    from lwsgen.cli import main

    text = fastyaml.dump(_with(), sort_keys=False) + "leader:\n  dnsConfig:\n    nameserver: [1.1.1.1]\n"
    assert main(["render", str(write_profile(text)), "-o", str(tmp_path / "out")]) == 1
    line = len(text.splitlines())
    assert f"profile.yaml:{line}:5: leader.dnsConfig.nameserver: unknown field 'nameserver'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- Service and scaling ------------------------------------------------------------------------


def test_service_port_extra_ports_and_traffic_policy(render):
    rendered = render(
        _with(
            service={
                "type": "LoadBalancer",
                "port": 80,
                "externalTrafficPolicy": "Local",
                "loadBalancerSourceRanges": ["10.0.0.0/8"],
                "extraPorts": [{"name": "auth", "port": 443}, {"name": "dns", "port": 53, "protocol": "UDP"}],
            },
            leader={
                "containers": [
                    {**PROXY, "ports": [*PROXY["ports"], {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}
                ]
            },
        )
    )
    objects = objects_of(rendered)
    spec = objects["service.yaml"]["spec"]
    assert spec["externalTrafficPolicy"] == "Local"
    assert [(p["name"], p["port"], p["targetPort"], p["protocol"]) for p in spec["ports"]] == [
        ("http", 80, "http", "TCP"),
        ("auth", 443, "auth", "TCP"),
        ("dns", 53, "dns", "UDP"),
    ]
    open_rule = objects["networkpolicy.yaml"]["spec"]["ingress"][0]
    assert open_rule["ports"] == [
        {"port": "http", "protocol": "TCP"},
        {"port": "auth", "protocol": "TCP"},
        {"port": "dns", "protocol": "UDP"},
    ]


@pytest.mark.parametrize(
    ("service", "expected"),
    [
        ({"externalTrafficPolicy": "Local"}, "only applies to service.type LoadBalancer or NodePort"),
        ({"extraPorts": [{"name": "nope", "port": 9}]}, "extraPorts[0].name: no sidecar port 'nope' on the leader pod"),
        ({"extraPorts": [{"name": "x", "port": 9, "targetPort": "master"}]}, "no sidecar port 'master'"),
        (
            {"extraPorts": [{"name": "auth", "port": 9, "protocol": "UDP"}]},
            "'auth' is a TCP port; this Service port is UDP",
        ),
        ({"extraPorts": [{"name": "http", "port": 9, "targetPort": "http"}]}, "'http' is the serving port's name"),
        ({"port": 81, "extraPorts": [{"name": "auth", "port": 81}]}, "port 81 is already a port"),
    ],
)
def test_service_hatches_that_cannot_work_are_refused(render, service, expected):
    errors = _errors(render, _with(service={"type": "ClusterIP", **service}, leader={"containers": [PROXY]}))
    assert any(expected in e for e in errors), errors


def test_behind_a_gateway_extra_ports_need_someone_allowed_to_reach_them(render):
    profile = _with(
        gateway=GATEWAY, service={"extraPorts": [{"name": "auth", "port": 443}]}, leader={"containers": [PROXY]}
    )
    assert any("say who reaches them" in e for e in _errors(render, profile))
    allowed = merged(profile, **{"service.allowedNamespaces": ["clients"]})
    rule = objects_of(render(allowed))["networkpolicy.yaml"]["spec"]["ingress"][0]
    assert {"port": "auth", "protocol": "TCP"} in rule["ports"]


def test_hpa_behavior_replaces_only_the_directions_given(render):
    rules = {
        "stabilizationWindowSeconds": 60,
        "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 600}],
    }
    hpa = objects_of(render(_with(autoscaling={"enabled": True, "behavior": {"scaleUp": rules}})))
    behavior = hpa["horizontalpodautoscaler.yaml"]["spec"]["behavior"]
    assert behavior["scaleUp"] == rules
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 600  # lwsgen's, untouched


def _to_zero(**autoscaling) -> dict:
    scaling = {"enabled": True, "engine": "keda", "minReplicas": 0, "metric": "router-queue-size", "target": 4}
    return _with(gateway={**GATEWAY, "requestTimeout": "900s"}, autoscaling={**scaling, **autoscaling})


def test_keda_scales_to_zero_behind_the_gateway_and_wakes_on_held_requests(render):
    rendered = render(_to_zero(activationTarget=1))
    objects = objects_of(rendered)
    spec = objects["scaledobject.yaml"]["spec"]
    assert spec["minReplicaCount"] == 0
    main, wake = spec["triggers"]
    assert main["metadata"]["activationThreshold"] == "1"
    assert wake["name"] == "active"
    assert wake["metadata"]["query"] == (
        '(sum(llm_d_epp_flow_control_queue_size{namespace="inference", inference_pool="example"}) or vector(0))'
        ' + (max(llm_d_epp_average_queue_size{namespace="inference", name="example"}) or vector(0))'
        ' + (max(llm_d_epp_average_running_requests{namespace="inference", name="example"}) or vector(0))'
    )
    assert wake["metadata"]["threshold"] == "1000000" and wake["metadata"]["activationThreshold"] == "0"
    assert spec["cooldownPeriod"] == 600  # the profile's scaleDownStabilizationSeconds, not KEDA's 300
    picker = next(d for d in objects["endpoint-picker.yaml"] if d["kind"] == "ConfigMap")
    config = fastyaml.load(next(iter(picker["data"].values())))
    assert config["featureGates"] == ["flowControl"]
    assert config["flowControl"] == {"defaultRequestTTL": "900s"}
    assert any(w.code == "cold-start" for w in rendered.warnings)  # 900 s < the start budget
    patient = render(merged(_to_zero(), **{"gateway.requestTimeout": "1h"}))
    assert not any(w.code == "cold-start" for w in patient.warnings)


def test_idle_replicas_keep_a_minimum_once_active(render):
    spec = objects_of(render(_to_zero(minReplicas=1, idleReplicas=0)))["scaledobject.yaml"]["spec"]
    assert (spec["idleReplicaCount"], spec["minReplicaCount"]) == (0, 1)
    assert len(spec["triggers"]) == 2


def test_without_scale_to_zero_the_picker_and_scaledobject_stay_as_they_were(render):
    objects = objects_of(render(_to_zero(minReplicas=1)))
    assert len(objects["scaledobject.yaml"]["spec"]["triggers"]) == 1
    picker = next(d for d in objects["endpoint-picker.yaml"] if d["kind"] == "ConfigMap")
    assert "featureGates" not in fastyaml.load(next(iter(picker["data"].values())))


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (_to_zero(engine="hpa"), "autoscaling.minReplicas: minReplicas is KEDA's"),
        ({**_to_zero(), "gateway": {"enabled": False}}, "no pod exports the metric that would wake the autoscaler"),
        (_to_zero(idleReplicas=0), "autoscaling.idleReplicas: KEDA needs idleReplicas below minReplicas"),
        (
            _to_zero(minReplicas=1, engine="hpa", activationTarget=2),
            "autoscaling.activationTarget: activationTarget is KEDA's",
        ),
    ],
)
def test_scale_to_zero_where_nothing_could_wake_it_is_refused(render, profile, expected):
    assert any(expected in e for e in _errors(render, profile))


# --- strategic merge ----------------------------------------------------------------------------


def test_strategic_merge_follows_kubernetes_merge_keys_and_directives():
    original = {
        "spec": {
            "containers": [{"name": "a", "env": [{"name": "X", "value": "1"}], "args": ["--x"]}, {"name": "b"}],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "ports": [{"name": "p", "port": 80}],
            "tolerations": [{"key": "t"}],
            "labels": {"keep": "1", "drop": "2"},
        }
    }
    result = merge.merge(
        original,
        {
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "Y", "value": "2"}], "args": ["--y"]},
                    {"name": "b", "$patch": "delete"},
                    {"name": "c", "image": "c:1"},
                ],
                "volumes": [{"name": "w", "emptyDir": {}}, {"$patch": "replace"}],
                "ports": [{"port": 80, "targetPort": "p"}],
                "tolerations": [{"key": "u"}],
                "labels": {"drop": None, "new": "3"},
            }
        },
    )
    spec = result["spec"]
    assert spec["containers"] == [
        {"name": "a", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}], "args": ["--y"]},
        {"name": "c", "image": "c:1"},
    ]  # the patch's elements first, then the original's others: the order kustomize gives
    assert spec["volumes"] == [{"name": "w", "emptyDir": {}}]  # $patch: replace
    assert spec["ports"] == [{"name": "p", "port": 80, "targetPort": "p"}]  # Service ports merge on port
    assert spec["tolerations"] == [{"key": "u"}]  # no merge key: replaced
    assert spec["labels"] == {"keep": "1", "new": "3"}
    assert original["spec"]["containers"][1] == {"name": "b"}  # the original is left as it was


@pytest.mark.parametrize(
    ("written", "where"),
    [
        ({"spec": {"$setElementOrder/containers": [{"name": "a"}]}}, ("spec", "$setElementOrder/containers")),
        ({"spec": {"$patch": "bogus"}}, ("spec", "$patch")),
        ({"spec": {"containers": [{"image": "no-name"}]}}, ("spec", "containers", 0)),
    ],
)
def test_strategic_merge_refuses_what_it_cannot_do_at_its_place(written, where):
    with pytest.raises(merge.PatchError) as raised:
        merge.merge({"spec": {"containers": [{"name": "a"}]}}, written)
    assert raised.value.path == where


PATCHES = [
    {
        "target": {"kind": "LeaderWorkerSet"},
        "patch": {
            "spec": {
                "leaderWorkerTemplate": {
                    "leaderTemplate": {
                        "spec": {
                            "terminationGracePeriodSeconds": 120,
                            "containers": [{"name": "leader", "lifecycle": {"preStop": {"sleep": {"seconds": 60}}}}],
                        }
                    },
                    "workerTemplate": {
                        "spec": {
                            "containers": [{"name": "worker", "env": [{"name": "NCCL_DEBUG_SUBSYS", "value": "INIT"}]}]
                        }
                    },
                }
            }
        },
    },
    {"target": {"kind": "Service", "name": "example-leader"}, "patch": {"spec": {"sessionAffinity": "ClientIP"}}},
]


def test_patches_apply_before_validation(render):
    rendered = render(
        _with(
            patches=PATCHES
            + [
                _ops(
                    "LeaderWorkerSet",
                    {
                        "op": "add",
                        "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/terminationGracePeriodSeconds",
                        "value": 90,
                    },
                )
            ]
        )
    )
    objects = objects_of(rendered)
    leader, worker = _pods(rendered)
    assert leader["spec"]["terminationGracePeriodSeconds"] == 120
    assert leader["spec"]["containers"][0]["lifecycle"] == {"preStop": {"sleep": {"seconds": 60}}}
    assert leader["spec"]["containers"][0]["command"]  # merged into, not replaced
    assert worker["spec"]["containers"][0]["env"][0] == {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT"}
    assert objects["service.yaml"]["spec"]["sessionAffinity"] == "ClientIP"
    assert worker["spec"]["terminationGracePeriodSeconds"] == 90


def _openapi_with_lws() -> dict:
    """Kubernetes' definitions (with their patch merge keys) as an OpenAPI document for kustomize's
    `openapi:`, plus LeaderWorkerSet with its two templates declared PodTemplateSpecs."""
    import json

    from lwsgen.kubeschemas import schema_dir

    text = (schema_dir("1.33") / "_definitions.json").read_text(encoding="utf-8")
    definitions = json.loads(text.replace("#/$defs/", "#/definitions/"))["$defs"]
    template = {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}
    definitions["io.x-k8s.leaderworkerset.v1.LeaderWorkerSet"] = {
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": "leaderworkerset.x-k8s.io", "kind": "LeaderWorkerSet", "version": "v1"}
        ],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "leaderWorkerTemplate": {
                        "type": "object",
                        "properties": {"leaderTemplate": template, "workerTemplate": template},
                    }
                },
            }
        },
    }
    return {
        "swagger": "2.0",
        "info": {"title": "kubernetes", "version": "1.33"},
        "paths": {},
        "definitions": definitions,
    }


@pytest.mark.tools
def test_strategic_merge_gives_what_kubectl_kustomize_gives(render, tmp_path):
    """The same patches through kustomize (patches: of a kustomization over the unpatched output),
    told by `openapi:` that a LeaderWorkerSet's templates are PodTemplateSpecs (without it kustomize
    replaces a custom resource's lists whole)."""
    plain, patched = render(_with()), render(_with(patches=PATCHES))
    base = tmp_path / "base"
    base.mkdir()
    for name, text in plain.files.items():
        (base / name).write_text(text, encoding="utf-8")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    entries = []
    for index, entry in enumerate(PATCHES):
        kind, name = entry["target"]["kind"], entry["target"].get("name", "example")
        body = {
            "apiVersion": "leaderworkerset.x-k8s.io/v1" if kind == "LeaderWorkerSet" else "v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "inference"},
            **entry["patch"],
        }
        (overlay / f"p{index}.yaml").write_text(fastyaml.dump(body), encoding="utf-8")
        entries.append({"path": f"p{index}.yaml"})
    (overlay / "schema.json").write_text(fastyaml.dump(_openapi_with_lws()), encoding="utf-8")
    kustomization = {"resources": ["../base"], "patches": entries, "openapi": {"path": "schema.json"}}
    (overlay / "kustomization.yaml").write_text(fastyaml.dump(kustomization), encoding="utf-8")
    built = subprocess.run([tool("kubectl"), "kustomize", str(overlay)], capture_output=True, text=True, check=True)
    theirs = {(o["kind"], o["metadata"]["name"]): o for o in fastyaml.load_all(built.stdout) if o}
    ours = {
        (o["kind"], o["metadata"]["name"]): o
        for t in patched.files.values()
        for o in fastyaml.load_all(t)
        if o and "metadata" in o
    }
    for key in (("LeaderWorkerSet", "example"), ("Service", "example-leader")):
        assert ours[key] == theirs[key]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"target": {"kind": "LeaderWorkerSet"}, "patch": {"spec": {"leaderWorkerTemplate": {"size": 3}}}},
            "patches[0]: patch 1 changes LeaderWorkerSet example spec.leaderWorkerTemplate.size; lwsgen derives it "
            "from parallelism and node.gpus: change that instead",
        ),
        (
            _ops("Service", {"op": "replace", "path": "/spec/selector", "value": {"a": "b"}}),
            "spec.selector; lwsgen derives it from name",
        ),
        (
            _ops(
                "LeaderWorkerSet",
                {
                    "op": "replace",
                    "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image",
                    "value": "x:1",
                },
            ),
            "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image; lwsgen derives it from image",
        ),
        (
            _ops(
                "LeaderWorkerSet",
                {"op": "add", "path": "/spec/leaderWorkerTemplate/leaderTemplate/spec/hostNetwork", "value": True},
            ),
            "hostNetwork is not allowed for this profile; set security.allowHostNetwork to allow it",
        ),
        (
            {
                "target": {"kind": "LeaderWorkerSet"},
                "patch": {
                    "spec": {
                        "leaderWorkerTemplate": {
                            "leaderTemplate": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "leader",
                                            "args": ["$(TOKEN)"],
                                            "env": [
                                                {
                                                    "name": "TOKEN",
                                                    "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                                                }
                                            ],
                                        }
                                    ]
                                }
                            }
                        }
                    }
                },
            },
            "$(TOKEN) puts a Secret on the process's command line",
        ),
        (
            _ops("NetworkPolicy", {"op": "remove", "path": "/spec/ingress/1"}),
            "lwsgen derives it from security.networkPolicy, service.allowedSources",
        ),
        (
            {"target": {"kind": "Service"}, "patch": {"spec": {"sessionAffinityConfig": {"bogus": 1}}}},
            "patches[0]: patch 1: Service example-leader spec.sessionAffinityConfig.bogus: unknown field 'bogus'",
        ),
        (
            {
                "target": {"kind": "LeaderWorkerSet"},
                "patch": {
                    "spec": {
                        "leaderWorkerTemplate": {
                            "leaderTemplate": {
                                "spec": {
                                    "containers": [
                                        {"name": "leader", "ports": [{"containerPort": 8080, "name": "web"}]}
                                    ]
                                }
                            }
                        }
                    }
                },
            },
            "containers[0].ports; lwsgen derives it from runtime (the engine's ports)",
        ),
        (
            {
                "target": {"kind": "LeaderWorkerSet"},
                "patch": {
                    "spec": {
                        "leaderWorkerTemplate": {
                            "workerTemplate": {"spec": {"containers": [{"name": "shipper", "image": "a:1"}]}}
                        }
                    }
                },
            },
            "the engine's container stays first: list it first in the patch",
        ),
        ({"target": {"kind": "Deployment"}, "patch": {}}, "patches[0].target: no Deployment in the output; its kinds:"),
        (
            {"target": {"kind": "ConfigMap", "name": "x"}, "patch": {}},
            "no ConfigMap named 'x'; the ConfigMaps: example-dashboard, example-launch",
        ),
        (
            _ops("Service", {"op": "test", "path": "/spec/type", "value": "NodePort"}),
            "patches[0].jsonPatch[0]: test /spec/type:",
        ),
    ],
)
def test_a_patch_that_changes_what_lwsgen_derives_or_breaks_a_rule_is_refused_at_the_patch(render, entry, expected):
    errors = _errors(render, _with(patches=[entry]))
    assert any(expected in e for e in errors), errors


def test_several_objects_of_a_kind_need_a_name(render):
    profile = _with(gateway=GATEWAY, patches=[{"target": {"kind": "Service"}, "patch": {}}])
    assert any("2 objects of kind Service" in e and "name the one to patch" in e for e in _errors(render, profile))


# --- user templates -----------------------------------------------------------------------------

PDB = """{% from "_k8s.yaml.j2" import meta %}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  {{ meta(v.meta) | indent(2) }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {{ v.leader_selector | q }}
"""


def _templates(tmp_path: Path, **files: str) -> None:
    folder = tmp_path / "hatch-templates"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.yaml.j2").write_text(text, encoding="utf-8")


def test_a_template_adds_a_validated_kind_to_the_kustomization(render, tmp_path):
    _templates(tmp_path, poddisruptionbudget=PDB)
    rendered = render(_with(templates="hatch-templates"))
    objects = objects_of(rendered)
    pdb = objects["poddisruptionbudget.yaml"]
    assert pdb["metadata"]["name"] == "example-poddisruptionbudget"
    assert pdb["spec"]["selector"]["matchLabels"] == objects["service.yaml"]["spec"]["selector"]
    assert "poddisruptionbudget.yaml" in objects["kustomization.yaml"]["resources"]


def test_a_templates_leading_zero_number_is_the_octal_kubernetes_reads(render, tmp_path):
    """YAML 1.1, which the API server's reader and PyYAML follow: 010 is 8. lwsgen wrote 10 before."""
    _templates(tmp_path, poddisruptionbudget=PDB.replace("maxUnavailable: 1", "maxUnavailable: 010"))
    pdb = objects_of(render(_with(templates="hatch-templates")))["poddisruptionbudget.yaml"]
    assert pdb["spec"]["maxUnavailable"] == 8


def test_a_template_replaces_lwsgens_and_keeps_what_it_derives(render, tmp_path):
    service = (
        (REPO / "templates" / "service.yaml.j2")
        .read_text()
        .replace("spec:\n", "spec:\n  sessionAffinity: ClientIP\n", 1)
    )
    _templates(tmp_path, service=service)
    spec = objects_of(render(_with(templates="hatch-templates")))["service.yaml"]["spec"]
    assert spec["sessionAffinity"] == "ClientIP"


def _lws_template_with_spec_written_out() -> str:
    """lwsgen's LeaderWorkerSet template with its spec macro (lws_spec, shared with the
    DisaggregatedSet's roles) written out in place, as a user copying it would."""
    macros = (REPO / "templates" / "_k8s.yaml.j2").read_text()
    body = macros.split("{% macro lws_spec(v) %}\n", 1)[1].split("{% endmacro %}", 1)[0]
    spec = "\n".join(("  " + line) if line else line for line in body.rstrip("\n").split("\n"))
    text = (REPO / "templates" / "leaderworkerset.yaml.j2").read_text()
    text = text.replace("import meta, lws_spec", "import meta, pod_template")
    return text.replace("  {{ lws_spec(v) | indent(2) }}", spec.replace("| indent(4) }}", "| indent(6) }}"))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"leaderworkerset": _lws_template_with_spec_written_out().replace("size: {{ v.size | q }}", "size: 4")},
            "templates/leaderworkerset.yaml.j2 changes LeaderWorkerSet example spec.leaderWorkerTemplate.size",
        ),
        ({"service": "apiVersion: v1\nkind: Service\nmetadata: {name: {{ v.meta.name }}}\n"}, "without the q filter"),
        ({"service": "kind: {{ v.nothing | q }}\n"}, "UndefinedError"),
        ({"service": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}, "leaves out Service example-leader"),
        ({"scaledobject": PDB}, "replaces lwsgen's scaledobject, which this profile does not emit"),
        ({"kustomization": PDB}, "lwsgen builds kustomization.yaml from the files"),
        ({"Bad_Name": PDB}, "a kind's name is lower-case letters"),
        (
            {"widget": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: inference}\n"},
            "no schema for example.com/v1 Widget",
        ),
        (
            {
                "widget": (
                    "apiVersion: batch/v1\nkind: Job\nmetadata: {name: w, namespace: inference}\nspec:\n  template:\n"
                    "    spec:\n      restartPolicy: Never\n      hostPID: true\n      containers:\n      - name: w\n"
                    "        image: busybox:1.37\n"
                )
            },
            "hostPID: lwsgen never runs a pod's containers in the node's PID namespace",
        ),
    ],
)
def test_a_template_that_changes_what_lwsgen_derives_or_escapes_the_filter_is_refused(
    render, tmp_path, files, expected
):
    _templates(tmp_path, **files)
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("where", "expected"), [("../elsewhere", "inside this profile's directory"), ("nowhere", "no directory")]
)
def test_the_templates_directory_must_be_beside_the_profile(render, tmp_path, where, expected):
    (tmp_path.parent / "elsewhere").mkdir(exist_ok=True)
    assert any(expected in e for e in _errors(render, _with(templates=where)))


@pytest.mark.tools
def test_kustomize_builds_a_directory_with_every_hatch(tmp_path):
    from lwsgen.cli import main

    (tmp_path / ".git").mkdir()
    _templates(tmp_path, poddisruptionbudget=PDB)
    profile = _with(templates="hatch-templates", patches=PATCHES, containers=[SIDECAR], podLabels={"team": "a"})
    (tmp_path / "profile.yaml").write_text(fastyaml.dump(profile), encoding="utf-8")
    assert main(["render", str(tmp_path / "profile.yaml"), "-o", str(tmp_path / "out")]) == 0
    built = subprocess.run(
        [tool("kubectl"), "kustomize", str(tmp_path / "out" / "example")], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    assert {o["kind"] for o in fastyaml.load_all(built.stdout)} >= {"PodDisruptionBudget", "LeaderWorkerSet"}


# --- the examples of docs/escape-hatches.md -----------------------------------------------------

DOC = (REPO / "docs" / "escape-hatches.md").read_text(encoding="utf-8")
EXAMPLES = re.findall(r"```yaml\n(.*?)```(?:\n> `(.*?)`)?", DOC, re.S)


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_every_example_in_the_docs_renders_or_is_refused_as_shown(render, tmp_path, index):
    text, refusal = EXAMPLES[index]
    [jinja] = re.findall(r"```jinja\n(.*?)```", DOC, re.S)
    _templates(tmp_path, poddisruptionbudget=jinja)
    profile = {**_with(), **fastyaml.load(text)}
    if text.startswith("# refused"):
        assert refusal, "a refused example shows its message"
        assert any(refusal in e for e in _errors(render, profile))
    else:
        assert render(profile).files


@pytest.mark.tools
def test_the_active_query_counts_every_request_of_this_pool_and_zero_when_none(render, tmp_path):
    """The ScaledObject's `active` query, evaluated by promtool over the picker's gauges: this pool's
    held, waiting and running requests (not a look-alike pool's or another namespace's), and 0, not
    nothing, when the pool has no endpoints (absent averages) or the picker holds nothing."""
    query = objects_of(render(_to_zero()))["scaledobject.yaml"]["spec"]["triggers"][1]["metadata"]["query"]
    (tmp_path / "rules.yaml").write_text(
        fastyaml.dump({"groups": [{"name": "active", "rules": [{"record": "test:active:sum", "expr": query}]}]})
    )
    held, queue, running = (
        "llm_d_epp_flow_control_queue_size",
        "llm_d_epp_average_queue_size",
        "llm_d_epp_average_running_requests",
    )
    busy = [
        (held, 'namespace="inference", inference_pool="example", priority="0", fairness_id="a"', "3+0x4"),
        (held, 'namespace="inference", inference_pool="example", priority="-1", fairness_id="b"', "2+0x4"),
        (held, 'namespace="inference", inference_pool="example-1", priority="0", fairness_id="a"', "40+0x4"),
        (held, 'namespace="staging", inference_pool="example", priority="0", fairness_id="a"', "50+0x4"),
        (queue, 'namespace="inference", name="example", pod="epp-a"', "1+0x4"),
        (queue, 'namespace="inference", name="example", pod="epp-b"', "1+0x4"),  # two picker replicas: max
        (running, 'namespace="inference", name="example", pod="epp-a"', "7+0x4"),
        (running, 'namespace="inference", name="example-1", pod="epp-c"', "90+0x4"),
    ]
    idle = [(running, 'namespace="staging", name="example", pod="epp-d"', "9+0x4")]
    for series, expected in ((busy, 13), (idle, 0)):
        test = {
            "rule_files": ["rules.yaml"],
            "tests": [
                {
                    "interval": "15s",
                    "input_series": [{"series": f"{g}{{{labels}}}", "values": v} for g, labels, v in series],
                    "promql_expr_test": [
                        {
                            "expr": "test:active:sum",
                            "eval_time": "30s",
                            "exp_samples": [{"labels": "test:active:sum", "value": expected}],
                        }
                    ],
                }
            ],
        }
        (tmp_path / "test.yaml").write_text(fastyaml.dump(test))
        result = subprocess.run(
            [tool("promtool"), "test", "rules", str(tmp_path / "test.yaml")], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


# --- what an independent review found open, now closed ------------------------------------------

LWS_POD = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {}}}}}


def _pod_patch(**spec) -> dict:
    return {
        "target": {"kind": "LeaderWorkerSet"},
        "patch": merged(LWS_POD, **{f"spec.leaderWorkerTemplate.leaderTemplate.spec.{k}": v for k, v in spec.items()}),
    }


def _leader_json(path: str, value, op="replace") -> dict:
    return _ops(
        "LeaderWorkerSet",
        {
            "op": op,
            "path": f"/spec/leaderWorkerTemplate/leaderTemplate/spec/{path}",
            **({} if op == "remove" else {"value": value}),
        },
    )


ENGINE = {"name": "leader"}


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            _pod_patch(
                containers=[ENGINE, {"name": "miner", "image": "a:1", "resources": {"limits": {"nvidia.com/gpu": 8}}}]
            ),
            "containers[1].resources: nvidia.com/gpu is the engine's",
        ),
        (_pod_patch(containers=[ENGINE, {"name": "s", "image": "a:1"}]), "containers[1]: needs resources.limits.cpu"),
        (
            _pod_patch(containers=[{**ENGINE, "ports": [{"containerPort": 9000, "hostPort": 9000}]}]),
            "lwsgen derives it from runtime (the engine's ports)",
        ),
        (
            _pod_patch(containers=[ENGINE, {**SIDECAR, "ports": [{"containerPort": 9000, "hostPort": 9000}]}]),
            "containers[1].ports[0].hostPort: a hostPort takes a port of the node",
        ),
        (
            _pod_patch(
                containers=[ENGINE, {**SIDECAR, "envFrom": [{"secretRef": {"name": "s"}}], "args": ["--t=$(token)"]}]
            ),
            "containers[1].args[0]: $(token) puts a Secret on the process's command line",
        ),
        (_leader_json("containers/0/securityContext", None, op="remove"), "lwsgen derives it from security.*"),
        (
            _pod_patch(securityContext={"seccompProfile": {"type": "Unconfined"}}),
            "lwsgen derives it from security.runAsUser",
        ),
        (
            _pod_patch(shareProcessNamespace=True),
            "shareProcessNamespace: lwsgen never runs a pod's containers in one process",
        ),
        (
            _leader_json("containers/0/args/0", "sleep"),
            "lwsgen derives it from model.extraArgs, leader.args and worker.args",
        ),
        (_leader_json("containers/0/startupProbe/failureThreshold", 1), "lwsgen derives it from model.startSeconds"),
        (_leader_json("affinity", None, op="remove"), "lwsgen derives it from affinity and node.gpuProduct"),
        (_leader_json("tolerations", [], op="replace"), "lwsgen derives it from node.tolerations"),
        (_leader_json("volumes/0", None, op="remove"), "lwsgen derives it from storage.* and node.shmSize"),
        (
            _ops("PrometheusRule", {"op": "replace", "path": "/spec/groups/0/rules/0/expr", "value": "vector(1000)"}),
            "lwsgen derives it from monitoring.*",
        ),
        (
            {
                "target": {"kind": "LeaderWorkerSet"},
                "patch": {"metadata": {"annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "zone"}}},
            },
            "lwsgen derives it from the scheduling fields",
        ),
        (
            _pod_patch(containers=[{**ENGINE, "env": [{"name": "LWSGEN_LEADER_PORT", "value": "1"}]}]),
            "lwsgen derives it from env (lwsgen's own variables)",
        ),
        (
            {
                "target": {"kind": "LeaderWorkerSet"},
                "patch": {
                    "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": [{"name": ["x"]}]}}}}
                },
            },
            "the merge key 'name' must be a string or a number",
        ),
        (
            _ops("Service", {"op": "replace", "path": "", "value": [1, 2]}),
            "leaves no object, but a list",
        ),
    ],
)
def test_patches_cannot_reach_what_lwsgen_derives_or_keeps_shut(render, entry, expected):
    errors = _errors(render, _with(patches=[entry]))
    assert any(expected in e for e in errors), errors


def test_a_patch_may_still_add_a_sidecar_that_follows_the_rules(render):
    rendered = render(
        _with(
            patches=[
                _pod_patch(
                    containers=[
                        ENGINE,
                        {
                            **SIDECAR,
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        },
                    ]
                )
            ]
        )
    )
    leader, _ = _pods(rendered)
    assert [c["name"] for c in leader["spec"]["containers"]] == ["leader", "log-shipper"]


def test_an_error_in_an_object_no_hatch_touched_is_said_at_the_hatches(write_profile):
    """Cross-object errors in an object lwsgen wrote as it was, once a hatch changed another: at
    `patches`, since the written files (where they would point) are never written."""
    from lwsgen.load import load
    from lwsgen.output.hatches import Hatch
    from lwsgen.pipeline import _output_problems

    src = load(write_profile(_with(patches=[PATCHES[1]])))
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "example-leader", "namespace": "inference"},
        "spec": {
            "selector": {"leaderworkerset.sigs.k8s.io/name": "gone", "leaderworkerset.sigs.k8s.io/worker-index": "0"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }
    files = {"service.yaml": fastyaml.dump(service)}
    origins = {("other.yaml", 0): Hatch(("patches", 0), "patch 1")}
    problems = _output_problems("out/example", files, {"service.yaml": (service,)}, "1.33", src, origins)
    assert problems and all(
        p.path == "patches" and p.message.startswith("after the patches, service.yaml") for p in problems
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"containers": [{**SIDECAR, "ports": [{"containerPort": 80, "hostPort": 80}]}]},
            "hostPort takes a port of the node",
        ),
        (
            {"containers": [{**SIDECAR, "envFrom": [{"secretRef": {"name": "s"}}], "args": ["$(PASSWORD)"]}]},
            "$(PASSWORD) puts a Secret",
        ),
        (
            {"podAnnotations": {"container.apparmor.security.beta.kubernetes.io/leader": "unconfined"}},
            "the containers keep the runtime's AppArmor",
        ),
        (
            {"containers": [{**SIDECAR, "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]},
            "Unconfined lifts the runtime's default",
        ),
        ({"containers": [{**SIDECAR, "securityContext": {"procMount": "Unmasked"}}]}, "an unmasked /proc"),
        (
            {"containers": [{**SIDECAR, "volumeMounts": [{"name": "model", "mountPath": "/m"}]}]},
            "lwsgen's volume 'model' is mounted read-only",
        ),
        (
            {"containers": [{**SIDECAR, "volumeMounts": [{"name": "nope", "mountPath": "/m"}]}]},
            "containers[0].volumeMounts[0].name: no volume 'nope'",
        ),
        (
            {"security": {"runAsUser": 1000}, "containers": [{**SIDECAR, "securityContext": {"runAsUser": 0}}]},
            "cannot run as root in them",
        ),
        (
            {"containers": [SIDECAR, {**SIDECAR, "image": "evil:1"}]},
            "containers[1].name: a second entry with name 'log-shipper'",
        ),
        ({"volumes": [{"name": "Bad_Vol", "emptyDir": {}}]}, "'Bad_Vol' is not a DNS-1123 label"),
        (
            {"containers": [{**SIDECAR, "ports": [{"name": "http", "containerPort": 81}]}]},
            "the engine's container has a port named 'http'",
        ),
        (
            {"containers": [{**SIDECAR, "ports": [{"name": "Web_UI", "containerPort": 81}]}]},
            "'Web_UI' is not a port name",
        ),
    ],
)
def test_pod_field_holes_an_independent_review_found_are_refused(render, fields, expected):
    errors = _errors(render, _with(**fields))
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            _with(autoscaling={"behavior": {"scaleUp": {"selectPolicy": "Max"}}}),
            "autoscaling.behavior: behavior applies to an autoscaler",
        ),
        (
            _with(autoscaling={"enabled": True, "engine": "keda", "activationTarget": 1}),
            "it applies with minReplicas 0 or idleReplicas 0",
        ),
    ],
)
def test_scaling_fields_that_would_do_nothing_are_refused(render, profile, expected):
    assert any(expected in e for e in _errors(render, profile))


def test_scale_to_zero_past_the_gateway_is_warned_about(render):
    rendered = render(
        merged(_to_zero(), **{"service.type": "LoadBalancer", "service.loadBalancerSourceRanges": ["10.0.0.0/8"]})
    )
    assert any(w.code == "bypass" for w in rendered.warnings)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"ssti": "data: {{ cycler.__init__.__globals__.os.popen('id').read() | q }}\n"}, "unsafe"),
        (
            {"leak": '{% filter replace("NAME", v.profile.model.path) %}k: NAME{% endfilter %}\n'},
            "block writes its text without the q filter",
        ),
        (
            {
                "open": (
                    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
                    "metadata: {name: all, namespace: inference}\nspec: {podSelector: {}, ingress: [{}]}\n"
                )
            },
            "policies add up",
        ),
        (
            {
                "admin": (
                    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}\n"
                    "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
                    "subjects: []\n"
                )
            },
            "is cluster-scoped",
        ),
        (
            {"away": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\n"},
            "must be the profile's namespace 'inference'",
        ),
        (
            {
                "expose": (
                    "apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: inference}\n"
                    "spec: {type: LoadBalancer, selector: {leaderworkerset.sigs.k8s.io/name: example}, "
                    "ports: [{port: 29501}]}\n"
                )
            },
            "use service.extraPorts",
        ),
        (
            {"again": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: example-launch, namespace: inference}\n"},
            "ConfigMap example-launch is in both",
        ),
        ({"listed": "- a\n- b\n"}, "writes a list, not an object"),
        ({"broken": "a: [\n"}, "writes YAML that does not parse"),
    ],
)
def test_templates_an_independent_review_found_open_are_refused(render, tmp_path, files, expected):
    _templates(tmp_path, **files)
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any(expected in e for e in errors), errors


@pytest.mark.tools
def test_strategic_merge_orders_directives_and_nulls_as_kubectl_kustomize_does(tmp_path):
    """merge.merge against kustomize on a Deployment (a kind kustomize knows the merge keys of):
    containers, env, ports and volumes merged by key, new elements first, a deleted element, a null
    and a directive inside a new map."""
    base = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"a": "1", "drop": "x"}},
        "spec": {
            "selector": {"matchLabels": {"a": "1"}},
            "template": {
                "metadata": {"labels": {"a": "1"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c1",
                            "image": "x",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 80, "name": "http"}],
                        },
                        {"name": "c2", "image": "y", "args": ["--a"]},
                    ],
                    "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}],
                },
            },
        },
    }
    written = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"drop": None, "new": "2"}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c3", "image": "z"},
                        {
                            "name": "c1",
                            "env": [{"name": "N", "value": "n"}, {"name": "A", "$patch": "delete"}],
                            "ports": [{"containerPort": 81, "name": "metrics"}],
                        },
                        {"name": "c2", "args": ["--b"]},
                    ],
                    "volumes": [{"name": "v2", "$patch": "delete"}],
                    "dnsConfig": {"options": [{"name": "ndots", "value": "2"}], "searches": None},
                }
            }
        },
    }
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(fastyaml.dump(base))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [d.yaml]\n")
    (tmp_path / "p.yaml").write_text(fastyaml.dump(written))
    (tmp_path / "kustomization.yaml").write_text("resources: [base]\npatches: [{path: p.yaml}]\n")
    built = subprocess.run([tool("kubectl"), "kustomize", str(tmp_path)], capture_output=True, text=True, check=True)
    assert merge.merge(base, written) == fastyaml.load(built.stdout)


@pytest.mark.parametrize("path", sorted((REPO / "profiles").glob("*.yaml")), ids=lambda p: p.stem)
def test_what_lwsgen_derives_has_none_of_the_holes_a_hatch_is_refused_for(path):
    """The hole rules hold for lwsgen's own objects: a template that writes lwsgen's object as it
    is, or a patch that changes nothing, is never refused."""
    from lwsgen.output.guards import podsecurity
    from lwsgen.pipeline import render_profile

    rendered = render_profile(path)
    for name, text in rendered.files.items():
        if name == "nccl-test.yaml":
            continue  # its MPI workers run sshd, which keeps a few capabilities: only new holes count there
        for obj in fastyaml.load_all(text):
            if isinstance(obj, dict):
                assert list(podsecurity.holes(rendered.profile, obj, obj)) == [], name


@pytest.mark.parametrize(
    "key", ["leaderworkerset", "nccl-test", "service", "networkpolicy", "endpoint-picker", "scaledobject"]
)
def test_lwsgens_own_template_as_a_profile_template_renders_the_same_bytes(render, tmp_path, key):
    """The sandbox and the hatch rules accept lwsgen's own templates unchanged."""
    profile = _to_zero(minReplicas=1)
    profile["ncclTest"] = {"enabled": True, "launcher": "mpijob", "image": "ghcr.io/example/nccl-tests:2.16"}
    plain = render(profile)
    _templates(tmp_path, **{key: (REPO / "templates" / f"{key}.yaml.j2").read_text(encoding="utf-8")})
    assert render({**profile, "templates": "hatch-templates"}).files == plain.files


def test_several_templates_at_once_are_each_held_to_lwsgens_own_object(render, tmp_path):
    """Each template's objects are compared with lwsgen's own of its file, whatever templates came
    before it: an added one (the PodDisruptionBudget) or replaced ones (a review found the second
    file compared with the first one's object, and a crash after an added one)."""
    own = ("service", "networkpolicy", "leaderworkerset")
    files = {key: (REPO / "templates" / f"{key}.yaml.j2").read_text(encoding="utf-8") for key in own}
    _templates(tmp_path, poddisruptionbudget=PDB, **files)
    plain = render(_with())
    hatched = render(_with(templates="hatch-templates"))
    assert {
        name: text
        for name, text in hatched.files.items()
        if "poddisruptionbudget" not in name and name != "kustomization.yaml"
    } == {name: text for name, text in plain.files.items() if name != "kustomization.yaml"}
    _templates(
        tmp_path, leaderworkerset=_lws_template_with_spec_written_out().replace("size: {{ v.size | q }}", "size: 4")
    )
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any("changes LeaderWorkerSet example spec.leaderWorkerTemplate.size" in e for e in errors), errors


def test_a_patch_gives_exactly_one_of_its_two_forms(write_profile, tmp_path, capsys):
    from lwsgen.cli import main

    text = fastyaml.dump(_with(), sort_keys=False) + (
        "patches:\n- target: {kind: Service}\n  patch: {spec: {}}\n  jsonPatch: [{op: add, path: /spec/a, value: 1}]\n"
        "- target: {kind: Service}\n"
    )
    assert main(["render", str(write_profile(text)), "-o", str(tmp_path / "out")]) == 1
    lines = len(text.splitlines())
    err = capsys.readouterr().err
    assert f"profile.yaml:{lines - 3}:3: patches[0]: give exactly one of 'patch' or 'jsonPatch'" in err
    assert f"profile.yaml:{lines}:3: patches[1]: give exactly one of 'patch' or 'jsonPatch'" in err


def test_templates_are_found_beside_the_profile_that_names_them(write_profile, tmp_path):
    """A base in another folder that sets templates: its folder, not the overlay's, holds them."""
    from lwsgen.pipeline import render_profile

    base = tmp_path / "bases"
    (base / "hatch-templates").mkdir(parents=True)
    (base / "hatch-templates" / "poddisruptionbudget.yaml.j2").write_text(PDB, encoding="utf-8")
    write_profile(_with(templates="hatch-templates"), "bases/base.yaml")
    overlay = write_profile({"extends": "bases/base.yaml", "name": "other"}, "overlay.yaml")
    rendered = render_profile(overlay)
    assert objects_of(rendered)["poddisruptionbudget.yaml"]["metadata"]["name"] == "other-poddisruptionbudget"


# --- what a second review found open, now closed ------------------------------------------------

TRITON = "triton-llama3-405b.yaml"


def _example(name: str, **changes) -> dict:
    return {**fastyaml.load((REPO / "profiles" / name).read_text(encoding="utf-8")), **changes}


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            _example(
                TRITON,
                patches=[
                    _ops(
                        "Role",
                        {
                            "op": "add",
                            "path": "/rules/-",
                            "value": {"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]},
                        },
                    )
                ],
            ),
            "lwsgen derives it from runtime (what its launcher may do)",
        ),
        (
            _example(
                TRITON,
                patches=[
                    _ops(
                        "RoleBinding",
                        {"op": "add", "path": "/subjects/-", "value": {"kind": "ServiceAccount", "name": "default"}},
                    )
                ],
            ),
            "lwsgen derives it from runtime (who may act as its launcher)",
        ),
        (
            _with(
                gateway=GATEWAY,
                patches=[
                    _ops(
                        "Deployment",
                        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "evil:1"},
                    )
                ],
            ),
            "these pods run with their ServiceAccount's token, so what runs in them is lwsgen's",
        ),
        (
            _with(
                gateway=GATEWAY,
                patches=[_ops("Deployment", {"op": "add", "path": "/spec/template/spec/nodeName", "value": "gpu-1"})],
            ),
            "nodeName skips the scheduler",
        ),
        (
            _with(patches=[_pod_patch(resourceClaims=[{"name": "gpu", "resourceClaimName": "x"}])]),
            "DRA claims are not lwsgen's",
        ),
        (
            _with(
                containers=[SIDECAR],
                patches=[
                    _pod_patch(
                        containers=[
                            ENGINE,
                            {
                                "name": "log-shipper",
                                "resources": {"$patch": "replace", "limits": {"nvidia.com/gpu": "8"}},
                            },
                        ]
                    )
                ],
            ),
            "containers[1].resources: nvidia.com/gpu is the engine's",
        ),
        (
            _with(patches=[{"target": {"kind": "Service"}, "patch": {"spec": {"externalIPs": ["203.0.113.9"]}}}]),
            "a Service's addresses are lwsgen's",
        ),
        (
            {**_to_zero(), "patches": [{"target": {"kind": "ScaledObject"}, "patch": {"spec": {"cooldownPeriod": 0}}}]},
            "lwsgen derives it from autoscaling.*",
        ),
        (
            _with(
                gateway=GATEWAY,
                patches=[{"target": {"kind": "HTTPRoute"}, "patch": {"spec": {"hostnames": ["x.example"]}}}],
            ),
            "from gateway.*",
        ),
        (
            _with(
                env={"FI_EFA_USE_DEVICE_RDMA": "1"},
                patches=[
                    {
                        "target": {"kind": "LeaderWorkerSet"},
                        "patch": {
                            "spec": {
                                "leaderWorkerTemplate": {
                                    "leaderTemplate": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "leader",
                                                    "env": [{"name": "FI_EFA_USE_DEVICE_RDMA", "$patch": "delete"}],
                                                }
                                            ]
                                        }
                                    }
                                }
                            }
                        },
                    }
                ],
            ),
            "does not change or remove it",
        ),
        (
            _with(patches=[_ops("Service", {"op": "replace", "path": "/spec", "value": [1]})]),
            "spec: [1] is not of types",
        ),
        (_with(patches=[_pod_patch(containers=[ENGINE, "sidecar"])]), "each element of containers needs its merge key"),
        (_with(patches=[_pod_patch(containers=[{**ENGINE, "securityContext": ["x"]}])]), "patches[0]: patch 1"),
    ],
)
def test_patches_a_second_review_found_open_are_refused(render, profile, expected):
    errors = _errors(render, profile)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"containers": [{**SIDECAR, "ports": [{"name": "x", "containerPort": 29501}]}]}, "port 29501 is the engine's"),
        ({"containers": [{**SIDECAR, "ports": [{"name": "x", "containerPort": 8080}]}]}, "port 8080 is the engine's"),
        (
            {"volumes": [{"name": "mine", "persistentVolumeClaim": {"claimName": "models"}}]},
            "'models' is the model's claim",
        ),
        (
            {"containers": [{**SIDECAR, "resources": {"limits": {"cpu": "lots", "memory": "1Gi"}}}]},
            "'lots' is not a Kubernetes quantity",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]},
            "maxSkew must be 1 or more",
        ),
        ({"podLabels": {"kueue.x-k8s.io/queue-name": "q"}}, "set by lwsgen, LeaderWorkerSet or Kueue"),
    ],
)
def test_pod_fields_a_second_review_found_open_are_refused(render, fields, expected):
    errors = _errors(render, _with(**fields))
    assert any(expected in e for e in errors), errors


DEPLOYMENT = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: x, namespace: inference}}\nspec:\n"
    "  selector: {{matchLabels: {labels}}}\n  template:\n    metadata: {{labels: {labels}}}\n    spec:\n"
    "      containers: [{{name: x, image: 'busybox:1.37'}}]\n"
)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "_m": '{% macro m(x) %}{% filter replace("N", x) %}k: N{% endfilter %}{% endmacro %}\n',
                "uses": '{% from "_m.yaml.j2" import m %}{{ m(v.profile.model.path) }}\n',
            },
            "without the q filter",
        ),
        (
            {
                "slice": (
                    "apiVersion: discovery.k8s.io/v1\n"
                    "kind: EndpointSlice\n"
                    "metadata: {name: s, namespace: inference}\n"
                    "addressType: IPv4\n"
                    "endpoints: []\n"
                )
            },
            "a EndpointSlice: traffic reaches the pods through lwsgen's Service",
        ),
        (
            {
                "ing": (
                    "apiVersion: networking.k8s.io/v1\n"
                    "kind: Ingress\n"
                    "metadata: {name: i, namespace: inference}\n"
                    "spec: {}\n"
                )
            },
            "a Ingress",
        ),
        (
            {
                "token": (
                    "apiVersion: v1\n"
                    "kind: Secret\n"
                    "metadata: {name: t, namespace: inference}\n"
                    "type: kubernetes.io/service-account-token\n"
                )
            },
            "a ServiceAccount token is the cluster's",
        ),
        (
            {
                "pods": DEPLOYMENT.format(
                    labels='{"leaderworkerset.sigs.k8s.io/name": example, '
                    '"leaderworkerset.sigs.k8s.io/worker-index": "0"}'
                )
            },
            "its pods carry labels lwsgen's Services",
        ),
        ({"kustomizeconfig": "x: 1\n"}, "lwsgen builds kustomizeconfig.yaml"),
        ({"syntax": "{{ \n"}, "TemplateSyntaxError"),
        ({"divide": "a: {{ (1 // 0) | q }}\n"}, "ZeroDivisionError"),
        (
            {
                "dated": (
                    "apiVersion: v1\n"
                    "kind: ConfigMap\n"
                    "metadata: {name: d, namespace: inference}\n"
                    "data: {when: 2024-01-01}\n"
                )
            },
            "(quote it)",
        ),
    ],
)
def test_templates_a_second_review_found_open_are_refused(render, tmp_path, files, expected):
    _templates(tmp_path, **files)
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any(expected in e for e in errors), errors


def test_a_template_cannot_include_a_file_outside_its_directory(render, tmp_path):
    secret = tmp_path.parent / f"{tmp_path.name}-outside"
    secret.mkdir()
    (secret / "token").write_text("s3cr3t", encoding="utf-8")
    _templates(tmp_path, leak='data: {% include "out/token" %}\n')
    (tmp_path / "hatch-templates" / "out").symlink_to(secret)
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any("TemplateNotFound" in e for e in errors) and not any("s3cr3t" in e for e in errors), errors


def test_a_template_that_is_not_utf8_is_a_problem(render, tmp_path):
    _templates(tmp_path)
    (tmp_path / "hatch-templates" / "latin.yaml.j2").write_bytes(b"a: \xe9\n")
    assert any("latin.yaml.j2" in e for e in _errors(render, _with(templates="hatch-templates")))


def test_strategic_merge_keeps_ports_of_two_protocols_and_drops_directives_of_new_lists():
    original = {"ports": [{"containerPort": 53, "protocol": "UDP"}]}
    result = merge.merge(
        original, {"ports": [{"containerPort": 53, "protocol": "TCP"}], "volumes": [{"name": "v", "$patch": "delete"}]}
    )
    assert result == {
        "ports": [{"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}],
        "volumes": [],
    }


def test_an_output_error_in_a_profile_sidecar_is_said_at_the_sidecar(write_profile, tmp_path, capsys):
    from lwsgen.cli import main

    sidecar = {**SIDECAR, "ports": [{"name": "web", "containerPort": 70000}]}
    text = fastyaml.dump(_with(containers=[sidecar]), sort_keys=False)
    assert main(["render", str(write_profile(text)), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "profile.yaml:" in err and "containers[0].ports[0].containerPort: 70000 is not a port" in err
    assert err.count("70000") == 1 and "out/" not in err


# --- what a third review found open, now closed -------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (
            _with(
                volumes=[{"name": "evil", "configMap": {"name": "evil"}}],
                patches=[
                    _pod_patch(
                        containers=[
                            {
                                **ENGINE,
                                "volumeMounts": [
                                    {"name": "evil", "mountPath": "/lwsgen/scripts/await-leader.sh", "subPath": "x.sh"}
                                ],
                            }
                        ]
                    )
                ],
            ),
            "overlaps /lwsgen/scripts, where lwsgen mounts its own",
        ),
        (
            _with(
                gateway=GATEWAY,
                patches=[
                    {
                        "target": {"kind": "Deployment"},
                        "patch": {
                            "spec": {
                                "template": {
                                    "metadata": {
                                        "labels": {
                                            "leaderworkerset.sigs.k8s.io/name": "example",
                                            "leaderworkerset.sigs.k8s.io/worker-index": "0",
                                        }
                                    }
                                }
                            }
                        },
                    }
                ],
            ),
            "lwsgen derives it from podLabels",
        ),
        (
            _with(
                patches=[_pod_patch(hostAliases=[{"ip": "203.0.113.9", "hostnames": ["example-0.example.inference"]}])]
            ),
            "names resolve as the cluster's DNS says",
        ),
        (
            _with(patches=[_pod_patch(dnsPolicy="None", dnsConfig={"nameservers": ["203.0.113.9"]})]),
            "lwsgen derives it from dnsConfig",
        ),
        (_with(patches=[_pod_patch(runtimeClassName="nvidia")]), "the GPU runtime is the node's"),
        (_with(patches=[_pod_patch(priority=1000000)]), "scheduling.priorityClassName"),
        (
            _with(
                patches=[
                    _pod_patch(containers=[ENGINE, {**SIDECAR, "volumeMounts": [{"name": "model", "mountPath": "/m"}]}])
                ]
            ),
            "lwsgen's volume 'model' is mounted read-only",
        ),
    ],
)
def test_patches_a_third_review_found_open_are_refused(render, profile, expected):
    errors = _errors(render, profile)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"containers": [{**SIDECAR, "securityContext": {"seLinuxOptions": {"type": "spc_t"}}}]},
            "SELinux type spc_t lifts",
        ),
        (
            {"containers": [{**SIDECAR, "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]},
            "chooses the node's GPUs past the device plugin",
        ),
        (
            {"volumes": [{"name": "g", "gitRepo": {"repository": "https://example.com/x.git"}}]},
            "a gitRepo volume runs git on the node",
        ),
        (
            {"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]},
            "a ServiceAccount token",
        ),
        (
            {
                "containers": [
                    {**SIDECAR, "resources": {"limits": {"cpu": 1, "memory": "1Gi"}, "claims": [{"name": "gpu"}]}}
                ]
            },
            "not claims",
        ),
    ],
)
def test_pod_fields_a_third_review_found_open_are_refused(render, fields, expected):
    errors = _errors(render, _with(**fields))
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "gpus": DEPLOYMENT.format(labels="{app: mine}").replace(
                    "image: 'busybox:1.37'", "image: 'busybox:1.37', resources: {limits: {nvidia.com/gpu: 8}}"
                )
            },
            "nvidia.com/gpu is the engine's",
        ),
        (
            {
                "weights": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: inference}\nspec:\n"
                "  containers: [{name: p, image: 'busybox:1.37', resources: {limits: {cpu: 1, memory: 1Gi}}, "
                "securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]\n"
                "  volumes: [{name: w, persistentVolumeClaim: {claimName: models}}]\n"
            },
            "the model's claim 'models' is lwsgen's to mount",
        ),
        (
            {"bad": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {a: b}, namespace: inference}\n"},
            "patches" if False else "ConfigMap",
        ),
        ({"listkey": "? [a]\n: b\n"}, "does not parse"),
    ],
)
def test_templates_a_third_review_found_open_are_refused(render, tmp_path, files, expected):
    _templates(tmp_path, **files)
    errors = _errors(render, _with(templates="hatch-templates"))
    assert any(expected in e for e in errors), errors


def test_a_sidecar_in_a_pod_with_the_launchers_token_is_warned_about(render):
    profile = _example(TRITON, containers=[SIDECAR])
    rendered = render(profile)
    assert any(w.code == "shares-token" for w in rendered.warnings)


def test_patch_or_template_malformed_containers_are_problems_not_crashes(render, tmp_path):
    ports = _pod_patch(containers=[{**ENGINE, "ports": ["http"]}])
    assert _errors(render, _with(patches=[ports]))
