"""Stage 4, render: Deployment -> YAML text per output kind, through templates/<key>.yaml.j2.

Templates only place values. Every value goes through the one quoting filter `q`, which writes it
as a YAML double-quoted or flow scalar, so no profile string can add a key or change structure;
`finalize` refuses any `{{ }}` output that is not Quoted: what `q` returns, or what a macro (made
only of literal text and q output) returns. Macros return Quoted because the environment joins
template output with `concat` (Jinja's own hook for it); `indent` shifts macro output only.
Not HTML autoescaping: Markup's per-piece escaping cost a third of a render.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from lwsgen.bounds import MAX_TEMPLATE_BYTES
from lwsgen.derive.model import Deployment, Several
from lwsgen.files import cache_dir, private_dir, read_cached, trusted
from lwsgen.resources import package_dir
from lwsgen.scalars import to_yaml_scalar

COMPILED_FORMAT = 2  # 1: autoescaped Markup; 2: Quoted through concat


class Quoted(str):
    """Text that `q` or a macro produced and may be placed into YAML as it is."""

    __slots__ = ()


def q(value: Any) -> Quoted:
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()  # StrictUndefined: a missing value is an error, never a blank
    return Quoted(to_yaml_scalar(value))


def _only_quoted(value: Any) -> Any:
    if type(value) is Quoted:
        return value
    raise TypeError(f"template placed {value!r} without the q filter")


def indent(text: Quoted, width: int) -> Quoted:
    """Macro output shifted right by width, from its second line on (where the macro call stands)."""
    if type(text) is not Quoted:
        raise TypeError(f"indent shifts macro output only, not {text!r}")
    pad = " " * width
    first, *rest = text.split("\n")
    return Quoted("\n".join([first, *(pad + line if line else line for line in rest)]))


class _Environment(jinja2.Environment):
    # Compiled templates and macros join their output with environment.concat: so a macro made of
    # literal text and Quoted values returns Quoted.
    concat = staticmethod(lambda parts: Quoted("".join(parts)))


class KeptBytecode(jinja2.FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, its entries read as every lwsgen cache entry is
    (files.read_cached): the code in them runs, so a file others could have written is compiled anew."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        kept = read_cached(Path(self.directory) / (self.pattern % (bucket.key,)))
        if kept is not None:
            bucket.bytecode_from_string(kept)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (keyed by each template's source checksum, so an edited
    template is recompiled): compiling the templates costs more than a whole render otherwise.
    LWSGEN_NO_CACHE=1 turns it off; an unwritable cache directory just means no cache."""
    base = cache_dir()
    if base is None:
        return None
    # Compiled code depends on the environment's options too (autoescape, finalize, concat), which
    # Jinja's cache key (template name and source) does not cover: bump COMPILED_FORMAT with them.
    directory = base / f"jinja-{jinja2.__version__}-{COMPILED_FORMAT}"
    try:
        private_dir(directory)
    except OSError:
        return None
    return KeptBytecode(str(directory)) if trusted(directory) else None


COMPILED_DIR = "compiled"  # in an installed package: templates/compiled/, made when the wheel is built
COMPILED_STAMP = "STAMP"


def compiled_stamp() -> str:
    """What compiled templates must have been made with to be used: this Jinja and COMPILED_FORMAT."""
    return f"jinja2 {jinja2.__version__} format {COMPILED_FORMAT}\n"


