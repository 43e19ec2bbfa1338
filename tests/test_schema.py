"""The profile schema is the contract: complete, strict, described, defaulted, and what the README says."""

import re

import jsonschema_rs
import pytest

import fastyaml
from conftest import MINIMAL, REPO, SHARED, merged
from lwsgen.check.schema import profile_schema, with_defaults
from lwsgen.commands import docs


def _contract_paths():
    """Every field path of the YAML example in ../shared/spec/profile.md."""
    text = (SHARED / "spec" / "profile.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    paths = []

    def walk(node, prefix):
        for key, value in node.items():
            paths.append(prefix + key)
            if (
                isinstance(value, dict)
                and value
                and key
                not in (
                    "env",
                    "labels",
                    "annotations",
                    "nodeSelector",
                    "rdmaResource",
                    "prometheusLabels",
                    "tokenSecret",
                )
            ):
                walk(value, prefix + key + ".")

    walk(fastyaml.load(block), "")
    return paths


def _schema_node(path):
    node = profile_schema()
    for part in path.split("."):
        node = docs._resolve(node["properties"][part])
    return node


@pytest.mark.parametrize("path", _contract_paths())
def test_every_contract_field_is_in_the_schema_with_a_description(path):
    assert _schema_node(path)["description"]


def _objects(node, where="$"):
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from _objects(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _objects(value, f"{where}[{index}]")


def test_the_schema_is_valid_json_schema():
    assert jsonschema_rs.meta.is_valid(profile_schema())


def test_every_object_is_closed_and_every_property_described():
    for where, node in _objects(profile_schema()):
        assert "additionalProperties" in node, f"{where} has no additionalProperties"
        for name, prop in node.get("properties", {}).items():
            assert "description" in prop, f"{where}.{name} has no description"


def test_defaults_are_filled_in():
    filled = with_defaults(
        {"name": "x", "runtime": "vllm", "image": "a:1", "model": {"path": "m"}, "node": {"gpus": 8}}
    )
    assert filled["namespace"] == "default"
    assert filled["parallelism"] == {"tensor": 1, "pipeline": 1, "data": 1, "expert": False, "allToAll": "default"}
    assert filled["node"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert filled["node"]["gpuResource"] == "nvidia.com/gpu"
    assert filled["service"]["type"] == "LoadBalancer"
    assert filled["monitoring"] == {
        "enabled": True,
        "prometheusLabels": {"release": "prometheus"},
        "interval": "15s",
        "namespace": "monitoring",
        "alerts": {
            "enabled": True,
            "kvCacheUsage": 0.95,
            "gpuBusyPercent": 90,
            "holdFor": "15m",
            "runbookURL": "docs/runbooks.md",
        },
        "dashboard": {"enabled": True, "labels": {"grafana_dashboard": "1"}, "annotations": {}},
    }
    assert filled["security"] == {
        "networkPolicy": True,
        "addCapabilities": [],
        "allowHostNetwork": False,
        "allowHostIPC": False,
        "allowPrivileged": False,
        "allowHostPath": False,
        "allowNodeVolumes": False,
    }
    assert filled["lws"] == {
        "version": "0.10",
        "restartPolicy": "RecreateGroupOnPodRestart",
        "startupPolicy": "LeaderCreated",
        "maxUnavailable": 1,
        "maxSurge": 0,
    }
    assert filled["autoscaling"]["scaleDownStabilizationSeconds"] == 600
    assert "storage" not in filled  # optional without a default stays absent


def test_defaults_never_alias_the_schema():
    first = with_defaults({"name": "x", "runtime": "vllm", "image": "a:1", "model": {"path": "m"}, "node": {"gpus": 8}})
    first["node"]["tolerations"].append({"key": "mutated"})
    second = with_defaults(
        {"name": "x", "runtime": "vllm", "image": "a:1", "model": {"path": "m"}, "node": {"gpus": 8}}
    )
    assert len(second["node"]["tolerations"]) == 1


def test_field_reference_lists_every_schema_field():
    reference = (REPO / "docs" / "profile.md").read_text()
    for path, *_ in docs.rows(profile_schema()):
        assert f"| `{path}`" in reference


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (30, "monitoring.interval: must be a duration such as 15s, 1m or 500ms, not an integer"),
        (1.5, "monitoring.interval: must be a duration such as 15s, 1m or 500ms, not a number"),
        ("30s", None),
    ],
)
def test_a_number_where_a_pattern_is_wanted_is_told_the_pattern_not_to_quote_it(said, value, message):
    """`interval: 30` was told "must be a string (quote it)"; quoted, "30" is still no duration."""
    errors, _ = said(merged(MINIMAL, monitoring={"enabled": True, "interval": value}))
    assert errors == ([message] if message else [])


def test_a_number_that_is_a_valid_string_once_quoted_is_told_to_quote_it(said):
    errors, _ = said(merged(MINIMAL, namespace=5))
    assert errors == ["namespace: must be a string (quote it), not an integer"]


def test_a_misspelt_field_is_told_the_field_it_is_close_to(said):
    errors, _ = said(merged(MINIMAL, monitorng={"enabled": True}))
    [error] = errors
    assert error.startswith("monitorng: unknown field; did you mean 'monitoring'? allowed here: ")
    errors, _ = said(merged(MINIMAL, node={"GPUs": 8}))
    assert any(e.startswith("node.GPUs: unknown field; did you mean 'gpus'? ") for e in errors), errors
    errors, _ = said(merged(MINIMAL, zzz=1))
    assert errors[0].startswith("zzz: unknown field; allowed here: ")
