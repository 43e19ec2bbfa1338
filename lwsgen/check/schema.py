"""Stage 2a: the profile against schemas/profile.schema.json, then its defaults filled in."""

from __future__ import annotations

import copy
import datetime
import difflib
import math
import re
from functools import lru_cache
from typing import Any

from lwsgen import resources
from lwsgen.check import delivery
from lwsgen.load.source import Source
from lwsgen.problems import Problem

PROFILE_SCHEMA = "profile.schema.json"

# What a pattern means, for messages a person can act on.
PATTERN_HELP = {
    "^[a-z]([-a-z0-9]*[a-z0-9])?$": (
        "a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"
    ),
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": "a DNS-1123 label: lower-case letters, digits and '-'",
    "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$": "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'",
    "^[0-9]+%$": "an integer or a percentage such as '25%'",
    "^([0-9]+(ms|s|m|h))+$": "a duration such as 15s, 1m or 500ms",
    "^1\\.[0-9]+$": "a Kubernetes minor version such as 1.33",
    "^0\\.[0-9]+(\\.[0-9]+)?$": "an LWS version such as 0.10 or 0.7.0",
    "^[-._a-zA-Z][-._a-zA-Z0-9]*$": (
        "an environment variable name: letters, digits, '_', '-', '.', not starting with a digit"
    ),
    "^/": "an absolute path",
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": (
        "a host name in lower case, optionally starting with '*.' (llm.example.com, *.example.com)"
    ),
    "^([0-9]{1,5}(h|m|s|ms)){1,4}$": "a Gateway API duration such as 300s, 10m or 1h30m",
    "^/[^\\s;]*$": "a path starting with '/', without spaces or ';'",
    "^[0-9a-f]{40}$": "a full commit hash: 40 lower-case hexadecimal digits (a branch or tag can move)",
    "^[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*$": "a Hub repository id, owner/name",
    "^([0-9]{1,3}(\\.[0-9]{1,3}){3}|[0-9a-fA-F:]+)/[0-9]{1,3}$": "a CIDR such as 10.0.0.0/8 or fd00::/8",
    "^[^/\\x00-\\x1f][^\\x00-\\x1f]*$": "a path inside the repository, not starting with '/'",
    "^volcano\\.sh/[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$": (
        "a volcano.sh/ annotation key (LeaderWorkerSet copies only those onto the PodGroup)"
    ),
}
QUANTITY_HELP = "a Kubernetes quantity such as 64, 500m, 512Gi, 1.5Ti or 1e9, not negative"


@lru_cache(maxsize=1)
def profile_schema() -> dict[str, Any]:
    return resources.schema(PROFILE_SCHEMA)


@lru_cache(maxsize=1)
def _validator():
    import jsonschema_rs

    # From the text: jsonschema-rs parses it faster than it converts the parsed dict.
    return jsonschema_rs.validator_for(resources.schema_bytes(PROFILE_SCHEMA).decode("utf-8"))


def _subschema(schema_path: list) -> dict[str, Any]:
    node: Any = profile_schema()
    for part in schema_path:
        node = node[part]
    return node


def _allowed_fields(schema_path: list) -> list[str]:
    parent = _subschema(schema_path[:-1])
    return sorted(parent.get("properties", {}))


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _json_type(value: Any) -> str:
    """The JSON Schema type name of a loaded YAML value."""
    for python, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
    ):
        if isinstance(value, python):
            return name
    return "null"


def _pattern_help(pattern: str, schema_path: list) -> str:
    if "quantity" in schema_path:
        return QUANTITY_HELP
    return PATTERN_HELP.get(pattern, f"text matching {pattern}")


def _wanted(kind, instance: Any, schema_path: list) -> str:
    """What a field of the wrong type must be. A scalar YAML read as a number or boolean where a
    string belongs is to be quoted, unless quoting alone would still fail the field's pattern
    (`interval: 30` is no duration): then say what the pattern allows."""
    wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in kind.types)
    if kind.types != ["string"] or _json_type(instance) not in ("integer", "number", "boolean"):
        return wanted
    pattern = _subschema(schema_path[:-1]).get("pattern")
    text = str(instance).lower() if isinstance(instance, bool) else str(instance)
    if pattern is not None and re.search(pattern, text) is None:
        return _pattern_help(pattern, schema_path)
    return f"{wanted} (quote it)"


