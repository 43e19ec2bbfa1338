"""Output problems are located by one function, from the error's path and at_key, never its wording."""

from lwsgen.load.source import load_documents
from lwsgen.output.locate import problems
from lwsgen.problems import Finding

TEXT = "apiVersion: v1\nkind: Service\n---\napiVersion: v1\nkind: ConfigMap\ndata:\n  extra: value\n"


def test_at_key_points_at_the_key_and_otherwise_at_the_value():
    documents = load_documents(TEXT, "out/x/f.yaml")
    at_key = Finding(("data", "extra"), "anything at all", at_key=True)
    at_value = Finding(("data", "extra"), "unknown field, but worded so")
    [key, value] = problems(documents, [(1, at_key), (1, at_value)], " (rendered from p.yaml)", "invalid-output")
    assert (key.line, key.col, value.line, value.col) == (7, 3, 7, 10)
    assert key.file == "out/x/f.yaml" and key.code == value.code == "invalid-output"
    assert key.message == "anything at all (rendered from p.yaml)"


def test_errors_keep_their_own_code_unless_replaced():
    documents = load_documents(TEXT, "f.yaml")
    [problem] = problems(documents, [(0, Finding(("kind",), "no", code="cross-object"))])
    assert (problem.line, problem.code, problem.path) == (2, "cross-object", "kind")
