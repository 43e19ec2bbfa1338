"""Stage 1: positions for every node, and every way a file can fail to be a YAML mapping."""

import pytest

import fastyaml
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


# Values whose reading differs from a plain conversion of the node: YAML 1.1's octal and sexagesimal
# integers, yes/no/on/off, floats, timestamps, merge keys, explicit tags, aliases, non-string keys.
TRICKY = [
    "a: 0755\nb: -012\nc: 0\nd: -0\ne: 1_000\nf: +5\ng: 0x1F\nh: 0b101\ni: 1:30\nj: 12\n",
    "a: yes\nb: No\nc: on\nd: OFF\ne: true\nf: False\ng: ~\nh: null\ni:\n",
    "a: 1.5\nb: .inf\nc: -.Inf\nd: .nan\ne: 1e3\nf: 2001-12-14\ng: 2001-12-14t21:59:43.10-05:00\n",
    "base: &b {x: 1, y: [1, 2]}\nmerged:\n  <<: *b\n  y: 3\nalias: *b\nlist: [*b, *b]\n",
    "a: !!str 12\nb: !!int '7'\nc: !!float '1'\nd: !!bool 'yes'\ne: !!binary aGVsbG8=\nf: !!null ''\n",
    "? [1, 2]\n: list key\n1: int key\ntrue: bool key\n~: null key\n'q': quoted\n",
    "a: !!set {x, y}\nb: !!omap [{k: 1}, {j: 2}]\nc: !!pairs [{k: 1}]\nd: ''\ne: '0755'\nf: \"\\u00e9\"\n",
    # two bad values: the problem reported is the one SafeLoader's order of construction meets first
    "a: [!!bool maybe]\nb: !!int x\n",
    "a: [!foo x]\nb: !!bool maybe\n",
    "a: {[1]: 2}\nb: !!bool maybe\n",
    "a: {x: [!foo y]}\nb: [1, {c: !!int z}]\n",
]


def _read(text: str) -> tuple:
    """What load_documents makes of text: each document's data and positions, or the problems."""
    from lwsgen.load.source import load_documents

    try:
        return tuple((src.data, src.values_at, src.keys_at) for src in load_documents(text, "x.yaml"))
    except ProblemsError as err:
        return tuple(p.text() for p in err.problems)


@pytest.mark.parametrize("text", TRICKY)
def test_reading_is_what_pyyamls_safe_constructor_makes_of_it(text, monkeypatch):
    """The fast conversion (source._to_data) against SafeLoader's own construction, which it replaced:
    the same data, positions and problems (a merge that repeats a key, an unhashable key)."""
    from lwsgen.load import source

    fast = _read(text)
    monkeypatch.setattr(source, "_to_data", lambda loader, node: loader.construct_document(node))
    assert fast == _read(text)


def test_data_of_every_rendered_file_is_what_pyyamls_safe_loader_constructs():
    import yaml

    from conftest import REPO
    from lwsgen.load.source import load_documents

    files = sorted(REPO.glob("out/*/*.yaml"))
    assert len(files) > 100
    for file in files:
        text = file.read_text()
        expected = [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc is not None]
        assert [src.data for src in load_documents(text, str(file))] == expected, file


@pytest.mark.parametrize(
    "value", ["!!int ''", "!!int '-'", "!!float ''", "!!timestamp x", "!!bool maybe", "[!!int '']"]
)
def test_a_value_its_tag_cannot_read_is_a_located_problem_not_an_internal_error(tmp_path, value):
    """PyYAML's constructors fail on these with IndexError or AttributeError, which reached the CLI as
    an internal error (exit 3)."""
    [problem] = _problems(tmp_path, f"name: demo\nnode:\n  gpus: {value}\n".encode())
    assert problem.startswith("p.yaml:3:") and "cannot read as its tag says" in problem and "quote it" in problem


def test_parse_back_reads_integers_as_yaml_1_1_does():
    """The output's parse-back and the profile loader agree with SafeLoader (and the API server's YAML
    1.1 reader) on a leading zero: 0755 is octal 493, not 755."""

    from lwsgen.output.parse import parse

    text = "a: 0755\nb: 12\nc: -3\nd: 0\ne: 1_000\nf: 0o17\n"
    assert parse(text) == (fastyaml.load(text),)
