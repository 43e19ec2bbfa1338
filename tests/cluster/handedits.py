"""Hand edits to a rendered directory, judged twice: by `lwsgen validate` and by the real API server
(a server-side apply with dryRun=All and fieldValidation=Strict, through the LWS webhooks, of every
document the edit changed). The edits are validate's own suites: the breaking and benign edits of
tests/test_invariants.py and the deletion of every key to depth 4 of tests/test_validate_deletions.py."""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import functools
import io
import json
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from lwsgen.cli import main
from lwsgen.output import emit
from tests import readonce
from tests.cluster.api import LOADER, Api, ApiError
from tests.cluster.lwsmanifests import KUSTOMIZE
from tests.test_validate_deletions import key_paths  # the deletion suite's own walk

KUSTOMIZE_INPUTS = ("kustomization.yaml", "kustomizeconfig.yaml", "kustomize-openapi.yaml")
# files of a rendered directory that are not API objects: kustomize's inputs (judged by the real
# kustomize), prometheus-adapter's and eksctl's configuration
NOT_OBJECTS = (*KUSTOMIZE_INPUTS, "prometheus-adapter-rules.yaml", "eksctl-nodegroup.yaml")

# libyaml's emitter: the edits may set values lwsgen's own writer does not write
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


MEMORY = "/dev/shm"


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> tuple:
    """The documents of an unedited file, parsed once; callers copy before changing them."""
    return tuple(yaml.load_all(text, Loader=LOADER))


