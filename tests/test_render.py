"""Stage 4: templates only place values, and every value goes through one quoting filter."""

import jinja2
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import fastyaml
from conftest import VLLM_UNTABLED, examples, lws_of, merged
from lwsgen import render as render_module
from lwsgen.render import q, to_yaml_scalar

NASTY = [
    "plain",
    "",
    "multi\nline\n",
    "key: value",
    "# comment",
    "'single' \"double\"",
    "{{ jinja }}",
    "{% if x %}",
    "$(LWS_LEADER_ADDRESS)",
    "- item",
    "&anchor *alias",
    "!!python/object:os.system",
    "yes",
    "no",
    "null",
    "~",
    "0x1F",
    "1e3",
    "08",
    "tab\there",
    "\u2028line separator",
    "\x85next line",
    "\x7fdel",
    "emoji 🚀",
    "trailing space ",
    "\ufeffbom",
    "back\\slash",
    "---",
    "...",
]


@pytest.mark.parametrize("value", NASTY)
def test_any_string_round_trips_through_q(value):
    assert fastyaml.load(f"key: {q(value)}\n") == {"key": value}


yaml_text = st.text(st.characters(exclude_categories=("Cs",)))
json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | yaml_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(yaml_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_like)
def test_any_value_round_trips_through_q(value):
    assert fastyaml.load(f"key: {to_yaml_scalar(value)}\n") == {"key": value}


def test_profile_strings_cannot_change_structure(render, minimal):
    evil = "x\nspec:\n  replicas: 99\n# {{ d.name }}"
    rendered = render(
        merged(
            minimal,
            image=VLLM_UNTABLED,
            annotations={"note": evil},
            env={"EVIL": evil},
            **{"model.extraArgs": ["--chat-template", "{{ messages }}{% for m in x %}", "two words", evil]},
        )
    )
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
    import re

    from lwsgen.resources import package_dir

    for template in package_dir("templates").iterdir():
        if template.name.endswith(".j2"):
            for expression in re.findall(r"\{\{(.*?)\}\}", template.read_text()):
                assert "| q" in expression or re.search(r"\w+\(", expression), (template.name, expression)


# The writer and the parse-back fast path must agree with PyYAML, pure and libyaml alike. Strings
# are drawn from YAML's awkward corners too: indentation, line breaks, indicators, resolvable words.
awkward_text = (
    st.lists(
        st.sampled_from(
            [
                " ",
                "\n",
                "\t",
                "-",
                ":",
                "#",
                "'",
                '"',
                "|",
                ">",
                "a",
                "1",
                ".",
                "~",
                "yes",
                "null",
                "0x1",
                "é",
                "\u2028",
                "\x85",
                "\ufeff",
                "\r",
                "---",
                "...",
            ]
        ),
        max_size=8,
    ).map("".join)
    | yaml_text
)
emitted = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | awkward_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(awkward_text, inner, max_size=4),
    max_leaves=20,
)
documents = st.dictionaries(awkward_text, emitted, max_size=4)


@pytest.mark.sampled
@settings(max_examples=examples(500), deadline=None)
@given(st.lists(documents, min_size=1, max_size=3))
def test_written_yaml_reads_back_as_the_same_objects(docs):
    from lwsgen.output.parse import dump, parse

    text = dump(tuple(docs))
    assert list(yaml.load_all(text, Loader=yaml.SafeLoader)) == docs
    assert list(yaml.load_all(text, Loader=yaml.CSafeLoader)) == docs
    assert list(parse(text)) == [prune_nulls(d) for d in docs]
    assert dump(tuple(docs)) == text


@pytest.mark.parametrize("value", [{}, [], "x", "two\nlines\n", {"a": [1, {"b": None}]}, ["x", ["y"]]])
def test_keys_too_long_for_an_implicit_key_are_written_explicitly(value):
    from lwsgen.output.parse import dump

    doc = {"k" * 1500: value, "next": 1}
    assert fastyaml.load(dump((doc,))) == doc


@pytest.mark.parametrize(
    "value", ["08", "1_000", "0o17", "0b101", "1:30", "24.08", "1e3", ".5", "-1", "+1", "y", "N", "yes", "~", "Null"]
)
def test_strings_any_yaml_reader_could_take_for_numbers_or_booleans_are_quoted(value):
    from lwsgen.output.emit import string

    assert string(value) == f"'{value}'"


@pytest.mark.parametrize(
    "value",
    [
        "512Gi",
        "100m",
        "0.0.0.0",
        "9059d6",
        "--tp",
        "nvcr.io/x:24.08",
        "$(LWS_LEADER_ADDRESS):6379",
        "a b",
        'sum(x{namespace="a"}) by (pod)',
        'cp "$(command -v k)" /b && chmod 0555 /b',
    ],
)
def test_ordinary_strings_stay_plain(value):
    from lwsgen.output.emit import string

    assert string(value) == value


def test_top_level_keys_that_look_like_document_markers_stay_keys():
    from lwsgen.output.parse import dump

    doc = {"--- -": 1, "... x": 2, "---x": 3}
    assert list(fastyaml.load_all(dump((doc,)))) == [doc]


def test_written_yaml_is_plain_where_plain_reads_the_same():
    from lwsgen.output.parse import dump

    text = dump(
        (
            {
                "image": "nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3",
                "arg": "--tp",
                "on": "yes",
                "tag": "08",
                "script": "set -e\nexec x\n",
            },
        )
    )
    assert text == (
        "image: nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3\narg: --tp\n"
        "'on': 'yes'\ntag: '08'\n"
        "script: |\n  set -e\n  exec x\n"
    )


def prune_nulls(value):
    """What parse-back makes of a document: keys with a null value are dropped, at any depth."""
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value
