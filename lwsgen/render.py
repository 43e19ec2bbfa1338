"""Stage 4, render: Deployment -> YAML text per output file, through templates/<kind>.yaml.j2.

Templates only place values. Every value goes through the one quoting filter `q`, which writes it
as a YAML double-quoted or flow scalar, so no profile string can add a key or change structure;
`finalize` refuses any `{{ }}` output that did not go through `q` (or a macro built from it).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from lwsgen.model import Deployment


class Quoted(Markup):
    """Text that `q` produced and may be placed into YAML as it is."""


# Characters a YAML reader refuses, or folds as line breaks inside a double-quoted scalar.
_NEEDS_ESCAPE = re.compile("[^\x09\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _string(value: str) -> str:
    return _NEEDS_ESCAPE.sub(lambda m: _escape(m.group()), json.dumps(value, ensure_ascii=False))


def _float(value: float) -> str:
    # YAML 1.1 (PyYAML) reads a float only with a '.' and a signed exponent.
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if exponent and exponent[0] not in "+-":
        exponent = "+" + exponent
    return mantissa + ("e" + exponent if exponent else "")


def to_yaml_scalar(value: Any) -> str:
    """One value as YAML flow text that parses back to exactly the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_string(str(k))}: {to_yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_yaml_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot place a {type(value).__name__} into YAML")


def q(value: Any) -> Quoted:
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()  # StrictUndefined: a missing value is an error, never a blank
    return Quoted(to_yaml_scalar(value))


def _only_quoted(value: Any) -> Any:
    # Markup is what q returns and what macros (made only of q output and literal text) return.
    if isinstance(value, Markup):
        return value
    raise TypeError(f"template placed {value!r} without the q filter")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lwsgen", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # with finalize: only q output (Markup) reaches the text
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_only_quoted,
    )
    env.filters["q"] = q
    return env


def render(deployment: Deployment) -> dict[str, str]:
    """Object key -> rendered YAML text, one template per object kind."""
    env = environment()
    return {key: env.get_template(f"{key}.yaml.j2").render(d=deployment)
            for key in (*deployment.objects, *deployment.extra_files)}
