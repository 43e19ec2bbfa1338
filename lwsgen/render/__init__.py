"""Stage 4, render: Deployment -> YAML text per output kind, through templates/<key>.yaml.j2.

Templates only place values. Every value goes through the one quoting filter `q`, which writes it
as a YAML double-quoted or flow scalar, so no profile string can add a key or change structure;
`finalize` refuses any `{{ }}` output that did not go through `q` (or a macro built from it).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from lwsgen.derive.model import Deployment
from lwsgen.files import cache_dir
from lwsgen.render.scalars import to_yaml_scalar
from lwsgen.resources import package_dir


class Quoted(Markup):
    """Text that `q` produced and may be placed into YAML as it is."""


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
    base = cache_dir()
    if base is None:
        return None
    directory = base / f"jinja-{jinja2.__version__}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(directory))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(package_dir("templates")),
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
    """Kind key -> rendered YAML text; each template sees only its own values, as `v`."""
    env = environment()
    return {key: env.get_template(f"{key}.yaml.j2").render(v=values) for key, values in deployment.objects.items()}
