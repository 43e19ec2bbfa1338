"""Stage 4, render: Deployment -> YAML text per output file, through templates/<kind>.yaml.j2.

Templates only place values. Every value goes through the one quoting filter `q`, which writes it
as a YAML double-quoted or flow scalar, so no profile string can add a key or change structure;
`finalize` refuses any `{{ }}` output that did not go through `q` (or a macro built from it).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from lwsgen.model import Deployment


class Quoted(Markup):
    """Text that `q` produced and may be placed into YAML as it is."""


# Characters a YAML reader refuses, or folds as line breaks inside a double-quoted scalar, that
# json.dumps leaves as they are (it already escapes everything below 0x20): DEL and C1 controls
# (NEL among them), the Unicode line and paragraph separators, surrogates, U+FFFE and U+FFFF.
_NEEDS_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _string(value: str) -> str:
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


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (keyed by each template's source checksum, so an edited
    template is recompiled): compiling the templates costs more than a whole render otherwise.
    LWSGEN_NO_CACHE=1 turns it off; an unwritable cache directory just means no cache."""
    if os.environ.get("LWSGEN_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(base, "lwsgen", f"jinja-{jinja2.__version__}")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(directory)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lwsgen", "templates"),
        bytecode_cache=_bytecode_cache(),
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