def _describe(err, src: Source) -> Problem:
    """Turn one jsonschema-rs error into a Problem that says what is allowed."""
    kind = err.kind
    name = kind.name
    path = tuple(err.instance_path)
    schema_path = list(err.schema_path)
    instance = err.instance
    if name == "additionalProperties":
        field = kind.unexpected[0]
        fields = _allowed_fields(schema_path)
        lowered = {f.lower(): f for f in fields}  # GPUs -> gpus too
        close = difflib.get_close_matches(str(field).lower(), list(lowered), n=1, cutoff=0.75)
        guess = f"did you mean '{lowered[close[0]]}'? " if close else ""
        message = f"unknown field; {guess}allowed here: {', '.join(fields)}"
        return src.problem(path + (field,), message, "unknown-field", key=True)
    if name == "required":
        # a file that is meant only as a base says so; being extended no longer makes it one
        hint = "; a file that is only a base says base: true" if path == () else ""
        # the field's own path, placed where it belongs (its parent's key; line 1 for the top level)
        return src.problem(path + (kind.property,), f"missing required field{hint}", "missing-field", key=True)
    if name.startswith("oneOf") and all(set(o) == {"required"} for o in _subschema(schema_path)):
        fields = " or ".join(f"'{o['required'][0]}'" for o in _subschema(schema_path))
        return src.problem(path, f"give exactly one of {fields}", "one-of")
    if name == "anyOf" and all(set(o) == {"required"} for o in _subschema(schema_path)):
        fields = " or ".join(f"'{o['required'][0]}'" for o in _subschema(schema_path))
        return src.problem(path, f"missing required field {fields}", "missing-field", key=True)
    if name == "enum":
        options = ", ".join(str(o) for o in kind.options)
        return src.problem(path, f"{instance!r} is not allowed; use one of: {options}", "not-allowed")
    if name == "type":
        wanted = _wanted(kind, instance, schema_path)
        return src.problem(path, f"must be {wanted}, not {_TYPE_WORDS[_json_type(instance)]}", "wrong-type")
    if name == "pattern":
        return src.problem(path, f"{instance!r} is not {_pattern_help(kind.pattern, schema_path)}", "bad-format")
    if name == "propertyNames":
        inner = kind.error
        bad = inner.instance
        pattern = getattr(inner.kind, "pattern", "")
        return src.problem(
            path + (bad,), f"key {bad!r} is not {_pattern_help(pattern, schema_path)}", "bad-key", key=True
        )
    if name in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "more than",
            "exclusiveMaximum": "less than",
        }
        return src.problem(path, f"{instance} is out of range; must be {words[name]} {kind.limit}", "out-of-range")
    if name in ("minLength", "maxLength"):
        words = "at least" if name == "minLength" else "at most"
        return src.problem(path, f"must be {words} {kind.limit} characters long", "bad-length")
    if name == "uniqueItems":
        return src.problem(path, "list items must be unique", "duplicate-item")
    return src.problem(path, err.message, "invalid")


# Characters no profile string may hold: C0 controls but tab and newline, DEL, C1 controls, the
# non-characters U+FFFE/U+FFFF and lone surrogates. Kubernetes tools refuse them in manifests, and
# they forge lines in logs and terminals.
_BAD_TEXT = frozenset(
    chr(c) for c in (*range(0x09), 0x0B, 0x0C, *range(0x0D, 0x20), *range(0x7F, 0xA0), 0xFFFE, 0xFFFF)
)
INT_RANGE = (-(2**63), 2**63 - 1)  # what Kubernetes (int64) and the schema validator hold


def _text_problem(text: str) -> str | None:
    bad = next((ch for ch in text if ch in _BAD_TEXT or "\ud800" <= ch <= "\udfff"), None)
    if bad is None:
        return None
    return f"contains the control character U+{ord(bad):04X}; only printable text, tabs and newlines are allowed"


def _non_json_values(data: Any, path: tuple, src: Source, out: list[Problem]) -> None:
    """YAML types JSON has no word for (dates, binary, sets, NaN), control characters and numbers
    beyond 64 bits are refused before the schema."""
    if isinstance(data, dict):
        for key, value in data.items():
            why = _text_problem(key) if isinstance(key, str) else None
            if why:
                out.append(src.problem(path, f"a key {why}", "bad-text"))
                continue
            _non_json_values(value, path + (key,), src, out)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _non_json_values(value, path + (index,), src, out)
    elif isinstance(data, str):
        why = _text_problem(data)
        if why:
            out.append(src.problem(path, why, "bad-text"))
    elif isinstance(data, bool) or data is None:
        pass
    elif isinstance(data, int):
        if not INT_RANGE[0] <= data <= INT_RANGE[1]:
            out.append(
                src.problem(
                    path, f"a {len(str(abs(data)))}-digit number is out of range; at most 2^63 - 1", "out-of-range"
                )
            )
    elif isinstance(data, (datetime.date, datetime.datetime)):
        out.append(src.problem(path, f"YAML read {data!s} as a date; quote it to make it a string", "wrong-type"))
    elif isinstance(data, bytes):
        out.append(src.problem(path, "binary values are not allowed; use a string", "wrong-type"))
    elif isinstance(data, float) and not math.isfinite(data):
        out.append(src.problem(path, f"{data} is not a usable number", "wrong-type"))
    elif not isinstance(data, float):
        out.append(src.problem(path, f"unsupported YAML value of type {type(data).__name__}", "wrong-type"))