class _UniqueKeyLoader(LOADER):
    """Refuses a mapping that sets a key twice, as kubectl's and the GitOps tools' YAML decoders do
    (sigs.k8s.io/yaml: 'mapping key already defined'); PyYAML alone keeps the last."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        for key in keys:
            if keys.count(key) > 1:
                raise yaml.constructor.ConstructorError(
                    None, None, f"mapping key {key!r} already defined", node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


@dataclass
class Edit:
    name: str
    apply: Callable[[Path], None]  # edits the directory in place; pytest.skip() when it does not apply


@dataclass
class Verdict:
    edit: str
    validate_status: int
    validate_errors: list[dict]
    refusals: list[str] = field(default_factory=list)  # what the server (or the client before it) refused
    refused_files: set[str] = field(default_factory=set)  # the files of the refused documents

    @property
    def server_refused(self) -> bool:
        return bool(self.refusals)


def deletions(directory: Path, depth: int, stride: int) -> list[Edit]:
    """Delete one key (to depth) of one document: every stride-th of the directory, the same order
    as tests/test_validate_deletions.py walks them."""
    edits, index = [], 0
    for file in sorted(directory.glob("*.yaml")):
        if file.name in NOT_OBJECTS:
            continue
        for doc_index, doc in enumerate(_parsed(file.read_text())):
            for path in (p for p in key_paths(doc) if len(p) <= depth):
                if index % stride == 0:
                    name = f"{file.name}#{doc_index} -{'.'.join(map(str, path))}"
                    edits.append(Edit(name, _deleter(file.name, doc_index, path)))
                index += 1
    return edits


def _deleter(name: str, doc_index: int, path: tuple) -> Callable[[Path], None]:
    def delete(directory: Path) -> None:
        file = directory / name
        docs = copy.deepcopy(list(_parsed(file.read_text())))
        node = docs[doc_index]
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
        file.write_text(emit.documents(docs))  # lwsgen's writer, as the deletion suite writes them

    return delete


def value_edit(name: str, kind: str, path: tuple, value) -> Edit:
    """Set path of the first document of kind in file name to value (pytest.skip where the example has
    no such file, document or parent field)."""

    def edit(directory: Path) -> None:
        file = directory / name
        if not file.exists():
            pytest.skip(f"{name} is not part of this example")
        docs = copy.deepcopy(list(_parsed(file.read_text())))
        node = next((d for d in docs if isinstance(d, dict) and d.get("kind") == kind), None)
        try:
            for part in path[:-1]:
                node = node[part]
        except (KeyError, IndexError, TypeError):
            pytest.skip(f"{name} has no {kind} with {'.'.join(map(str, path[:-1]))}")
        node[path[-1]] = value
        file.write_text(yaml.dump_all(docs, Dumper=DUMPER, sort_keys=False))

    return Edit(f"{name} {kind} {'.'.join(map(str, path))}={value!r}", edit)


def judge_all(api: Api, namespace: str, original: Path, root: Path, edits: list[Edit]) -> list[Verdict]:
    """Every edit that applies to a copy of original, judged by validate (in a process of a pool: it
    is the costly judge) and by the server (here, meanwhile). The copies are made in memory where the
    machine has a tmpfs (a file created on this project's ext4 disk costs ~0.6 ms; an edit makes ~15)."""
    with tempfile.TemporaryDirectory(dir=MEMORY if os.access(MEMORY, os.W_OK) else root) as scratch:
        return _judge_all(api, namespace, original, Path(scratch), edits)


SERVER_THREADS = 3  # dry-run applies in flight: each waits mostly on the server and the LWS webhook


def _judge_all(api: Api, namespace: str, original: Path, root: Path, edits: list[Edit]) -> list[Verdict]:
    verdicts: list[Verdict] = []
    context = multiprocessing.get_context("fork")  # the workers start with lwsgen imported
    clients = threading.local()

    def server_side(work: Path, verdict: Verdict) -> None:
        if not hasattr(clients, "api"):
            clients.api = api.clone()
        _server_side(clients.api, namespace, original, work, verdict)

    with (
        readonce.unchanged_files_read_once(),  # forked within: each worker reads an unedited file once
        concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool,
        concurrent.futures.ThreadPoolExecutor(max_workers=SERVER_THREADS) as threads,
    ):
        pending: list[tuple[Verdict, Path, concurrent.futures.Future, concurrent.futures.Future]] = []
        for index, edit in enumerate(edits):
            work = root / f"edit-{index}"
            shutil.copytree(original, work)
            try:
                edit.apply(work)
            except pytest.skip.Exception:
                shutil.rmtree(work)
                continue
            verdict = Verdict(edit.name, 0, [])
            # the pool forks its workers at its first submit: before any server thread exists, so no
            # worker starts with a lock a thread held (the import lock, OpenSSL's)
            validated = pool.submit(validate, work)
            pending.append((verdict, work, threads.submit(server_side, work, verdict), validated))
            while len(pending) > 6 or (pending and index == len(edits) - 1):
                verdicts.append(_judged(*pending.pop(0)))
        verdicts += [_judged(*waiting) for waiting in pending]
    return verdicts


def _judged(verdict: Verdict, work: Path, server: concurrent.futures.Future, validated: concurrent.futures.Future):
    server.result()
    verdict.validate_status, verdict.validate_errors = validated.result()
    shutil.rmtree(work)
    return verdict


def _server_side(api: Api, namespace: str, original: Path, work: Path, verdict: Verdict) -> None:
    for file in sorted(work.glob("*.yaml")):
        before, after = (original / file.name).read_text(), file.read_text()
        if before == after:
            continue
        if file.name in KUSTOMIZE_INPUTS:
            refused = kustomize_refusals(work)
        elif file.name not in NOT_OBJECTS:
            refused = server_refusals(api, namespace, file.name, before, after)
        else:
            continue
        verdict.refusals += refused
        verdict.refused_files |= {file.name} if refused else set()


def kustomize_refusals(directory: Path) -> list[str]:
    """What the real kustomize refuses of the directory (a GitOps tool builds it first)."""
    built = subprocess.run([str(KUSTOMIZE), "build", str(directory)], capture_output=True, text=True)
    return [f"kustomize build: {built.stderr.strip()[:300]}"] if built.returncode else []


# the server's minor release: validate applies the API rules of the default feature gates of the
# version it is given (tests/cluster/gomod/versions.mk pins the server)
SERVER_VERSION = "1.36"


def validate(directory: Path) -> tuple[int, list[dict]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["validate", "--format", "json", "--kubernetes-version", SERVER_VERSION, str(directory)])
    text = out.getvalue().strip()
    problems = json.loads(text) if text.startswith("[") else []
    errors = [p for p in problems if p.get("severity") == "error"]
    for error in errors:  # while the edited file exists: the kind of the document the error is in
        error["kind"] = kind_at(directory / error["file"].rsplit("/", 1)[-1], error["line"])
    return status, errors


def kind_at(file: Path, line: int) -> str:
    """The kind of the document of file that holds line (1-based)."""
    kind = "?"
    if not file.is_file():
        return kind
    try:
        for node in yaml.compose_all(file.read_text(), Loader=LOADER):
            if node is None or node.start_mark.line + 1 > line:
                break
            pairs = node.value if isinstance(node, yaml.MappingNode) else []
            kind = next((v.value for k, v in pairs if k.value == "kind"), "?")
    except yaml.YAMLError:
        pass  # an edit that broke the YAML: validate said where
    return kind


def server_refusals(api: Api, namespace: str, name: str, before: str, after: str) -> list[str]:
    """Every changed document of one file, dry-run applied as a GitOps tool would; what was refused.
    A document no client can send (not YAML, not a mapping, no kind or name) is refused by the client."""
    try:
        old = _parsed(before)
        new = list(yaml.load_all(after, Loader=_UniqueKeyLoader))
    except yaml.YAMLError as e:
        return [f"{name}: not YAML: {e}"]
    refusals = []
    for index, doc in enumerate(new):
        if index < len(old) and doc == old[index]:
            continue
        where = f"{name}#{index}"
        if not isinstance(doc, dict):
            refusals.append(f"{where}: not an object")
            continue
        meta = doc.get("metadata")
        if not doc.get("apiVersion") or not doc.get("kind") or not isinstance(meta, dict) or not meta.get("name"):
            refusals.append(f"{where}: no apiVersion, kind or metadata.name: kubectl and the GitOps tools refuse it")
            continue
        sent = copy.deepcopy(doc)
        sent["metadata"]["namespace"] = namespace  # a namespace of its own: nothing of the same name exists
        try:
            applied = api.apply(sent, namespace, dry_run=True)
        except ApiError as e:
            refusals.append(f"{where}: {e}")
            continue
        refusals += [f"{where}: warned: {w}" for w in applied.warnings]
    return refusals
