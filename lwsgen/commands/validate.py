"""`lwsgen validate PATH...`: profiles and rendered or hand-edited manifests, auto-detected.

A profile (a mapping with `runtime`, or `extends`) goes through the whole render pipeline without
writing. Every other YAML document with apiVersion and kind is a Kubernetes object: checked
strictly against its schema, and all objects of all paths together against the cross-object rules
(Service and PodMonitor select leaders of an LWS in the set, autoscalers target one, ports exist).
Kinds lwsgen has no schema for are listed as not checked. Every problem points at its key's line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwsgen import bounds
from lwsgen.check import schema
from lwsgen.commands import discover
from lwsgen.jsondata import NOT_JSON, not_json
from lwsgen.load import source
from lwsgen.load.inherit import reuse
from lwsgen.output import locate, relations, validate
from lwsgen.output.write import MANIFEST, listed_names
from lwsgen.problems import Problem, ProblemsError

YAML_SUFFIXES = (".yaml", ".yml")


class Report:
    """What `lwsgen validate` found, filled in as it goes."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.checked = 0
        self.not_checked: dict[str, int] = {}  # kind -> documents of it that have no schema
        self.cel_not_evaluated = 0  # --crd rules the CEL library could not compile
        self.broken: set[str] = set()  # names of objects their schema refused


def _files(paths: list[str]) -> list[tuple[Path, str]]:
    """Named files, and the YAML files under named directories outside dot directories."""
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += [(p, str(p)) for p in discover.walk(path)]
        else:
            found.append((path, raw))
    return found


def _bases(files: list[tuple[Path, str]], resolve: bounds.Resolver) -> set[Path]:
    """The given profiles that say they are only bases (`base: true`): checked as partial profiles."""
    return {resolve(path) for path, _ in files if discover.is_base_only(path)}


def _siblings(files: list[tuple[Path, str]], resolve: bounds.Resolver) -> list[tuple[Path, str]]:
    """The other files of each lwsgen output directory a given file is in (listed in its
    .lwsgen-files): what cross-object rules read when only some of a directory's files are given."""
    given = {resolve(path) for path, _ in files}
    found = []
    for directory in sorted({path.parent for path, _ in files if (path.parent / MANIFEST).is_file()}):
        listed = listed_names((directory / MANIFEST).read_text(encoding="utf-8", errors="replace"))
        for name in sorted(listed):
            sibling = directory / name
            if (
                "/" not in name
                and bounds.path_problem(name) is None
                and sibling.suffix in YAML_SUFFIXES
                and sibling.is_file()
                and resolve(sibling) not in given
            ):
                found.append((sibling, str(sibling)))
    return found


def _is_profile(data: Any) -> bool:
    return isinstance(data, dict) and "kind" not in data and ("runtime" in data or "extends" in data)


def _is_object(data: Any) -> bool:
    return isinstance(data, dict) and "apiVersion" in data and "kind" in data


# The names kustomize reads a kustomization from (sigs.k8s.io/kustomize/api konfig/general.go,
# RecognizedKustomizationFileNames), whose apiVersion and kind it does not require.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _headerless_kustomization(path: Path, data: Any) -> bool:
    return path.name in KUSTOMIZATION_FILES and isinstance(data, dict) and not {"apiVersion", "kind"} & set(data)


def _lwsgen_kustomization(path: Path, data: dict[str, Any]) -> bool:
    """Kustomizations are free-form; only those lwsgen wrote are held to its schema."""
    return data.get("kind") != "Kustomization" or (path.parent / MANIFEST).is_file()


KUSTOMIZATION_PATHS = ("resources", "components", "configurations")


def _kustomization_paths(path: Path, doc: source.Source) -> list[Problem]:
    """Local paths a kustomization names must exist: `kubectl kustomize` and every GitOps sync of
    the directory fail on the first one missing, long after validate said the files were fine."""
    problems = []
    for field in KUSTOMIZATION_PATHS:
        entries = doc.data.get(field)
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            if not isinstance(entry, str) or "://" in entry or entry.startswith(("git@", "github.com/")):
                continue  # remote bases are kustomize's to fetch
            if (why := bounds.path_problem(entry)) is not None:
                problems.append(doc.problem((field, index), f"{why}; kubectl kustomize could not read it", "bad-path"))
            elif not os.path.lexists(path.parent / entry):
                problems.append(
                    doc.problem(
                        (field, index),
                        f"{entry!r} does not exist beside this kustomization; kubectl kustomize would fail",
                        "missing-file",
                    )
                )
    return problems


def _keep_if_valid(doc: source.Source, errors: list, report: Report) -> bool:
    """Cross-object rules read only objects their schema accepts: a hand edit that drops a required
    key is reported once, at that key, not again as a crash or a chain of follow-on errors."""
    report.problems += locate.problems([doc], ((0, error) for error in errors))
    if errors:
        _refuse_name(doc, report)
    return not errors


def _refuse_name(doc: source.Source, report: Report) -> None:
    data = doc.data if isinstance(doc.data, dict) else {}
    name = (data.get("metadata") or {}).get("name") if isinstance(data.get("metadata"), dict) else None
    # an object without a usable name could be what anything selects: every cross-object finding waits
    report.broken.add(name if isinstance(name, str) and name else ANY)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


