"""Hand edits to a rendered directory that break a deployment are caught by `lwsgen validate`, each
at FILE:LINE:COL and its field; benign edits still pass. Every example gets the same edits."""

import shutil

import pytest

from conftest import REPO
from lwsgen.cli import main

EXAMPLES = sorted(p.name for p in (REPO / "out").iterdir())


def _edit(directory, name, old, new, count=1):
    path = directory / name
    text = path.read_text()
    assert old in text, (name, old)
    path.write_text(text.replace(old, new, count))


def _size(d):  # LWS size 2 -> 3: the engine flags still say the old world size
    _edit(d, "leaderworkerset.yaml", "    size: 2\n", "    size: 3\n")


def _probe_port(d):  # a probe names a port no container declares
    _edit(d, "leaderworkerset.yaml", "            port: http\n", "            port: web\n")


def _mount(d):  # a mount names a volume the pod does not have
    _edit(
        d,
        "leaderworkerset.yaml",
        "          - name: dshm\n            mountPath: /dev/shm",
        "          - name: shm\n            mountPath: /dev/shm",
    )


def _configmap(d):  # the launch scripts ConfigMap renamed
    text = (d / "configmap.yaml").read_text()
    name = next(line.split(": ")[1] for line in text.splitlines() if line.startswith("  name: "))
    _edit(d, "configmap.yaml", f"  name: {name}\n", f"  name: {name}-old\n")


def _service_selector(d):  # the Service selects another LWS
    _edit(d, "service.yaml", "    leaderworkerset.sigs.k8s.io/name: ", "    leaderworkerset.sigs.k8s.io/name: other-")


def _policy(d):  # the NetworkPolicy protects another LWS
    _edit(
        d, "networkpolicy.yaml", "      leaderworkerset.sigs.k8s.io/name: ", "      leaderworkerset.sigs.k8s.io/name: x"
    )


MUTATIONS = {
    "size": (_size, "spec.leaderWorkerTemplate.size: size 3 x"),
    "probe port": (_probe_port, "httpGet.port: 'web' is not a named port of this container"),
    "mount": (_mount, "volumeMounts[0].name: 'shm' is not a volume of this pod"),
    "configmap": (_configmap, "is not in this set"),
    "service selector": (_service_selector, "spec.selector: must select"),
    "network policy": (_policy, "which is not in this set"),
}
BENIGN = {
    "annotation": lambda d: _edit(d, "service.yaml", "metadata:\n", "metadata:\n  annotations:\n    note: reviewed\n"),
    "image tag": lambda d: _edit(d, "leaderworkerset.yaml", "image: ", "image: ", 1),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_breaking_hand_edit_is_caught_at_its_field(example, mutation, tmp_path, capsys):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    edit, expected = MUTATIONS[mutation]
    lws = (directory / "leaderworkerset.yaml").read_text()
    world_flags = ("--tensor-parallel-size", "--tp", "WORLD_SIZE")
    if mutation == "size" and ("size: 2" not in lws or not any(f in lws for f in world_flags)):
        pytest.skip("no world size in the engine's arguments (llama.cpp splits layers over whatever joins)")
    edit(directory)
    assert main(["validate", str(directory)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(expected in line and line.startswith(str(directory)) for line in lines), lines


@pytest.mark.parametrize("edit", sorted(BENIGN))
@pytest.mark.parametrize("example", EXAMPLES)
def test_benign_edits_still_pass(example, edit, tmp_path, capsys):
    directory = tmp_path / example
    shutil.copytree(REPO / "out" / example, directory)
    BENIGN[edit](directory)
    assert main(["validate", str(directory)]) == 0, capsys.readouterr().out
