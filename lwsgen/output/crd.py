"""`lwsgen validate --crd PATH`: custom resources against the CRDs a user provides, as an API server
with fieldValidation=Strict would: the openAPIV3Schema with unknown fields rejected wherever the CRD
lists properties (unless x-kubernetes-preserve-unknown-fields), x-kubernetes-int-or-string and
nullable honoured, the top-level metadata against the strict Kubernetes ObjectMeta, and the
x-kubernetes-validations CEL rules evaluated (cel-python). Go's case-insensitive `(?i)`, which ECMA
regular expressions lack, is spelled out as character classes. Transition rules (oldSelf) need the
old object and are skipped; a rule using a function of Kubernetes' CEL library that cel-python
lacks is counted as not evaluated."""

import hashlib
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from lwsgen import files, jsondata
from lwsgen.problems import Finding
from lwsgen.yamlread import SAFE_LOADER


def _case_insensitive(pattern: str) -> str:
    body = pattern.replace("(?i)", "", 1)
    return re.sub(r"[A-Za-z]", lambda m: f"[{m.group().lower()}{m.group().upper()}]", body)


def strict_schema(node: Any) -> Any:
    """openAPIV3Schema -> a JSON Schema that rejects unknown fields."""
    if isinstance(node, list):
        return [strict_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if isinstance(out.get("pattern"), str) and "(?i)" in out["pattern"]:
        out["pattern"] = _case_insensitive(out["pattern"])
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (
        node.get("type") == "object"
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "additionalProperties" not in node
    ):
        out["additionalProperties"] = False
    return out


def _rules(node: Any, path: tuple) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(schema location as instance steps: a key, '[]' for every item, '{}' for every value, rule)."""
    if not isinstance(node, dict):
        return
    for rule in node.get("x-kubernetes-validations", []):
        yield path, rule
    for key, child in node.get("properties", {}).items():
        yield from _rules(child, (*path, key))
    if isinstance(node.get("items"), dict):
        yield from _rules(node["items"], (*path, "[]"))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _rules(node["additionalProperties"], (*path, "{}"))


def _instances(value: Any, steps: tuple, at: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if not steps:
        yield at, value
        return
    step, rest = steps[0], steps[1:]
    if step == "[]" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _instances(item, rest, (*at, index))
    elif step == "{}" and isinstance(value, dict):
        for key, item in value.items():
            yield from _instances(item, rest, (*at, key))
    elif isinstance(value, dict) and step in value:
        yield from _instances(value[step], rest, (*at, step))


class CRD:
    """One served version of a CRD: its strict validator and its CEL rules, compiled once."""

    def __init__(self, schema: dict[str, Any]):
        import celpy
        import jsonschema_rs

        strict = strict_schema(schema)
        strict.setdefault("properties", {})["metadata"] = {"type": "object"}
        self.validator = jsonschema_rs.Draft4Validator(strict)
        self.cel: list[tuple[tuple, dict[str, Any], Any]] = []
        self.not_evaluated = 0
        environment = celpy.Environment()
        for path, rule in _rules(schema, ()):
            text = rule.get("rule", "")
            if "oldSelf" in text:
                continue
            try:
                self.cel.append((path, rule, environment.program(environment.compile(text))))
            except Exception:  # noqa: BLE001  (cel-python lacks some of Kubernetes' CEL functions)
                self.not_evaluated += 1

    def errors(self, obj: dict[str, Any]) -> Iterator[Finding]:
        import celpy

        for error in self.validator.iter_errors(obj):
            yield Finding(tuple(error.instance_path), error.message)
        for steps, rule, program in self.cel:
            for at, value in _instances(obj, steps):
                try:
                    result = program.evaluate({"self": celpy.json_to_cel(value)})
                except Exception:  # noqa: BLE001  (an evaluation error is a failed rule, as in the API server)
                    result = False
                if isinstance(result, celpy.CELEvalError) or not bool(result):
                    yield Finding(at, rule.get("message") or f"fails the CRD rule {rule.get('rule')!r}")


class CRDError(Exception):
    """A --crd path that cannot be read as CRDs, as one line."""


def load(paths: list[str]) -> dict[tuple[str, str], CRD]:
    """(apiVersion, kind) -> CRD, for every CRD file named or under a named directory."""
    found: dict[tuple[str, str], CRD] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CRDError(f"{raw}: no such file or directory")
        files = sorted(path.rglob("*.y*ml")) if path.is_dir() else [path]
        for file in files:
            found.update(_load_file(file, file.stat().st_mtime_ns))
    return found


@cache
def _load_file(file: Path, _mtime: int) -> dict[tuple[str, str], "CRD"]:
    """One file's CRDs, compiled once per process (CEL programs are slow to build)."""
    found = {}
    try:
        docs = _documents(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise CRDError(f"{file}: not readable as YAML CRDs ({err.__class__.__name__})") from None
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
        for version in doc["spec"]["versions"]:
            if version.get("served", True) and "schema" in version:
                found[(f"{group}/{version['name']}", kind)] = CRD(version["schema"]["openAPIV3Schema"])
    return found


# Parsed CRD files kept between runs, as JSON named by the SHA-256 of the YAML they were read from:
# libyaml took ~4 s of CPU for the 11 MB of ../shared/crds, reading their JSON back ~0.3 s.
KEPT_CRD_FILES = 200


def _documents(text: str) -> list[Any]:
    """The documents of a CRD file: from the cache where this exact text was read before."""
    base = files.cache_dir()
    directory = None if base is None else base / "crds"
    # the key: the text, and the reader that parsed it
    key = hashlib.sha256(f"PyYAML {yaml.__version__}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()
    path = None if directory is None else directory / f"{key}.json"
    kept = files.read_cached(path)  # the schemas decide what passes: only this user's
    if kept is not None:
        try:
            docs = json.loads(kept)
            os.utime(path)  # recently used: pruned last
            return docs
        except (OSError, ValueError, RecursionError):
            pass  # damaged: read again
    docs = list(yaml.load_all(text, Loader=SAFE_LOADER))
    if path is not None:
        _store(path, docs)
    return docs


def _store(path: Path, docs: list[Any]) -> None:
    try:
        if jsondata.not_json(docs) is not None:
            return  # YAML beyond JSON (a date, a key that is not a string): read from the YAML each time
        text = json.dumps(docs)
    except RecursionError:
        return  # nested deeper than Python recurses, or an alias that contains itself: not kept
    files.store_cached(path, text, {"*.json": KEPT_CRD_FILES})