ANY = "\0any"  # in Report.broken: a refused object whose name itself is unusable


def _depends_on_broken(obj: Any, broken: set[str]) -> bool:
    """An object that names an object its schema refused (or one named after it, <name>-...): its
    cross-object findings would follow from that one error, so they wait until it is fixed."""
    return ANY in broken or any(text in broken or _prefixed(text, broken) for text in _strings(obj))


def _prefixed(text: str, broken: set[str]) -> bool:
    return any(text.startswith(f"{name}-") for name in broken)


def _base(src: source.Source, report: Report) -> None:
    report.problems += schema.check_partial(src)
    report.checked += 1


def _profile(path: Path, shown: str, report: Report) -> None:
    # start-up: Jinja and the render stages only for a profile
    from lwsgen.pipeline import render_profile

    try:
        result = render_profile(path, display=shown)
    except ProblemsError as err:
        report.problems += err.problems
        return
    report.warnings += result.warnings
    report.checked += 1


def _shape(doc: source.Source, path: Path) -> Problem | None:
    """What keeps a document from being checked at all: not an object, apiVersion or kind that
    are not strings, or values JSON cannot hold."""
    data = doc.data
    if not (_is_object(data) or (path.name in validate.FILE_SCHEMAS and isinstance(data, dict))):
        message = "neither a profile (runtime, ...) nor a Kubernetes object (apiVersion, kind)"
        return doc.problem((), message, "unknown-document")
    for field in ("apiVersion", "kind") if _is_object(data) else ():
        if not isinstance(data[field], str):
            return doc.problem((field,), f"must be a string, not {type(data[field]).__name__}", "wrong-type")
    where = not_json(data)
    return None if where is None else doc.problem(where, NOT_JSON, "not-json")


def _admitted(doc: source.Source, path: Path, report: Report, crds: dict, version: str) -> bool:
    """Whether a document goes on to the cross-object rules: its shape and schema findings go into
    the report, and a refused object's name into report.broken."""
    if _headerless_kustomization(path, doc.data):
        report.problems += _kustomization_paths(path, doc)
        report.not_checked["Kustomization"] = report.not_checked.get("Kustomization", 0) + 1
        return False
    shape = _shape(doc, path)
    if shape is not None:
        report.problems.append(shape)
        _refuse_name(doc, report)
        return False
    data = doc.data
    if _is_object(data) and data.get("kind") == "Kustomization":
        report.problems += _kustomization_paths(path, doc)
    given_crd = crds.get((data.get("apiVersion"), data.get("kind"))) if _is_object(data) else None
    if given_crd is not None:  # --crd: the user's CRD instead of lwsgen's bundled schema
        report.checked += 1
        return _keep_if_valid(doc, list(given_crd.errors(data)), report)
    if not _lwsgen_kustomization(path, data) or not validate.has_schema(data, version, path.name):
        kind = f"{data.get('apiVersion')} {data.get('kind')}"
        report.not_checked[kind] = report.not_checked.get(kind, 0) + 1
        return False
    report.checked += 1
    return _keep_if_valid(doc, list(validate.schema_errors(data, version, path.name)), report)


def run(paths: list[str], kubernetes_version: str, crd_paths: list[str] = ()) -> Report:
    with reuse():
        return _run(paths, kubernetes_version, crd_paths)


def _run(paths: list[str], kubernetes_version: str, crd_paths: list[str]) -> Report:
    report = Report()
    crds = {}
    if crd_paths:
        # start-up: the CEL interpreter only with --crd
        from lwsgen.output import crd

        crds = crd.load(list(crd_paths))
        report.cel_not_evaluated = sum(c.not_evaluated for c in crds.values())
    objects: dict[str, tuple[dict[str, Any], ...]] = {}
    sources: dict[str, list[source.Source]] = {}
    files = _files(paths)
    resolve = bounds.Resolver()
    bases = _bases(files, resolve)
    siblings = _siblings(files, resolve)
    context = {shown for _, shown in siblings}
    for path, shown in [*files, *siblings]:
        try:
            docs = source.load_documents(source.read_text(path, shown), shown)
        except ProblemsError as err:
            if shown not in context:  # a broken sibling is its own validation's to report
                report.problems += err.problems
            continue
        if len(docs) == 1 and _is_profile(docs[0].data):
            if shown in context:
                continue
            if resolve(path) in bases:
                _base(docs[0], report)
            else:
                _profile(path, shown, report)
            continue
        quiet = Report() if shown in context else report  # a sibling: read for the cross-object rules only
        kept = [doc for doc in docs if _admitted(doc, path, quiet, crds, kubernetes_version)]
        report.broken |= quiet.broken
        sources[shown] = kept
        objects[shown] = tuple(d.data for d in kept)  # objects, and rule files such as the adapter's
    for file, index, error in relations.cross_object_errors(objects):
        docs = sources[file]
        if report.broken and _depends_on_broken(docs[index].data, report.broken):
            continue  # one typo, one finding: this one follows from an object the schema refused
        report.problems += locate.problems(docs, [(index, error)])
    return report
