"""One rule model: every code lwsgen reports is in the catalog (lwsgen/codes.py) and every catalog code
is reported somewhere; every rule is registered once with known codes, a scope, a severity and a
doc; a rule that reports a code it did not declare is caught; the set rules read one inventory."""

import ast
import re
from pathlib import Path

import pytest

from conftest import REPO
from lwsgen import registry
from lwsgen.check import rules as profile_rules
from lwsgen.codes import CODES
from lwsgen.commands import docs
from lwsgen.output import guards, relations
from lwsgen.output.parse import parse
from lwsgen.problems import ERROR, WARNING, Finding

SHAPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# call name -> the positional argument that is the code (Source.problem(path, message, code), ...)
CODE_ARGUMENT = {"problem": 2, "Finding": 2, "Problem": 5, "problems": 3, "_at_key": 4, "refuse": 1}


def _candidates(node: ast.AST) -> list[ast.AST]:
    """The expressions a code is written as: a code argument or keyword, a rule's declared codes, the
    third item of a (path, message, code) tuple, or `code = ...`."""
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        found = [k.value for k in node.keywords if k.arg == "code"]
        if name == "rule":
            return found + list(node.args)
        if name == "Problem" and any(isinstance(a, ast.Starred) for a in node.args):
            return found + node.args[-1:]
        at = CODE_ARGUMENT.get(name)
        return found + ([node.args[at]] if at is not None and len(node.args) > at else [])
    if isinstance(node, ast.Tuple) and len(node.elts) == 3:
        path, message, code = node.elts
        said = isinstance(message, ast.Constant) and len(str(message.value)) < 30  # a path's own item
        return [] if isinstance(path, (ast.Constant, ast.Starred)) or said else [code]
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "code" for t in node.targets):
        return [node.value]
    return []


def codes_in_source(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for expression in _candidates(node):
                for value in (
                    [expression.body, expression.orelse] if isinstance(expression, ast.IfExp) else [expression]
                ):
                    if isinstance(value, ast.Constant) and isinstance(value.value, str) and SHAPE.match(value.value):
                        found.setdefault(value.value, f"{path.relative_to(root)}:{value.lineno}")
    return found


def test_every_code_the_source_reports_is_in_the_catalog_and_every_catalog_code_is_reported():
    reported = codes_in_source(REPO / "lwsgen")
    assert {code: at for code, at in reported.items() if code not in CODES} == {}, "add it to lwsgen/codes.py"
    assert sorted(set(CODES) - set(reported)) == [], "a catalog entry no code in the source reports"


def test_the_source_scan_finds_codes_in_every_form_they_are_written(tmp_path):
    (tmp_path / "m.py").write_text(
        "src.problem(p, m, 'one')\nFinding(p, m, code='two')\nProblem(f, 1, 1, p, m, 'three')\n"
        "x = ((a,), message, 'four')\ncode = 'five'\nlocated = (('spec',), 'port', 'not-a-code')\n",
        encoding="utf-8",
    )
    assert set(codes_in_source(tmp_path)) == {"one", "two", "three", "four", "five"}


def test_every_registered_rule_has_catalog_codes_a_scope_a_severity_and_a_doc():
    assert profile_rules.RULE_MODULES and relations.SET_RULE_MODULES and guards  # every rule module is imported
    rules = registry.registered()
    assert {rule.scope for rule in rules} == set(registry.SCOPES)
    for rule in rules:
        assert rule.codes and set(rule.codes) <= set(CODES), rule.name
        assert rule.severity in registry.SEVERITIES and rule.doc, rule.name
    names = [rule.name for rule in rules]
    assert len(names) == len(set(names)), "a function registered twice"


def test_the_catalog_says_every_scope_a_registered_rule_reports_a_code_in():
    for rule in registry.registered():
        for code in rule.codes:
            assert rule.scope in CODES[code].scope.split("|"), f"{code}: {rule.name} reports it in {rule.scope}"


def test_a_rule_declares_known_codes_and_has_a_doc():
    with pytest.raises(ValueError, match="known codes"):
        registry.rule("no-such-code", scope=registry.PROFILE)
    with pytest.raises(ValueError, match="docstring"):
        registry.rule("conflict", scope=registry.PROFILE)(lambda profile, src: [])
    with pytest.raises(ValueError, match="one code"):
        registry.rule("cross-object", "bad-quantity", scope=registry.SET)


def test_a_rule_that_reports_a_code_it_did_not_declare_fails_under_the_suite(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED", [])

    @registry.rule("conflict", scope=registry.PROFILE, severity=WARNING)
    def says_another(profile, src):
        """Says a code it did not declare."""
        return [Finding((), "message", "exposed")]

    with pytest.raises(AssertionError, match="reported \\['exposed'\\], not among its codes \\['conflict'\\]"):
        registry.run(registry.PROFILE, WARNING, None, None)
    monkeypatch.setenv(registry.STRICT_ENV, "0")
    assert registry.run(registry.PROFILE, WARNING, None, None) == [Finding((), "message", "exposed")]
    assert registry.run(registry.PROFILE, ERROR, None, None) == []


def test_the_set_rules_read_one_inventory_per_set(monkeypatch):
    built = []
    original = relations.inventory

    def counting(objects_by_file):
        built.append(1)
        return original(objects_by_file)

    monkeypatch.setattr(relations, "inventory", counting)
    directory = REPO / "out" / "vllm-llama33-70b-pd"
    files = {p.name: parse(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.yaml"))}
    assert list(relations.cross_object_errors(files)) == []
    assert built == [1]
    assert not [name for name in vars(relations) if name.isupper() and isinstance(vars(relations)[name], dict)]


def test_docs_rules_lists_every_code_with_its_meaning_and_fix():
    text = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for code, entry in CODES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{code}` |")), None)
        assert row is not None, code
        assert entry.meaning.replace("|", "\\|") in row and entry.fix.replace("|", "\\|") in row, code
    assert docs.stale(REPO) == []
