"""The API server's rules of one kind (lwsgen/output/kindrules.py), each on a rendered object of an
example edited the way the real kube-apiserver v1.36.3 refused it in make test-cluster
(tests/cluster/test_hand_edits.py), and on `lwsgen validate` at its file and field."""

from __future__ import annotations

import copy
import shutil

import pytest

import fastyaml
from conftest import REPO
from lwsgen.cli import main
from lwsgen.output import validate

OUT = REPO / "out"


def _doc(example: str, file: str, kind: str) -> dict:
    return next(d for d in fastyaml.load_all((OUT / example / file).read_text()) if d["kind"] == kind)


def _errors(obj: dict) -> list[tuple[tuple, str]]:
    return [(tuple(f.path), f.message) for f in validate.schema_errors(obj, "1.33")]


def _without(obj: dict, *path) -> dict:
    edited = copy.deepcopy(obj)
    node = edited
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return edited


def test_rendered_objects_of_every_kind_pass():
    for example in ("triton-llama3-405b", "vllm-llama31-405b", "sglang-deepseek-r1", "sglang-deepseek-r1-pd"):
        for file in sorted((OUT / example).glob("*.yaml")):
            for doc in fastyaml.load_all(file.read_text()):
                if isinstance(doc, dict) and "apiVersion" in doc and doc.get("kind") != "Kustomization":
                    assert _errors(doc) == [], (example, file.name, doc["kind"])


@pytest.mark.parametrize(
    "field, message",
    [
        ("verbs", "verbs must contain at least one value"),
        ("apiGroups", "resource rules must supply at least one api group"),
        ("resources", "resource rules must supply at least one resource"),
    ],
)
def test_a_role_rule_needs_verbs_api_groups_and_resources(field, message):
    role = _doc("triton-llama3-405b", "role.yaml", "Role")
    role["rules"][0][field] = []  # deleting verbs is the schema's error; an empty list is the server's
    [(path, said)] = _errors(role)
    assert path == ("rules", 0, field) and said.startswith(message)


def test_a_role_has_no_non_resource_urls():
    role = _doc("triton-llama3-405b", "role.yaml", "Role")
    role["rules"][0] = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    assert _errors(role) == [(("rules", 0, "nonResourceURLs"), "namespaced rules cannot apply to non-resource URLs")]


