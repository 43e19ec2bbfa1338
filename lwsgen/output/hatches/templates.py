"""The profile's `templates:`: a directory whose <kind>.yaml.j2 replaces lwsgen's template for that
kind or adds a kind; each object it makes is held to output/guards/ and said at `templates`."""

from __future__ import annotations

import os
from pathlib import Path

from lwsgen import bounds, confine
from lwsgen.derive.kinds import BY_KEY, file_of
from lwsgen.load.inherit import work_tree
from lwsgen.load.source import Source, load_documents
from lwsgen.output import guards, parse
from lwsgen.output.guards import Change, addedkinds, frozen, identity
from lwsgen.output.hatches import TEMPLATES, Hatch, Origins, duplicates
from lwsgen.output.parse import OutputFile
from lwsgen.problems import Problem, ProblemsError
from lwsgen.profile import Profile
from lwsgen.render import render, user_templates

NOT_REPLACEABLE = ("kustomization", "kustomizeconfig")  # built from the other files; kustomize's own rules


def templates_dir(profile: Profile, src: Source, profile_path: Path) -> Path | None:
    """The `templates:` directory, resolved from the profile file that sets it and confined to that
    profile's directory or git work tree (as `extends` is); raises ProblemsError."""

    if profile.templates is None:
        return None
    if (why := bounds.path_problem(profile.templates)) is not None:
        raise ProblemsError([src.problem(TEMPLATES, f"{why}; name the directory's relative path", "bad-path")])
    setter = src.file_of(TEMPLATES)
    base = profile_path if setter == src.file else Path(setter)
    directory, here = bounds.resolved(base.parent / profile.templates), bounds.resolved(base)
    if directory is None:
        message = f"{profile.templates!r}: its links loop; name the templates directory itself"
        raise ProblemsError([src.problem(TEMPLATES, message, "link-loop")])
    roots = [here.parent if here is not None else None, work_tree(base)]
    if os.path.isabs(profile.templates) or not any(r is not None and directory.is_relative_to(r) for r in roots):
        message = "must be a relative path inside this profile's directory or its git work tree"
        raise ProblemsError([src.problem(TEMPLATES, message, "templates-outside")])
    if not directory.is_dir():
        raise ProblemsError(
            [src.problem(TEMPLATES, f"no directory {profile.templates!r} beside the profile", "missing")]
        )
    return directory


