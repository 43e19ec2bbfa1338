"""Stage 1: positions for every node, and every way a file can fail to be a YAML mapping."""

import pytest

from lwsgen.load.source import load_mapping, load_text
from lwsgen.problems import ProblemsError


def test_positions_of_keys_and_values():
    src = load_text("name: demo\nnode:\n  gpus: 8\n  tolerations:\n  - key: a\n", "p.yaml")
    assert src.position(("node", "gpus")) == (3, 9)
    assert src.position(("node", "gpus"), key=True) == (3, 3)
    assert src.position(("node", "tolerations", 0, "key")) == (5, 10)


def test_position_of_a_missing_path_falls_back_to_its_nearest_parent():
    src = load_text("node:\n  gpus: 8\n", "p.yaml")
    assert src.position(("node", "cpu")) == src.position(("node",)) == (2, 3)


def _problems(tmp_path, raw: bytes) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_bytes(raw)
    with pytest.raises(ProblemsError) as err:
        load_mapping(path, "p.yaml")
    return [p.text() for p in err.value.problems]


def test_bad_utf8_names_line_column_and_byte(tmp_path):
    assert _problems(tmp_path, b"name: ok\nimage: caf\xe9\n") == [
        "p.yaml:2:11: not valid UTF-8 (byte 0xe9); save the file as UTF-8"
    ]


def test_yaml_syntax_error_has_position_and_where_the_construct_started(tmp_path):
    assert _problems(tmp_path, b"name: demo\nnode: {gpus: 8\n") == [
        "p.yaml:3:1: YAML syntax error: did not find expected ',' or "
        "'}' (while parsing a flow mapping that starts at 2:7)"
    ]


@pytest.mark.parametrize(
    "raw, what",
    [
        (b"", "empty"),
        (b"# only a comment\n", "empty"),
        (b"- a\n- b\n", "a list"),
        (b"just text\n", "a string"),
        (b"42\n", "a number"),
    ],
)
def test_a_profile_must_be_a_mapping(tmp_path, raw, what):
    [line] = _problems(tmp_path, raw)
    assert f"the document is {what}; a profile is a mapping" in line


def test_two_documents_are_refused(tmp_path):
    assert _problems(tmp_path, b"name: a\n---\nname: b\n") == [
        "p.yaml:2:1: a second YAML document starts here; a profile is one document"
    ]


def test_duplicate_keys_are_reported_at_the_second(tmp_path):
    assert _problems(tmp_path, b"name: a\nnode:\n  gpus: 8\n  gpus: 4\n") == [
        "p.yaml:4:3: node.gpus: duplicate key (first set on line 3); keep one"
    ]


def test_non_string_keys_are_refused(tmp_path):
    assert _problems(tmp_path, b"name: a\nenv:\n  1: x\n") == [
        'p.yaml:3:3: env["1"]: field names must be strings; quote this key'
    ]


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes("\ufeffname: demo\n".encode())
    assert load_mapping(path).data == {"name": "demo"}


def test_unreadable_file(tmp_path):
    with pytest.raises(ProblemsError) as err:
        load_mapping(tmp_path / "missing.yaml", "missing.yaml")
    assert err.value.problems[0].text().startswith("missing.yaml:0:0: cannot read")
