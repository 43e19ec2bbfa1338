"""One value as YAML flow text: what the templates' quoting filter writes and the emitter quotes with."""

from __future__ import annotations

import json
import re
from typing import Any

# Characters a YAML reader refuses, or folds as line breaks inside a double-quoted scalar, that
# json.dumps leaves as they are (it already escapes everything below 0x20): DEL and C1 controls
# (NEL among them), the Unicode line and paragraph separators, surrogates, U+FFFE and U+FFFF.
_NEEDS_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def quoted_string(value: str) -> str:
    return _NEEDS_ESCAPE.sub(lambda m: _escape(m.group()), json.dumps(value, ensure_ascii=False))


def float_text(value: float) -> str:
    # YAML 1.1 (PyYAML) reads a float only with a '.' and a signed exponent.
    if value != value or value in (float("inf"), float("-inf")):
        return ".nan" if value != value else (".inf" if value > 0 else "-.inf")
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if exponent and exponent[0] not in "+-":
        exponent = "+" + exponent
    return mantissa + ("e" + exponent if exponent else "")


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return False


def to_yaml_scalar(value: Any) -> str:
    """One value as YAML flow text that parses back to exactly the same value."""
    if isinstance(value, (dict, list, tuple)) and not _has_float(value):
        # JSON is YAML flow syntax for strings, ints, booleans, null and containers of them:
        # one C-level encode, then the escapes YAML needs beyond JSON's.
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        return _NEEDS_ESCAPE.sub(lambda m: _escape(m.group()), text)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return quoted_string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{quoted_string(str(k))}: {to_yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_yaml_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot place a {type(value).__name__} into YAML")
