"""Problems sort by position and format exactly, with GitHub's escaping."""

from lwsgen.problems import Problem, format_github, format_json, format_text

P = [
    Problem("b.yaml", 3, 1, "node.gpus", "too few", "out-of-range"),
    Problem("a.yaml", 10, 2, "", "bad: 50%, really\nyes", "x"),
    Problem("a.yaml", 2, 7, "name", "too long", "name-too-long"),
]


def test_text_is_sorted_by_file_line_and_column():
    assert format_text(P) == (
        "a.yaml:2:7: name: too long\na.yaml:10:2: bad: 50%, really\\nyes\nb.yaml:3:1: node.gpus: too few\n"
    )


def test_github_escapes_data_and_properties():
    weird = Problem("dir,with:odd%.yaml", 1, 2, "p", "50% done\r\nnext", "c")
    assert format_github([weird]) == "::error file=dir%2Cwith%3Aodd%25.yaml,line=1,col=2::p: 50%25 done%0D%0Anext\n"


def test_json_rows_have_every_field():
    assert format_json(P[2:]) == (
        '[\n  {\n    "file": "a.yaml",\n    "line": 2,\n    "column": 7,\n    "path": "name",\n'
        '    "message": "too long",\n    "code": "name-too-long",\n    "severity": "error"\n  }\n]\n'
    )


def test_warnings_keep_their_severity_in_every_format():
    warning = Problem("p.yaml", 3, 5, "lws.maxSurge", "costly", "costly", "warning")
    assert format_text([warning]) == "p.yaml:3:5: lws.maxSurge: warning: costly\n"
    assert '"severity": "warning"' in format_json([warning])
    assert format_github([warning]) == "::warning file=p.yaml,line=3,col=5::lws.maxSurge: costly\n"


def test_control_characters_never_reach_the_output_raw():
    forged = Problem("p\x1b[2J.yaml", 1, 1, 'env["A\nfake.yaml:1:1: all good"]', "bad \x9b\u2028 value", "c")
    for text in (format_text([forged]), format_json([forged]), format_github([forged])):
        assert not any(ch in text for ch in "\x1b\x9b\u2028") and text.count("\n") == text.strip().count("\n") + 1
    assert format_text([forged]).count("\n") == 1