def _integers(schema: dict[str, Any], data: Any, path: tuple, src: Source, out: list[Problem]) -> None:
    """JSON Schema counts 8.0 as an integer; a profile does not: integer fields take whole numbers."""
    schema = _resolve(schema)
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if isinstance(data, float) and "integer" in kinds and "number" not in kinds:
        out.append(src.problem(path, f"must be an integer, not {data!r}", "wrong-type"))
    elif isinstance(data, dict):
        properties, extra = schema.get("properties", {}), schema.get("additionalProperties")
        for key, value in data.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                _integers(sub, value, path + (key,), src, out)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for index, value in enumerate(data):
            _integers(schema["items"], value, path + (index,), src, out)


def referenced(ref: str) -> dict[str, Any]:
    """The part of the profile schema a local $ref points at: #/$defs/<name> or #/properties/<field>."""
    node: Any = profile_schema()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return {**referenced(ref), **{k: v for k, v in schema.items() if k != "$ref"}}


PARTIAL_SCHEMA = "profile-partial.schema.json"


def partial_schema() -> dict[str, Any]:
    """The profile schema for a file that is part of a profile: a base, or an overlay (`extends:`).
    Every field as in a profile, none required wherever the merge reaches: maps merge key by key,
    so an overlay may give `tokenSecret: {name}` and its base the key. Lists replace whole, so a
    list item keeps its required fields. The committed schemas/profile-partial.schema.json is this
    (make docs); editors use it for overlays and bases."""
    full = profile_schema()
    partial = _loosened(copy.deepcopy(full), full.get("$defs", {}))
    partial["$id"] = full["$id"].replace(PROFILE_SCHEMA, PARTIAL_SCHEMA)
    partial["title"] = "lwsgen profile part: an overlay (extends:) or a base (fields of a profile; none required)"
    partial["$defs"] = full["$defs"]
    return partial


def _only_required(options: Any) -> bool:
    return isinstance(options, list) and all(isinstance(o, dict) and set(o) == {"required"} for o in options)


def _loosened(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """node without what makes a field required, down every path a deep merge follows; a $ref on
    such a path is inlined (the definition may be required elsewhere, inside a list)."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = {**copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), **{k: v for k, v in node.items() if k != "$ref"}}
    for key in ("required", "if", "then", "else"):
        node.pop(key, None)
    for key in ("oneOf", "anyOf"):
        if _only_required(node.get(key)):
            node.pop(key)
    for name, child in (node.get("properties") or {}).items():
        if isinstance(child, dict):
            node["properties"][name] = _loosened(child, defs)
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _loosened(node["additionalProperties"], defs)
    return node


@lru_cache(maxsize=1)
def _partial_validator():
    import jsonschema_rs

    return jsonschema_rs.validator_for(resources.schema_bytes(PARTIAL_SCHEMA).decode("utf-8"))


def check_partial(src: Source) -> list[Problem]:
    """A base's fields against the profile schema, none of them required."""
    problems: list[Problem] = []
    _non_json_values(src.data, (), src, problems)
    if problems:
        return problems
    problems = [_describe(err, src) for err in _partial_validator().iter_errors(src.data)]
    _integers(profile_schema(), src.data, (), src, problems)
    return problems


def check_schema(src: Source) -> list[Problem]:
    problems: list[Problem] = []
    _non_json_values(src.data, (), src, problems)
    if problems:
        return problems
    problems = [_describe(err, src) for err in _validator().iter_errors(src.data)]
    _integers(profile_schema(), src.data, (), src, problems)
    return problems


def _fill(schema: dict[str, Any], data: dict[str, Any]) -> None:
    for field, sub in schema.get("properties", {}).items():
        if "$ref" in sub:
            sub = _resolve(sub)
        if field not in data and "default" in sub:
            data[field] = copy.deepcopy(sub["default"])
        if isinstance(data.get(field), dict) and sub.get("type") == "object":
            _fill(sub, data[field])
        items = sub.get("items") or {}
        if isinstance(data.get(field), list) and "properties" in items:
            for item in data[field]:
                if isinstance(item, dict):
                    _fill(items, item)


def with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of a schema-valid profile with every schema default filled in."""
    filled = copy.deepcopy({k: v for k, v in data.items() if k != "roles"})
    _fill(profile_schema(), filled)
    if "roles" in data:  # a role holds only what it overrides: its profile is filled whole (check/roles.py)
        filled["roles"] = copy.deepcopy(data["roles"])
    # defaults that depend on other fields: a Gateway in front makes the Service internal; a
    # downloaded model is where the download puts it
    filled["service"].setdefault("type", "ClusterIP" if filled["gateway"]["enabled"] else "LoadBalancer")
    if "source" in filled["model"] and filled.get("storage"):
        filled["model"]["path"] = delivery.derived_path(filled)
    return filled