def test_a_cluster_role_may_name_non_resource_urls_but_not_with_resources():
    role = _doc("triton-llama3-405b", "role.yaml", "Role") | {"kind": "ClusterRole"}
    role["metadata"].pop("namespace", None)
    role["rules"][0] = {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    assert _errors(role) == []
    role["rules"][0]["resources"] = ["pods"]
    assert _errors(role) == [
        (("rules", 0, "nonResourceURLs"), "rules cannot apply to both regular resources and non-resource URLs")
    ]


def test_a_disaggregated_set_role_mounts_only_its_volumes(tmp_path, capsys):
    """Each role's templates are pod templates too (a regression once: the rule ran for LWS only)."""
    directory = tmp_path / "pd"
    shutil.copytree(OUT / "sglang-deepseek-r1-pd", directory)
    path = directory / "disaggregatedset.yaml"
    path.write_text(
        path.read_text().replace(
            "- name: dshm\n                mountPath", "- name: nosuchvolume\n                mountPath"
        )
    )
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert "spec.roles[0].spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].volumeMounts" in out, out
    assert "'nosuchvolume' is not a volume of this pod" in out


def test_a_deployment_selector_is_not_empty_and_matches_its_template():
    picker = _doc("vllm-llama31-405b", "endpoint-picker.yaml", "Deployment")
    [(path, said)] = _errors(_without(picker, "spec", "selector", "matchLabels"))
    assert path == ("spec", "selector") and said.startswith("empty selector is invalid for deployment")
    other = copy.deepcopy(picker)
    key = next(iter(other["spec"]["selector"]["matchLabels"]))
    other["spec"]["selector"]["matchLabels"][key] = "another"
    assert _errors(other) == [
        (("spec", "template", "metadata", "labels"), "`selector` does not match template `labels`")
    ]


def test_a_job_restarts_on_failure_or_never_and_an_indexed_job_says_its_completions():
    job = _doc("vllm-llama31-405b", "nccl-test.yaml", "Job")
    [(path, said)] = _errors(_without(job, "spec", "template", "spec", "restartPolicy"))
    assert path == ("spec", "template", "spec", "restartPolicy") and "valid values: OnFailure, Never" in said
    assert job["spec"]["completionMode"] == "Indexed"
    assert _errors(_without(job, "spec", "completions")) == [
        (("spec", "completions"), "is required when completion mode is Indexed")
    ]
    download = _doc("sglang-deepseek-r1", "model-download.yaml", "Job")
    download["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert _errors(download) == [
        (("spec", "template", "spec", "restartPolicy"), "only Never is supported when podFailurePolicy is specified")
    ]


def test_an_hpa_metric_sets_the_source_its_type_names():
    hpa = _doc("triton-llama3-405b", "horizontalpodautoscaler.yaml", "HorizontalPodAutoscaler")
    [(path, said)] = _errors(_without(hpa, "spec", "metrics", 0, "pods"))
    assert (
        path == ("spec", "metrics", 0, "pods")
        and "must populate information for the given metric source (Pods: pods)" in said
    )


def test_a_service_has_ports_unless_headless_and_source_ranges_only_as_a_load_balancer():
    service = _doc("triton-llama3-405b", "service.yaml", "Service")
    assert _errors(_without(service, "spec", "ports"))[0][0] == ("spec", "ports")
    headless = _without(service, "spec", "ports")
    headless["spec"] |= {"clusterIP": "None", "type": "ClusterIP"}
    headless["spec"].pop("loadBalancerSourceRanges", None)
    assert _errors(headless) == []
    assert service["spec"].get("loadBalancerSourceRanges"), "the example serves a LoadBalancer with source ranges"
    [(path, said)] = _errors(_without(service, "spec", "type"))
    assert path == ("spec", "loadBalancerSourceRanges") and said.endswith("not ClusterIP")


@pytest.mark.parametrize(
    "deleted, path",
    [
        (("spec", "accessModes"), ("spec", "accessModes")),
        (("spec", "resources", "requests", "storage"), ("spec", "resources", "requests", "storage")),
    ],
)
def test_a_claim_has_access_modes_and_a_size(deleted, path):
    claim = _doc("sglang-deepseek-r1", "persistentvolumeclaim.yaml", "PersistentVolumeClaim")
    assert [p for p, _ in _errors(_without(claim, *deleted))] == [path]


def test_every_pod_template_mounts_only_its_volumes():
    picker = _doc("vllm-llama31-405b", "endpoint-picker.yaml", "Deployment")
    errors = _errors(_without(picker, "spec", "template", "spec", "volumes"))
    assert errors and all(p[-1] == "name" and "is not a volume of this pod" in m for p, m in errors)


def test_what_the_server_fills_in_is_not_a_problem():
    binding = _doc("triton-llama3-405b", "rolebinding.yaml", "RoleBinding")
    assert _errors(_without(binding, "roleRef", "apiGroup")) == []
    assert _errors(_without(binding, "roleRef", "kind")) != []  # the rest of roleRef is still required


def test_validate_says_it_at_the_file_and_field(tmp_path, capsys):
    directory = tmp_path / "triton"
    shutil.copytree(OUT / "triton-llama3-405b", directory)
    role = directory / "role.yaml"
    role.write_text(role.read_text().replace("- apiGroups:\n  - ''\n", "- apiGroups: []\n", 1))
    assert main(["validate", str(directory)]) == 1
    out = capsys.readouterr().out
    assert f"{role}:" in out and "rules[0].apiGroups: resource rules must supply at least one api group" in out, out


def _service(**spec) -> dict:
    service = _doc("triton-llama3-405b", "service.yaml", "Service")
    service["spec"] |= spec
    return service


@pytest.mark.parametrize(
    "spec, path",
    [
        ({"type": "ExternalName"}, ("spec", "externalName")),
        ({"type": "Bogus"}, ("spec", "type")),
        ({"type": "LoadBalancer", "clusterIP": "None"}, ("spec", "clusterIP")),
        (
            {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/33"]},
            ("spec", "loadBalancerSourceRanges", 0),
        ),
        ({"type": "LoadBalancer", "sessionAffinity": "Sticky"}, ("spec", "sessionAffinity")),
        ({"type": "LoadBalancer", "externalTrafficPolicy": "Nearest"}, ("spec", "externalTrafficPolicy")),
    ],
)
def test_a_service_keeps_each_type_to_its_own_fields(spec, path):
    """validateService: what the v1.36.3 server refused of these edits in an independent review."""
    assert path in [p for p, _ in _errors(_service(**spec))]


def test_a_cluster_ip_service_has_no_node_port_external_policy_or_load_balancer_fields():
    service = _service(type="ClusterIP", externalTrafficPolicy="Local", allocateLoadBalancerNodePorts=True)
    service["spec"].pop("loadBalancerSourceRanges", None)
    service["spec"]["ports"][0]["nodePort"] = 30080
    service["spec"]["ports"][0]["protocol"] = "ICMP"
    paths = {p for p, _ in _errors(service)}
    assert paths == {
        ("spec", "externalTrafficPolicy"),
        ("spec", "allocateLoadBalancerNodePorts"),
        ("spec", "ports", 0, "nodePort"),
        ("spec", "ports", 0, "protocol"),
    }


def test_an_external_name_service_aliases_a_dns_name():
    service = _service(type="ExternalName", externalName="models.example.com.")
    for key in ("loadBalancerSourceRanges", "externalTrafficPolicy", "allocateLoadBalancerNodePorts"):
        service["spec"].pop(key, None)
    assert _errors(service) == []


def test_an_hpa_keeps_a_replica_and_one_source_per_metric():
    hpa = _doc("triton-llama3-405b", "horizontalpodautoscaler.yaml", "HorizontalPodAutoscaler")
    hpa["spec"]["minReplicas"] = 0
    hpa["spec"]["metrics"][0]["resource"] = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
    assert {p for p, _ in _errors(hpa)} == {("spec", "minReplicas"), ("spec", "metrics", 0, "resource")}


@pytest.mark.parametrize(
    "file, kind, path, value, said",
    [
        ("endpoint-picker.yaml", "Deployment", ("spec", "replicas"), -1, "must be greater than or equal to 0"),
        ("endpoint-picker.yaml", "Deployment", ("spec", "strategy"), {"type": "Recreate", "rollingUpdate": {}},
         "may not be specified when strategy type is Recreate"),
        ("endpoint-picker.yaml", "Deployment", ("spec", "strategy"),
         {"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 0}}, "may not be 0 when maxSurge is 0"),
        ("endpoint-picker.yaml", "Deployment", ("spec", "selector", "matchExpressions"),
         [{"key": "app", "operator": "Exists", "values": ["x"]}], "may not be specified when operator is Exists"),
        ("nccl-test.yaml", "Job", ("spec", "backoffLimit"), -1, "must be greater than or equal to 0"),
        ("nccl-test.yaml", "Job", ("spec", "completionMode"), "Bogus", "is not one of: NonIndexed, Indexed"),
    ],
)  # fmt: skip
def test_deployment_and_job_values(file, kind, path, value, said):
    obj = _doc("vllm-llama31-405b", file, kind)
    node = obj
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    assert any(said in message for _, message in _errors(obj)), _errors(obj)


def test_a_deployment_selector_expression_must_hold_for_its_labels():
    picker = _doc("vllm-llama31-405b", "endpoint-picker.yaml", "Deployment")
    key, value = next(iter(picker["spec"]["template"]["metadata"]["labels"].items()))
    picker["spec"]["selector"]["matchExpressions"] = [{"key": key, "operator": "In", "values": [value]}]
    assert _errors(picker) == []
    picker["spec"]["selector"]["matchExpressions"] = [{"key": key, "operator": "NotIn", "values": [value]}]
    assert _errors(picker) == [
        (("spec", "template", "metadata", "labels"), "`selector` does not match template `labels`")
    ]


def test_a_claim_names_known_access_modes_and_a_size_above_zero():
    claim = _doc("sglang-deepseek-r1", "persistentvolumeclaim.yaml", "PersistentVolumeClaim")
    claim["spec"]["accessModes"] = ["ReadWriteOncePod", "ReadWriteMany"]
    claim["spec"]["resources"]["requests"]["storage"] = "0"
    assert {p for p, _ in _errors(claim)} == {("spec", "accessModes"), ("spec", "resources", "requests", "storage")}


def test_a_binding_names_an_rbac_role():
    binding = _doc("triton-llama3-405b", "rolebinding.yaml", "RoleBinding")
    binding["roleRef"] |= {"apiGroup": "example.com", "kind": "Bogus"}
    assert {p for p, _ in _errors(binding)} == {("roleRef", "apiGroup"), ("roleRef", "kind")}


@pytest.mark.parametrize(
    "mount, field, said",
    [
        ({"subPath": "../etc"}, "subPath", "must be a relative path without '..'"),
        ({"subPathExpr": "/abs"}, "subPathExpr", "must be a relative path without '..'"),
        ({"mountPath": ""}, "mountPath", "is required"),
        ({"mountPropagation": "Sideways"}, "mountPropagation", "is not one of: None, HostToContainer, Bidirectional"),
    ],
)
def test_a_mount_is_placed_where_the_server_allows(mount, field, said):
    job = _doc("vllm-llama31-405b", "nccl-test.yaml", "Job")
    job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0] |= mount
    [(path, message)] = _errors(job)
    assert path[-1] == field and said in message


def test_two_mounts_of_a_container_do_not_share_a_path():
    job = _doc("vllm-llama31-405b", "nccl-test.yaml", "Job")
    mounts = job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    mounts[1]["mountPath"] = mounts[0]["mountPath"]
    [(path, message)] = _errors(job)
    assert path[-2:] == (1, "mountPath") and "must be unique" in message


def test_a_deployment_pod_restarts_always_and_runs_without_a_deadline():
    picker = _doc("vllm-llama31-405b", "endpoint-picker.yaml", "Deployment")
    picker["spec"]["template"]["spec"] |= {"restartPolicy": "OnFailure", "activeDeadlineSeconds": 60}
    picker["spec"] |= {"progressDeadlineSeconds": 10, "minReadySeconds": 10}
    assert {p[-1] for p, _ in _errors(picker)} == {"restartPolicy", "activeDeadlineSeconds", "progressDeadlineSeconds"}


def test_an_hpa_behavior_stays_within_the_servers_bounds():
    hpa = _doc("triton-llama3-405b", "horizontalpodautoscaler.yaml", "HorizontalPodAutoscaler")
    hpa["spec"]["behavior"] = {
        "scaleUp": {"policies": [], "selectPolicy": "Fastest"},
        "scaleDown": {
            "stabilizationWindowSeconds": 7200,
            "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 3600}],
        },
    }
    behavior = ("spec", "behavior")
    assert {p for p, _ in _errors(hpa)} == {
        (*behavior, "scaleUp", "policies"),
        (*behavior, "scaleUp", "selectPolicy"),
        (*behavior, "scaleDown", "stabilizationWindowSeconds"),
        (*behavior, "scaleDown", "policies", 0, "type"),
        (*behavior, "scaleDown", "policies", 0, "value"),
        (*behavior, "scaleDown", "policies", 0, "periodSeconds"),
    }
    hpa["spec"]["behavior"] = {"scaleUp": {"stabilizationWindowSeconds": 0}}  # policies filled by defaulting
    assert _errors(hpa) == []


def test_a_job_keeps_indexed_fields_to_indexed_jobs_and_replaces_only_failed_pods_with_a_failure_policy():
    download = _doc("sglang-deepseek-r1", "model-download.yaml", "Job")
    assert download["spec"].get("completionMode", "NonIndexed") == "NonIndexed" and download["spec"]["podFailurePolicy"]
    download["spec"] |= {
        "maxFailedIndexes": 1,
        "successPolicy": {"rules": []},
        "podReplacementPolicy": "TerminatingOrFailed",
    }
    assert {p for p, _ in _errors(download)} == {
        ("spec", "backoffLimitPerIndex"),
        ("spec", "maxFailedIndexes"),
        ("spec", "successPolicy"),
        ("spec", "podReplacementPolicy"),
    }


def test_the_source_ranges_annotation_belongs_to_a_load_balancer():
    service = _service(type="ClusterIP")
    for key in ("loadBalancerSourceRanges", "externalTrafficPolicy", "allocateLoadBalancerNodePorts"):
        service["spec"].pop(key, None)
    service["metadata"]["annotations"] = {"service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8"}
    [(path, _)] = _errors(service)
    assert path == ("metadata", "annotations", "service.beta.kubernetes.io/load-balancer-source-ranges")


def test_a_profiles_behavior_out_of_the_servers_bounds_is_refused_at_the_profile(tmp_path, capsys):
    """The same bounds (lwsgen/kuberules.py), said at the profile's field, not at the output or a patch."""
    text = (REPO / "profiles" / "triton-llama3-405b.yaml").read_text()
    assert "\n  target: 1\n" in text
    behavior = "  behavior: {scaleDown: {policies: [{type: Pods, value: 1, periodSeconds: 3600}]}}\n"
    profile = tmp_path / "p.yaml"
    profile.write_text(text.replace("\n  target: 1\n", "\n  target: 1\n" + behavior))
    assert main(["render", str(profile), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert (
        f"{profile}:" in err
        and "autoscaling.behavior.scaleDown.policies[0].periodSeconds: must be between 1 and 1800" in err
    )
    assert not (tmp_path / "out").exists()