def make_environment(
    loader: jinja2.BaseLoader,
    bytecode_cache: jinja2.BytecodeCache | None = None,
    environment_class: type[jinja2.Environment] = _Environment,
) -> jinja2.Environment:
    env = environment_class(
        loader=loader,
        bytecode_cache=bytecode_cache,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # finalize lets only Quoted text through
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_only_quoted,
    )
    env.filters["q"] = q
    env.filters["indent"] = indent
    return env


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Templates precompiled into the installed package (Python modules pip byte-compiled at install:
    no first-run penalty), or, in a checkout or under another Jinja, compiled from templates/ and
    kept in the bytecode cache."""
    templates = package_dir("templates")
    compiled = templates / COMPILED_DIR
    try:
        stamp = (compiled / COMPILED_STAMP).read_text(encoding="utf-8")
    except OSError:
        stamp = None
    if stamp == compiled_stamp():
        return make_environment(jinja2.ModuleLoader(str(compiled)))
    return make_environment(jinja2.FileSystemLoader(templates), _bytecode_cache())


def compile_into(templates: Path, target: Path) -> None:
    """Compile every template under templates/ into Python modules in target (the wheel build)."""
    env = make_environment(jinja2.FileSystemLoader(templates))
    env.compile_templates(str(target), filter_func=lambda name: name.endswith(".j2"), zip=None)
    (target / COMPILED_STAMP).write_text(compiled_stamp(), encoding="utf-8")


class UnquotedBlock(jinja2.TemplateSyntaxError):
    """A `{% filter %}` block: it places its filtered text without the q filter."""


class _Sandboxed(ImmutableSandboxedEnvironment):
    """A profile's own templates run sandboxed: no attribute of Python's internals, no method that
    changes a value (a template is data in a repository, not code to trust). Every template it
    parses (the profile's, the macros they import or include) is refused a `{% filter %}` block,
    whose text finalize (which sees only `{{ }}`) would never check."""

    concat = staticmethod(lambda parts: Quoted("".join(parts)))

    def _parse(self, source: str, name: str | None, filename: str | None):
        from jinja2 import nodes

        tree = super()._parse(source, name, filename)
        found = next(iter(tree.find_all(nodes.FilterBlock)), None)
        if found is not None:
            message = "a {% filter %} block writes its text without the q filter; use {{ x | q }}"
            raise UnquotedBlock(message, found.lineno, name, filename)
        return tree


class _Confined(jinja2.FileSystemLoader):
    """Templates of one directory only: a link that leads out of it is not followed."""

    def get_source(self, environment: jinja2.Environment, template: str):
        root = Path(self.searchpath[0]).resolve()
        path = (root / template).resolve()
        if not path.is_relative_to(root):
            raise jinja2.TemplateNotFound(template)
        return super().get_source(environment, template)


@lru_cache(maxsize=8)
def user_environment(directory: str) -> jinja2.Environment:
    """The profile's `templates:` directory before lwsgen's own templates (which its templates may
    import, `_k8s.yaml.j2` say): the same filter, finalize and StrictUndefined, in a sandbox."""
    builtin = environment().loader
    loader = jinja2.ChoiceLoader([_Confined(directory), builtin])
    return make_environment(loader, environment_class=_Sandboxed)


def user_templates(directory: Path) -> tuple[str, ...]:
    """Kind keys of the templates a `templates:` directory holds (<key>.yaml.j2), sorted."""
    return tuple(sorted(p.name[: -len(".yaml.j2")] for p in directory.glob("*.yaml.j2") if p.is_file()))


def render(deployment: Deployment, user_dir: Path | None = None, keys: tuple[str, ...] | None = None) -> dict[str, str]:
    """Kind key -> rendered YAML text; each template sees only its own values, as `v`. With
    user_dir, a template of the same name there replaces lwsgen's; keys: only those kinds."""
    env = environment() if user_dir is None else user_environment(str(user_dir))
    objects = deployment.objects.items()
    return {key: _render(env, key, values) for key, values in objects if keys is None or key in keys}


class TooLarge(Exception):
    """A profile's template wrote more than bounds.MAX_TEMPLATE_BYTES."""


def _bounded(template: jinja2.Template, values: Any) -> str:
    """A profile's template rendered chunk by chunk, stopped once it writes too much."""

    parts, size = [], 0
    for chunk in template.generate(v=values):
        size += len(chunk)
        if size > MAX_TEMPLATE_BYTES:
            raise TooLarge(f"{template.name} writes more than {MAX_TEMPLATE_BYTES} characters")
        parts.append(chunk)
    return "".join(parts)


def _render(env: jinja2.Environment, key: str, values: Any) -> str:
    # str(): libyaml reads exact str only, and the whole output came through concat as Quoted
    template = env.get_template(f"{key}.yaml.j2")
    one = _bounded if isinstance(env, _Sandboxed) else (lambda t, item: str(t.render(v=item)))
    if isinstance(values, Several):  # one object per role, one file
        return "---\n".join(one(template, item) for item in values.items)
    return one(template, values)
