"""Kubernetes API rules beyond the schemas. The port-name, qualified-name and label-value cases are
TestIsValidPortName's, TestIsQualifiedName's and TestIsValidLabelValue's good and bad values
(k8s.io/apimachinery/pkg/util/validation/validation_test.go); the name and env-var cases follow the
definitions in validation.go (IsDNS1123Subdomain, IsDNS1035Label, IsEnvVarName, IsConfigMapKey);
the annotation total is TotalAnnotationSizeLimitB (k8s.io/apimachinery/pkg/api/validation/objectmeta.go)."""

import pytest

from conftest import lws_of, merged
from lwsgen.output import validate
from lwsgen.output.apirules import (
    ENV_VAR_NAME,
    api_errors,
    config_map_key_problem,
    env_name_problem,
    label_value_problem,
    name_problem,
    port_name_problem,
    qualified_name_problem,
)


@pytest.mark.parametrize("name", ["telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"])
def test_good_port_names(name):
    assert port_name_problem(name) is None


@pytest.mark.parametrize(
    "name", ["longerthan15characters", "", "a" * 16, "12345", "1-2-3-4", "-begin", "end-", "two--hyphens", "whois++"]
)
def test_bad_port_names(name):
    assert port_name_problem(name) is not None


@pytest.mark.parametrize(
    "name, good",
    [
        ("a", True),
        ("ab", True),
        ("a-b", True),
        ("0", True),
        ("a.b", True),
        ("A", False),
        ("-a", False),
        ("a-", False),
        ("a_b", False),
        ("a" * 254, False),
    ],
)
def test_object_names_are_dns_subdomains(name, good):
    assert (name_problem("ConfigMap", name) is None) == good


def test_a_service_name_is_a_dns1035_label():
    assert name_problem("Service", "9-leader") is not None and name_problem("Service", "a-leader") is None


@pytest.mark.parametrize(
    "name, good",
    [
        ("A", True),
        ("ab", True),
        ("A_B", True),
        ("a.b", True),
        ("a-b", True),
        ("_a", True),
        ("1a", False),
        ("a b", False),
        ("a=b", False),
        ("", False),
    ],
)
def test_env_var_names(name, good):
    assert bool(ENV_VAR_NAME.fullmatch(name)) == good
    assert (env_name_problem(name, "1.31") is None) == good


@pytest.mark.parametrize(
    "name, good",
    [("1a", True), ("a b", True), ("MY.VAR-1", True), ("a=b", False), ("", False), ("tab\there", False), ("é", False)],
)
def test_env_var_names_are_relaxed_from_1_32(name, good):
    """IsRelaxedEnvVarName: printable ASCII but '=' (RelaxedEnvironmentVariableValidation, on from 1.32)."""
    assert (env_name_problem(name, "1.33") is None) == good


def test_a_service_name_is_a_dns1123_label_from_1_36():
    """RelaxedServiceNameValidation, on by default from 1.36: NameIsDNSLabel, a digit first is fine."""
    assert name_problem("Service", "9-leader", "1.36") is None
    assert name_problem("Service", "9-leader", "1.35") is not None
    assert name_problem("Service", "Leader", "1.36") is not None


def _errors(obj):
    return [(e.path, e.message) for e in validate.schema_errors(obj, "1.33")]


def test_hand_edits_the_schema_allows_but_kubernetes_refuses(render, minimal):
    lws = lws_of(render(merged(minimal, **{"monitoring.enabled": True})))
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    leader["containers"][0]["ports"][0]["name"] = "http-serving-port-1"
    leader["containers"][0]["ports"].append({"name": "ray-gcs", "containerPort": 70000})
    leader["containers"].append({**leader["containers"][0], "ports": []})
    leader["containers"][0]["env"].append({"name": "BAD=NAME", "value": "x"})
    found = dict(_errors(lws))
    base = ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers")
    assert "must be 1 to 15 characters" in found[(*base, 0, "ports", 0, "name")]
    assert "is used twice" in found[(*base, 0, "ports", 2, "name")]
    assert "70000 is not a port" in found[(*base, 0, "ports", 2, "containerPort")]
    assert "is used twice in this pod" in found[(*base, 1, "name")]
    assert any(path[-1] == "name" and "is not an env var name" in message for path, message in found.items())


