"""A hand edit that deletes any key of a rendered file (to depth 4) never crashes `lwsgen validate`:
it exits 0 or 1 with located messages, never the internal-error status 3. make test deletes every
eleventh key (and the two whose refusal is asserted); make test-slow deletes every key."""

import contextlib
import copy
import io
import shutil

import pytest

import fastyaml
import readonce
from conftest import REPO
from lwsgen.cli import main
from lwsgen.output import emit

EXAMPLES = sorted(p.name for p in (REPO / "out").iterdir())
DEPTH = 4
# the keys deleted: every one (make test-slow, ~3 min) or every eleventh (make test, ~20 s)
SWEEPS = [pytest.param(1, id="every-key", marks=pytest.mark.slow), pytest.param(11, id="every-11th-key")]
ASSERTED = {("spec",), ("metadata", "name")}


def key_paths(node, at=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*at, key)
            yield from key_paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from key_paths(value, (*at, index))


def _without(docs, index, path):
    copies = copy.deepcopy(docs)
    node = copies[index]
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    # lwsgen's own writer (property-tested to read back as the same objects): PyYAML's representer
    # cost more than the validation under test
    return emit.documents(copies)


def _delete_each(directory, stride, statuses) -> None:
    """Delete each stride-th key of each file in turn (and the asserted ones), validate, restore."""
    for file in sorted(directory.glob("*.yaml")):
        original = file.read_text()
        docs = list(fastyaml.load_all(original))
        kinds = [doc.get("kind") if isinstance(doc, dict) else None for doc in docs]
        for index, doc in enumerate(docs):
            if kinds[index] in kinds[:index]:
                continue  # a second role's object of the same kind: the first one's keys cover it
            paths = [p for p in key_paths(doc) if len(p) <= DEPTH]
            for path in (p for i, p in enumerate(paths) if i % stride == 0 or p in ASSERTED):
                file.write_text(_without(docs, index, path))
                err = io.StringIO()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    status = main(["validate", str(directory)])
                statuses[(file.name, path)] = (status, err.getvalue()[-200:])
        file.write_text(original)


@pytest.mark.parametrize("stride", SWEEPS)
@pytest.mark.parametrize("example", EXAMPLES)
def test_deleting_any_key_never_crashes_validate(example, stride, tmp_path):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    statuses = {}
    with readonce.unchanged_files_read_once():
        _delete_each(directory, stride, statuses)
    crashed = {where: why for where, why in statuses.items() if why[0] not in (0, 1)}
    assert len(statuses) > 300 // stride and not crashed, crashed
    # and dropping what a deployment needs is an error, not silently accepted
    workloads = ("leaderworkerset.yaml", "disaggregatedset.yaml", "llminferenceservice.yaml", "inferenceservice.yaml")
    workload = next(name for name in workloads if (directory / name).exists())
    assert statuses[(workload, ("spec",))][0] == 1
    if (directory / "service.yaml").exists():  # a vLLM set of roles is reached through its InferencePool only
        assert statuses[("service.yaml", ("metadata", "name"))][0] == 1
