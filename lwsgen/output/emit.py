"""Objects -> YAML text, the form lwsgen writes: block style, keys in the order Python holds them,
strings plain wherever YAML reads them back as the same string, multi-line strings as literal
blocks, other strings single-quoted, or double-quoted (JSON's escapes plus the ones YAML needs
beyond them) where a character must be escaped.

Written here rather than through libyaml's emitter because the data is only JSON-like and the
emitter is the costly part of a render: building a node per value for libyaml and its per-scalar
callbacks cost about 6x what this does. tests/test_render.py proves that PyYAML (pure and libyaml)
reads back exactly the objects written, for any JSON-like data; tests/test_conformance.py that
kustomize's Go reader reads back the same strings.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml

from lwsgen.scalars import float_text, quoted_string

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()


@lru_cache(maxsize=8192)
def resolved_tag(kind: type, value: str, implicit: tuple[bool, bool]) -> str:
    """PyYAML's tag resolution, memoized: the safe resolvers have no path resolvers, so the tag
    depends only on (node kind, value, implicit). Parse-back (objects.py) resolves with it too, so
    what is written plain and what is read back agree."""
    return yaml.resolver.Resolver.resolve(_RESOLVER, kind, value, implicit)


# A conservative plain scalar: printable ASCII, a letter, digit or one of _/.$(^ first (no indicator),
# no ': ' or ' #', no ':' or space at the end, single spaces only; block context, so flow
# indicators inside are fine (PromQL and shell stay readable). Linear: alternatives are disjoint.
_PLAIN = re.compile(
    r"(?:[A-Za-z0-9_/.$(^]|-(?=[^ ]))(?:[-A-Za-z0-9_./=+()$~^;@%\[\]{},\"'<>*&!|?`\\]|:(?=[^ ])| (?=[^ #]))*\Z"
)
# Plain text that some YAML reader other than PyYAML takes for a number or a boolean: Go's yaml.v3
# (kustomize) parses numbers with underscores dropped, base prefixes and floats such as 08, and
# yaml.v2 (kubectl's sigs.k8s.io/yaml) reads y and n as booleans. Such strings are quoted.
_NUMBER_LIKE = re.compile(
    r"[-+]?(?:[0-9_]+|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"  # integers
    r"|(?:\.[0-9_]+|[0-9_]+(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"  # floats
    r"|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)\Z"
)  # YAML 1.1 base 60
_GO_BOOLEANS = frozenset({"y", "Y", "n", "N"})
# A top-level key starting so would start or end a document.
_DOCUMENT_MARKERS = ("---", "...")
# Implicit keys may be at most 1024 characters long (YAML 1.1); longer ones take the explicit '? ' form.
_LONGEST_IMPLICIT_KEY = 1000


@lru_cache(maxsize=8192)
def string(value: str) -> str:
    """One-line text of a string: plain if every YAML reader takes that plain text for this same
    string, else single-quoted if nothing in it needs an escape, else double-quoted."""
    plain_tag = resolved_tag(yaml.ScalarNode, value, (True, False)) if _PLAIN.match(value) else None
    if (
        plain_tag == _STR_TAG
        and value not in _GO_BOOLEANS
        and not _NUMBER_LIKE.match(value)
        and not value.startswith(_DOCUMENT_MARKERS)
    ):
        return value
    if value.isprintable():  # no controls, line breaks, BOM or surrogates: nothing to escape
        return "'" + value.replace("'", "''") + "'"
    return quoted_string(value)


def _literal_safe(value: str) -> bool:
    # A literal block holds printable text, tabs and line feeds as they are; not other controls,
    # characters YAML reads as line breaks, the BOM or surrogates (str.isprintable refuses those).
    return value.replace("\n", "").replace("\t", "").isprintable()


def _literal(value: str, indent: int) -> str:
    """A literal block: '|' with the chomping indicator the trailing line breaks need."""
    if value.endswith("\n\n"):
        head = "|+"
    elif value.endswith("\n"):
        head = "|"
    else:
        head = "|-"
    lines = value.split("\n")
    if value.endswith("\n"):
        lines.pop()
    pad = " " * indent
    return head + "".join(f"\n{pad}{line}" if line else "\n" for line in lines)


def _scalar(value: Any, indent: int) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        # Leading whitespace would change how YAML finds a block's indentation: quote those.
        if "\n" in value and value[0] not in " \t\n" and value.strip() and _literal_safe(value):
            return _literal(value, indent)
        return string(value)
    raise TypeError(f"cannot write a {type(value).__name__} as YAML")


def _after_indicator(value: Any, indent: int) -> str:
    """The text that follows 'key:' or '-': a block on the next lines, or ' scalar'."""
    if isinstance(value, dict) and value:
        return "\n" + _mapping(value, indent)
    if isinstance(value, (list, tuple)) and value:
        return "\n" + _sequence(value, indent - 2)  # sequences in a mapping are not indented
    if isinstance(value, dict):
        return " {}"
    if isinstance(value, (list, tuple)):
        return " []"
    return " " + _scalar(value, indent)


def _mapping(value: dict, indent: int) -> str:
    pad = " " * indent
    lines = []
    for key, item in value.items():
        key_text = _scalar(key, indent) if not isinstance(key, str) else string(key)
        if len(key_text) > _LONGEST_IMPLICIT_KEY:
            lines.append(f"{pad}? {key_text}\n{pad}:{_after_indicator(item, indent + 2)}")
        else:
            lines.append(f"{pad}{key_text}:{_after_indicator(item, indent + 2)}")
    return "\n".join(lines)


def _sequence(value: list | tuple, indent: int) -> str:
    pad = " " * indent
    lines = []
    for item in value:
        if isinstance(item, dict) and item:
            lines.append(pad + "- " + _mapping(item, indent + 2)[indent + 2 :])
        elif isinstance(item, (list, tuple)) and item:
            lines.append(pad + "- " + _sequence(item, indent + 2)[indent + 2 :])
        else:
            lines.append(pad + "-" + _after_indicator(item, indent + 2))
    return "\n".join(lines)


def document(obj: dict) -> str:
    return _mapping(obj, 0) + "\n" if obj else "{}\n"


def documents(objs: tuple[dict, ...] | list[dict]) -> str:
    """One document, or several each opened with '---'."""
    if len(objs) == 1:
        return document(objs[0])
    return "".join("---\n" + document(obj) for obj in objs)