def template_keys(directory: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(lwsgen's kinds replaced, kinds added) by the directory's <key>.yaml.j2 files; `_*` files are
    macros to import, not kinds. check_keys says what is wrong with them."""

    keys = [key for key in user_templates(directory) if not key.startswith("_")]
    return tuple(k for k in keys if k in BY_KEY), tuple(k for k in keys if k not in BY_KEY)


def check_keys(src: Source, directory: Path, keys: tuple[str, ...], emitted: set[str]) -> None:
    """Raises ProblemsError for a key no template may have, one replacing a kind this profile does
    not emit, a badly named added kind, or a directory with no template at all."""
    import re

    problems = []
    for key in keys:
        if key in NOT_REPLACEABLE:
            problems.append(src.problem(TEMPLATES, f"{key}.yaml.j2: lwsgen builds {key}.yaml from the files", "taken"))
        elif key in BY_KEY and key not in emitted:
            message = f"{key}.yaml.j2 replaces lwsgen's {key}, which this profile does not emit ({BY_KEY[key].when})"
            problems.append(src.problem(TEMPLATES, message, "not-emitted"))
        elif key not in BY_KEY and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", key):
            message = f"{key}.yaml.j2: a kind's name is lower-case letters, digits and '-' (its file is {key}.yaml)"
            problems.append(src.problem(TEMPLATES, message, "bad-name"))
    if problems:
        raise ProblemsError(problems)
    if not keys:
        raise ProblemsError([src.problem(TEMPLATES, f"no <kind>.yaml.j2 in {src.data.get('templates')}", "missing")])


def render_templates(deployment, directory: Path, keys: tuple[str, ...], src: Source) -> dict[str, str]:
    """The directory's templates rendered, in a child bounded in CPU time, memory and output
    (lwsgen/confine.py); a template that fails or goes past a bound is a problem at `templates`."""

    try:
        return confine.run(
            lambda: _rendered(deployment, directory, keys, src), f"the templates of {src.data.get('templates')}"
        )
    except confine.Exceeded as err:
        raise ProblemsError([src.problem(TEMPLATES, f"{err}; simplify the templates", "too-costly")]) from None


def _rendered(deployment, directory: Path, keys: tuple[str, ...], src: Source) -> dict[str, str]:
    import jinja2
    from jinja2.sandbox import SecurityError

    rendered = {}
    for key in keys:
        try:
            rendered.update(render(deployment, directory, (key,)))
        except jinja2.TemplateError as err:
            line = f":{err.lineno}" if getattr(err, "lineno", None) else ""
            message = (
                f"{getattr(err, 'name', None) or key + '.yaml.j2'}{line}: {type(err).__name__}: {err.message or err}"
            )
            raise ProblemsError([src.problem(TEMPLATES, message, "bad-template")]) from None
        except TypeError as err:  # finalize: a value placed without the q filter
            raise ProblemsError([src.problem(TEMPLATES, f"{key}.yaml.j2: {err}", "unquoted")]) from None
        except SecurityError as err:  # the sandbox: what a template may not reach
            raise ProblemsError([src.problem(TEMPLATES, f"{key}.yaml.j2: {err}", "unsafe")]) from None
        except MemoryError:
            raise
        except Exception as err:  # a template is the profile's code: whatever it does wrong is a problem
            message = f"{key}.yaml.j2: {type(err).__name__}: {err}"[:2000]
            raise ProblemsError([src.problem(TEMPLATES, message, "bad-template")]) from None
    return rendered


def parse_templates(rendered: dict[str, str], src: Source, keys: tuple[str, ...] = ()):
    """The templates' text parsed back; YAML that is not objects, or that a profile could not hold
    (lwsgen/bounds.py: nesting, size, numbers), is a problem at `templates`."""
    import yaml

    for key in keys:
        try:
            load_documents(rendered[key], f"{key}.yaml.j2")
        except ProblemsError as err:
            said = "; ".join(f"its line {p.line}: {p.message}" for p in err.problems[:3])
            what = "does not parse" if err.problems[0].code == "yaml-syntax" else "lwsgen refuses"
            raise ProblemsError(
                [src.problem(TEMPLATES, f"{key}.yaml.j2 writes YAML that {what} ({said})", "bad-template")]
            ) from None
    try:
        return parse.build(rendered)
    except (yaml.YAMLError, TypeError, ValueError) as err:  # TypeError: a key YAML reads as a list or mapping
        raise ProblemsError(
            [src.problem(TEMPLATES, f"a template writes YAML that does not parse: {err}", "bad-template")]
        ) from None


def template_problems(
    profile: Profile, src: Source, builtin: list[OutputFile], files: list[OutputFile], keys: tuple[str, ...]
) -> tuple[list[Problem], Origins]:
    """A replacing template must keep every object of lwsgen's and every value it derives."""

    found = frozenset(frozen.devices(profile))
    builtin_files = {f.name: f for f in builtin}
    lwsgens = [o for f in builtin for o in f.objects if isinstance(o, dict)]
    selectors = tuple(addedkinds.selectors_of(lwsgens))
    accounts = frozenset(identity(o)[1] for o in lwsgens if o.get("kind") == "ServiceAccount")
    problems, origins = [], {}
    for output in files:
        key = output.name[: -len(".yaml")]
        if key not in keys:
            continue
        label = f"{profile.templates}/{key}.yaml.j2"
        ours = {identity(o): o for o in (builtin_files[output.name].objects if output.name in builtin_files else ())}
        theirs = {identity(o): o for o in output.objects}
        for kind, name in ours.keys() - theirs.keys():
            message = f"{label} leaves out {kind} {name} of {file_of(key)}; lwsgen derives it"
            problems.append(src.problem(TEMPLATES, message, "derived"))
        for index, obj in enumerate(output.objects):
            origins[(output.name, index)] = Hatch(TEMPLATES, label)
            lwsgens_own = ours.get(identity(obj))  # None: the template adds it
            change = Change(profile, src, TEMPLATES, label, output.name, lwsgens_own, obj, found, selectors, accounts)
            problems += guards.guard(change)
    return problems + duplicates(src, TEMPLATES, files), origins
