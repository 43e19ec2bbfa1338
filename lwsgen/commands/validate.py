"""`lwsgen validate PATH...`: profiles and rendered or hand-edited manifests, auto-detected.

A profile (a mapping with `runtime`, or `extends`) goes through the whole render pipeline without
writing. Every other YAML document with apiVersion and kind is a Kubernetes object: checked
strictly against its schema, and all objects of all paths together against the cross-object rules
(Service and PodMonitor select leaders of an LWS in the set, autoscalers target one, ports exist).
Kinds lwsgen has no schema for are listed as not checked. Every problem points at its key's line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwsgen.load import source
from lwsgen.output import locate, relations, validate
from lwsgen.output.write import MANIFEST
from lwsgen.problems import Problem, ProblemsError

YAML_SUFFIXES = (".yaml", ".yml")


class Report:
    """What `lwsgen validate` found, filled in as it goes."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.checked = 0
        self.not_checked: dict[str, int] = {}  # kind -> documents of it that have no schema


def _files(paths: list[str]) -> list[tuple[Path, str]]:
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += [(p, str(p)) for p in sorted(path.rglob("*")) if p.suffix in YAML_SUFFIXES and p.is_file()]
        else:
            found.append((path, raw))
    return found


def _is_profile(data: Any) -> bool:
    return isinstance(data, dict) and "kind" not in data and ("runtime" in data or "extends" in data)


def _is_object(data: Any) -> bool:
    return isinstance(data, dict) and "apiVersion" in data and "kind" in data


def _lwsgen_kustomization(path: Path, data: dict[str, Any]) -> bool:
    """Kustomizations are free-form; only those lwsgen wrote are held to its schema."""
    return data.get("kind") != "Kustomization" or (path.parent / MANIFEST).is_file()


def _profile(path: Path, shown: str, report: Report) -> None:
    from lwsgen.pipeline import render_profile

    try:
        result = render_profile(path, display=shown)
    except ProblemsError as err:
        report.problems += err.problems
        return
    report.warnings += result.warnings
    report.checked += 1


def run(paths: list[str], kubernetes_version: str) -> Report:
    report = Report()
    objects: dict[str, tuple[dict[str, Any], ...]] = {}
    sources: dict[str, list[source.Source]] = {}
    for path, shown in _files(paths):
        try:
            docs = source.load_documents(source.read_text(path, shown), shown)
        except ProblemsError as err:
            report.problems += err.problems
            continue
        if len(docs) == 1 and _is_profile(docs[0].data):
            _profile(path, shown, report)
            continue
        kept = []
        for doc in docs:
            data = doc.data
            if not (_is_object(data) or path.name in validate.FILE_SCHEMAS):
                report.problems.append(
                    doc.problem(
                        (),
                        "neither a profile (runtime, ...) nor a Kubernetes object (apiVersion, kind)",
                        "unknown-document",
                    )
                )
                continue
            if not _lwsgen_kustomization(path, data) or not validate.has_schema(data, kubernetes_version, path.name):
                kind = f"{data.get('apiVersion')} {data.get('kind')}"
                report.not_checked[kind] = report.not_checked.get(kind, 0) + 1
                continue
            report.checked += 1
            report.problems += locate.problems(
                [doc], ((0, error) for error in validate.schema_errors(data, kubernetes_version, path.name))
            )
            kept.append(doc)
        sources[shown] = kept
        objects[shown] = tuple(d.data for d in kept if _is_object(d.data))
    for file, index, error in relations.cross_object_errors(objects):
        docs = [d for d in sources[file] if _is_object(d.data)]
        report.problems += locate.problems(docs, [(index, error)])
    return report
