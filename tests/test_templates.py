"""Each object's keys are written in one place, its template; Python supplies values and decides.

Templates may only place values (through q, or a macro made of q), loop over what Python gives
them and place an optional block Python set (`x is not none`) or JSON's commas (`not loop.last`);
Python (lwsgen/derive, the runtime plugins) builds no mapping keyed by a Kubernetes field name."""

import ast
import json
import re

from conftest import REPO
from lwsgen.output import validate

STATEMENT = re.compile(r"\{%-?\s*(.*?)\s*-?%\}", re.S)
ALLOWED_STATEMENT = re.compile(
    r"(from \"_(k8s\.yaml|grafana\.json)\.j2\" import [\w, ]+|macro \w+\(\w+\)|endmacro"
    r"|for \w+ in [\w.]+|endfor|if [\w.]+ is not none|endif"
    # the commas JSON puts between a list's items (templates/_grafana.json.j2)
    r"|if not loop\.last"
    # a file of several objects places each through that object's own template
    r"|with v = v\.\w+|endwith|include \"[\w-]+\.yaml\.j2\")"
)


def _templates():
    return sorted((REPO / "templates").glob("*.j2"))


def test_templates_only_place_values():
    for template in _templates():
        for statement in STATEMENT.findall(template.read_text()):
            assert ALLOWED_STATEMENT.fullmatch(statement), (template.name, statement)
        for expression in re.findall(r"\{\{(.*?)\}\}", template.read_text()):
            filters = re.findall(r"\|\s*(\w+)", expression)
            assert set(filters) <= {"q", "indent"}, (template.name, expression)


def _field_names(node, out):
    """Every property name a JSON schema declares (not the keys of maps, which are data)."""
    if isinstance(node, dict):
        out.update(node.get("properties", {}))
        for value in node.values():
            _field_names(value, out)
    elif isinstance(node, list):
        for value in node:
            _field_names(value, out)
    return out


def test_python_builds_no_mapping_keyed_by_kubernetes_fields():
    names: set[str] = set()
    for text in validate.strict_texts("1.33").values():
        _field_names(json.loads(text), names)
    assert {"containerPort", "matchLabels", "scaleTargetRef", "valueFrom"} <= names
    # Keys that are lwsgen's own names, not object fields: naming.SUFFIXES is keyed by Names attributes.
    own = {"naming.py": {"service"}}
    offenders = []
    for module in sorted([*(REPO / "lwsgen" / "derive").glob("*.py"), *(REPO / "lwsgen" / "runtimes").glob("*.py")]):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                clashes = keys & names - own.get(module.name, set())
                offenders += [f"{module.name}:{node.lineno}: {key}" for key in sorted(clashes)]
    assert offenders == []
