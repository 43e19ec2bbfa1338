"""Stage 4: templates only place values, and every value goes through one quoting filter."""

import jinja2
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import lws_of, merged
from lwsgen import render as render_module
from lwsgen.render import q, to_yaml_scalar

NASTY = [
    "plain", "", "multi\nline\n", "key: value", "# comment", "'single' \"double\"", "{{ jinja }}", "{% if x %}",
    "$(LWS_LEADER_ADDRESS)", "- item", "&anchor *alias", "!!python/object:os.system", "yes", "no", "null", "~", "0x1F",
    "1e3", "08", "tab\there", "\u2028line separator", "\x85next line", "\x7fdel", "emoji 🚀", "trailing space ",
    "\ufeffbom", "back\\slash", "---", "...",
]


@pytest.mark.parametrize("value", NASTY)
def test_any_string_round_trips_through_q(value):
    assert yaml.safe_load(f"key: {q(value)}\n") == {"key": value}


yaml_text = st.text(st.characters(exclude_categories=("Cs",)))
json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | yaml_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(yaml_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_like)
def test_any_value_round_trips_through_q(value):
    assert yaml.safe_load(f"key: {to_yaml_scalar(value)}\n") == {"key": value}


def test_profile_strings_cannot_change_structure(render, minimal):
    evil = "x\nspec:\n  replicas: 99\n# {{ d.name }}"
    rendered = render(merged(minimal, annotations={"note": evil}, env={"EVIL": evil},
                             **{"model.extraArgs": ["--chat-template", "{{ messages }}{% for m in x %}", "two words", evil]}))
    lws = lws_of(rendered)
    assert lws["metadata"]["annotations"]["note"] == evil
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["args"][-4:] == ["--chat-template", "{{ messages }}{% for m in x %}", "two words", evil]
    assert {"name": "EVIL", "value": evil} in leader["env"]
    assert "replicas" in lws["spec"] and lws["spec"]["replicas"] == 1


def test_a_value_placed_without_q_is_refused():
    env = render_module.environment()
    with pytest.raises(TypeError, match="without the q filter"):
        env.from_string("name: {{ value }}\n").render(value="x")


def test_undefined_values_are_errors_not_blanks():
    env = render_module.environment()
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("name: {{ missing | q }}\n").render()


def test_every_template_uses_only_q_in_its_placeholders():
    from lwsgen.resources import package_dir

    import re

    for template in package_dir("templates").iterdir():
        if template.name.endswith(".j2"):
            for expression in re.findall(r"\{\{(.*?)\}\}", template.read_text()):
                assert "| q" in expression or re.search(r"\w+\(", expression), (template.name, expression)


# The parse-back and dump fast paths must agree with PyYAML's SafeLoader and SafeDumper.
class _ReferenceDumper(yaml.CSafeDumper):  # what lwsgen used before: PyYAML's representer, libyaml's emitter
    pass


_ReferenceDumper.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
documents = st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), json_like, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(documents, min_size=1, max_size=3))
def test_dump_and_parse_agree_with_pyyaml(docs):
    from lwsgen.objects import dump, parse

    text = dump(tuple(docs))
    reference = yaml.dump_all(docs, Dumper=_ReferenceDumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                              width=100000, explicit_start=len(docs) > 1)
    assert text == reference
    assert list(yaml.safe_load_all(text)) == docs
    assert list(parse(text)) == [prune_nulls(d) for d in docs]


def prune_nulls(value):
    """What parse-back makes of a document: keys with a null value are dropped, at any depth."""
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value
