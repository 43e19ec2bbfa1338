"""The typed, frozen profile: every schema field is an attribute, nothing can change it, and the
derived numbers are computed in one place."""

import pytest

from conftest import merged
from lwsgen import profile as typed
from lwsgen.check.schema import profile_schema, referenced, with_defaults
from lwsgen.pipeline import load_profile


def _resolve(node):
    ref = node.get("$ref")
    return {**referenced(ref), **node} if ref else node


def _record_fields(schema_node, cls, prefix=""):
    """(schema path, attribute path) pairs, walking schema objects with properties and records together."""
    for key, child in schema_node.get("properties", {}).items():
        if key in ("extends", "base"):
            continue  # the file's own statements: merged away by load, refused by check
        attribute = typed.attribute_name(key)
        assert attribute in cls._fields, f"schema field {prefix}{key} has no attribute {cls.__name__}.{attribute}"
        yield f"{prefix}{key}"
        child = _resolve(child)
        record = typed._record_type(cls.__annotations__[attribute])
        if record is not None and "properties" in child:
            yield from _record_fields(child, record, f"{prefix}{key}.")


def test_every_schema_field_is_an_attribute_and_every_attribute_a_field():
    seen = list(_record_fields(profile_schema(), typed.Profile))
    assert len(seen) > 90
    schema_keys = {k for k in profile_schema()["properties"] if k not in ("extends", "base")}
    assert {typed.schema_key(a) for a in typed.Profile._fields} == schema_keys


def test_profile_is_frozen_all_the_way_down(write_profile, minimal):
    profile, _, _ = load_profile(write_profile(merged(minimal, env={"A": "1"})))
    with pytest.raises(AttributeError):
        profile.name = "other"
    with pytest.raises(TypeError):
        profile.env["B"] = "2"
    with pytest.raises(TypeError):
        profile.node.tolerations[0]["key"] = "x"
    assert isinstance(profile.node.tolerations, tuple)


@pytest.mark.parametrize("tensor, pipeline, gpus, group, per_pod", [(8, 2, 8, 2, 8), (4, 1, 8, 1, 4), (16, 4, 8, 8, 8)])
def test_derived_numbers(minimal, tensor, pipeline, gpus, group, per_pod):
    data = with_defaults(
        merged(minimal, **{"parallelism.tensor": tensor, "parallelism.pipeline": pipeline, "node.gpus": gpus})
    )
    profile = typed.from_data(data)
    assert (profile.world_size, profile.group_size, profile.gpus_per_pod) == (tensor * pipeline, group, per_pod)


def test_groups_at_most_follow_autoscaling(minimal):
    fixed = typed.from_data(with_defaults(merged(minimal, replicas=3)))
    assert (fixed.groups_at_most, fixed.highest_group_index, fixed.fixed_replicas) == (3, 2, 3)
    scaled = typed.from_data(
        with_defaults(merged(minimal, replicas=3, autoscaling={"enabled": True, "maxReplicas": 7}))
    )
    assert (scaled.groups_at_most, scaled.highest_group_index, scaled.fixed_replicas) == (7, 6, None)


def test_key_spelling_round_trips():
    for key in ("minBusBandwidthGBps", "hugepages2Mi", "loadBalancerSourceRanges", "gpus"):
        assert typed.schema_key(typed.attribute_name(key)) == key


def test_frozen_dicts_survive_pickling():
    import pickle

    frozen = typed.FrozenDict({"a": typed.FrozenDict({"b": 1})})
    assert pickle.loads(pickle.dumps(frozen)) == frozen