@pytest.mark.parametrize(
    "key, good",
    [
        ("start.sh", True),
        ("a_b-C.9", True),
        (".hidden", True),
        ("a/b", False),
        (".", False),
        ("..data", False),
        ("a" * 253, True),
        ("a" * 254, False),
        ("sp ace", False),
        # TestIsConfigMapKey
        ("good-good", True),
        ("this.is.also.good", True),
        (".so.is.this", True),
        ("THIS_IS_GOOD", True),
        ("so_is_this_17", True),
        ("..", False),
        ("..bad", False),
        ("b*d", False),
        ("bad!&bad", False),
    ],
)
def test_config_map_keys(key, good):
    assert (config_map_key_problem(key) is None) == good


def test_what_the_api_server_requires_but_the_schemas_leave_optional():
    fields = {e.path for e in api_errors({"apiVersion": "v1", "kind": "Service", "metadata": {}})}
    assert fields == {("metadata", "name"), ("spec",)}
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "m"},
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {}}}},
    }
    assert [e.path for e in api_errors(lws)] == [
        ("spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers")
    ]
    assert list(api_errors({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"})) == []


@pytest.mark.parametrize(
    "ports, fields",
    [
        ([{"port": 80}], set()),  # a single port may go unnamed
        ([{"name": "http", "port": 80}, {"port": 81}], {("spec", "ports", 1, "name")}),
        ([{"name": "http", "port": 80}, {"name": "http", "port": 81}], {("spec", "ports", 1, "name")}),
        ([{"name": "a", "port": 80}, {"name": "b", "port": 80}], {("spec", "ports", 1, "port")}),
        ([{"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "UDP"}], set()),
        ([{"name": "Web_1", "port": 80}], {("spec", "ports", 0, "name")}),
    ],
)
def test_service_ports_follow_validate_service_port(ports, fields):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": ports}}
    assert {e.path for e in api_errors(service)} == fields


QUALIFIED_GOOD = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/simple",
    "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num",
    "1234/5678",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
]
QUALIFIED_BAD = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",
    "example_com/abc",
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
]


@pytest.mark.parametrize("key", QUALIFIED_GOOD)
def test_good_qualified_names(key):
    assert qualified_name_problem(key) is None


@pytest.mark.parametrize("key", QUALIFIED_BAD)
def test_bad_qualified_names(key):
    assert qualified_name_problem(key) is not None


@pytest.mark.parametrize(
    "value", ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
)
def test_good_label_values(value):
    assert label_value_problem(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@",
        "Tama-nui-te-rā.is.Māori.sun",
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
        "a" * 64,
    ],
)
def test_bad_label_values(value):
    assert label_value_problem(value) is not None


def test_labels_and_annotations_on_objects_and_pod_templates(render, minimal):
    lws = lws_of(render(minimal))
    lws["metadata"]["labels"]["team/a/b"] = "x"
    lws["metadata"]["labels"]["tier"] = "-gpu"
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    worker.setdefault("metadata", {}).setdefault("annotations", {})["Example.COM/Note"] = "fine: keys are lower-cased"
    worker["metadata"]["annotations"]["bad key"] = "x"
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    leader.setdefault("metadata", {}).setdefault("annotations", {})["big"] = "x" * (256 * 1024)
    found = dict(_errors(lws))
    assert "label key 'team/a/b'" in found[("metadata", "labels", "team/a/b")]
    assert "a label value must be empty" in found[("metadata", "labels", "tier")]
    side = ("spec", "leaderWorkerTemplate")
    assert "annotation key 'bad key'" in found[(*side, "workerTemplate", "metadata", "annotations", "bad key")]
    assert (*side, "workerTemplate", "metadata", "annotations", "Example.COM/Note") not in found
    total = sum(len(k) + len(v) for k, v in leader["metadata"]["annotations"].items())
    assert total > 256 * 1024 and f"{total} bytes" in found[(*side, "leaderTemplate", "metadata", "annotations")]
    del leader["metadata"]["annotations"]["big"]
    assert (*side, "leaderTemplate", "metadata", "annotations") not in dict(_errors(lws))
