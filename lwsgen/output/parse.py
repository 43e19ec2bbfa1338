"""Stage 5, parse back: rendered text -> objects, one file per output kind."""

from typing import Any

import yaml

from lwsgen.derive.kinds import BY_KEY
from lwsgen.load.source import plain_decimal
from lwsgen.output import emit
from lwsgen.records import Record
from lwsgen.yamlread import SAFE_LOADER

KUSTOMIZATION = "kustomization.yaml"


def _resolve(self, kind, value, implicit):
    """Scalars resolve through the memoized resolver (keys and values repeat across objects)."""
    if kind is yaml.ScalarNode:
        return emit.resolved_tag(kind, value, implicit)
    return yaml.resolver.Resolver.resolve(self, kind, value, implicit)


def _no_path(self, *args):
    return None  # the safe resolvers have no path resolvers to track


class _Loader(SAFE_LOADER):
    resolve, descend_resolver, ascend_resolver = _resolve, _no_path, _no_path


class OutputFile(Record):
    """One file of OUT/<name>/ and the objects it holds."""

    name: str
    objects: tuple[dict[str, Any], ...]
    in_kustomization: bool = True
    header: str = ""  # comment lines written above the YAML (files that are not cluster objects)


_STR, _INT, _BOOL, _NULL, _MAP, _SEQ = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null", "map", "seq"))
_CONSTRUCTOR = yaml.SafeLoader("")  # for the scalar types the fast path leaves to PyYAML


def _to_python(node: yaml.Node) -> Any:
    """A composed node as Python data, as SafeLoader builds it for the values templates write,
    without SafeLoader's per-node bookkeeping (libyaml parses; this only converts), and with
    the rule that null means 'not written' applied on the way: templates place every field, and
    Python sets the ones to leave out to None."""
    tag = node.tag
    if tag == _MAP:
        pairs = ((_to_python(key), _to_python(value)) for key, value in node.value)
        return {key: value for key, value in pairs if value is not None}
    if tag == _SEQ:
        return [_to_python(item) for item in node.value]
    if tag == _STR:
        return node.value
    if tag == _NULL:
        return None
    if tag == _INT and plain_decimal(node.value):  # not 0755: YAML 1.1 reads that as octal (493)
        return int(node.value)
    if tag == _BOOL and node.value in ("true", "false"):
        return node.value == "true"
    return _CONSTRUCTOR.construct_object(node, deep=True)


def parse(text: str) -> tuple[dict[str, Any], ...]:
    docs = (_to_python(node) for node in yaml.compose_all(text, Loader=_Loader))
    return tuple(doc for doc in docs if doc is not None)


def build(rendered: dict[str, str]) -> list[OutputFile]:
    """Kind key -> rendered text, parsed back into the files of OUT/<name>/, sorted by name."""

    files = [
        OutputFile(BY_KEY[key].file, parse(text), BY_KEY[key].in_kustomization, BY_KEY[key].header)
        if key in BY_KEY
        else OutputFile(f"{key}.yaml", parse(text))  # a kind the profile's templates add
        for key, text in rendered.items()
    ]
    return sorted(files, key=lambda f: f.name)


def dump(objects: tuple[dict[str, Any], ...], header: str = "") -> str:
    """Objects -> YAML text (output/emit.py); the same objects always give the same bytes."""
    return header + emit.documents(objects)
