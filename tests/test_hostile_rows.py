"""Issue #40's table, row by row: small structural attacks on render and validate, each of which
once ended in `internal error` (exit 3), now one positioned refusal, exit 1, nothing written, in
bounded CPU time (the process' own clock, not the wall's)."""

from __future__ import annotations

import os
import re
import resource
import shutil
from pathlib import Path

import pytest

import fastyaml
from conftest import MINIMAL, REPO
from lwsgen.cli import main
from test_escape_hatches import PDB  # the documented template: one copy

BASE = fastyaml.dump(MINIMAL, sort_keys=False)
POSITIONED = re.compile(r"^[^:\n]+:\d+:\d+: ", re.M)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(u.ru_utime + u.ru_stime for u in usage)


def _refused(tmp_path: Path, capsys, argv: list[str], *expected: str) -> str:
    before = _cpu()
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert POSITIONED.search(err), err
    assert not (tmp_path / "out").exists()
    assert _cpu() - before < 15, "a refusal must not cost more than its bounds"
    for text in expected:
        assert text in err, err
    return err


def _files(tmp_path: Path, files: dict[str, str], links: dict[str, str] | None = None) -> None:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for name, target in (links or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, tmp_path / name)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


RENDER_ROWS = {
    "name nested 255 deep": ({"p.yaml": BASE.replace("name: demo", "name: " + _nested(255))}, {}, "nest more than 64"),
    "name nested 990 deep": ({"p.yaml": BASE.replace("name: demo", "name: " + _nested(990))}, {}, "nest more than 64"),
    "block mappings nested 500 deep": (
        {"p.yaml": BASE + "annotations:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(500))},
        {},
        "nest more than 64",
    ),
    "extends with a NUL": ({"p.yaml": BASE + 'extends: "x\\0y"\n'}, {}, "extends: contains the character U+0000"),
    "extends 300 characters": ({"p.yaml": BASE + f"extends: {'a' * 300}.yaml\n"}, {}, "a component of 305 bytes"),
    "extends through a link loop": (
        {"p.yaml": BASE + "extends: loop/base.yaml\n"},
        {"loop": "loop"},
        "extends: 'loop/base.yaml': its links loop",
    ),
    "templates through a link loop": (
        {"p.yaml": BASE + "templates: loop/t\n"},
        {"loop": "loop"},
        "templates: 'loop/t': its links loop",
    ),
    "templates 300 characters": ({"p.yaml": BASE + f"templates: {'a' * 300}\n"}, {}, "a component of 300 bytes"),
    "a template with a 5000-digit integer": (
        {
            "p.yaml": BASE + "templates: t\n",
            "t/pdb.yaml.j2": PDB.replace("maxUnavailable: 1", "replicas: " + "9" * 5000),
        },
        {},
        "pdb.yaml.j2 writes YAML that lwsgen refuses",
    ),
    "a template whose YAML nests 900 deep": (
        {"p.yaml": BASE + "templates: t\n", "t/pdb.yaml.j2": PDB + "  x: " + _nested(900) + "\n"},
        {},
        "nest more than 64",
    ),
    "a template writing a bare string, with a patch": (
        {
            "p.yaml": BASE
            + "templates: t\npatches:\n- target: {kind: Service}\n  patch: {metadata: {labels: {a: b}}}\n",
            "t/pdb.yaml.j2": "just a string\n",
        },
        {},
        "t/pdb.yaml.j2 writes a str, not an object",
    ),
    "a template that loops": (
        {
            "p.yaml": BASE + "templates: t\n",
            "t/pdb.yaml.j2": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        },
        {},
        "took more than 2 s of CPU time",
    ),
    "a template that takes memory": (
        {"p.yaml": BASE + "templates: t\n", "t/pdb.yaml.j2": "{% set x = 'a' * 100000 %}{{ (x * 100000) | q }}"},
        {},
        "needed more than 256 MiB of memory",
    ),
    "a template building a billion-character string": (
        {"p.yaml": BASE + "templates: t\n", "t/pdb.yaml.j2": "{{ ('x' * 1000000000) | q }}"},
        {},
        "needed more than 256 MiB of memory",
    ),
    "a template that writes without end": (
        {
            "p.yaml": BASE + "templates: t\n",
            "t/pdb.yaml.j2": "{% for a in range(100000) %}{% for b in range(300) %}x{% endfor %}{% endfor %}",
        },
        {},
        "writes more than 4194304 characters",
    ),
    "pipeline 512 and replicas 100000": (
        {"p.yaml": BASE.replace("pipeline: 2", "pipeline: 512") + "replicas: 100000\n"},
        {},
        "replicas: 100000 groups of 4096 GPUs need 51200000 nodes of 8 GPUs; a Kubernetes cluster holds at most 5000",
    ),
    "SGLang roles with a flag whose value is in a role": ({}, {}, "--page-size must be the same on every role"),
}


def _sglang_split_flag(tmp_path: Path) -> None:
    data = fastyaml.load((REPO / "profiles" / "sglang-deepseek-r1-pd.yaml").read_text())
    data["model"]["extraArgs"] = ["--page-size"]
    for role, value in zip(data["roles"], ["64", "32"], strict=True):
        data["roles"][role]["extraArgs"] = [value]
    (tmp_path / "p.yaml").write_text(fastyaml.dump(data, sort_keys=False))


@pytest.mark.parametrize("row", RENDER_ROWS)
def test_a_structural_attack_on_render_is_one_positioned_refusal(tmp_path, capsys, monkeypatch, row):
    monkeypatch.chdir(tmp_path)
    files, links, expected = RENDER_ROWS[row]
    _files(tmp_path, files, links)
    if row.startswith("SGLang"):
        _sglang_split_flag(tmp_path)
    _refused(tmp_path, capsys, ["render", "p.yaml", "-o", "out"], expected)


def test_a_profile_directory_holding_a_link_to_itself_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, {"profiles/ok.yaml": BASE}, {"profiles/x.yaml": "x.yaml"})
    _refused(tmp_path, capsys, ["render", "profiles", "-o", "out"], "profiles/x.yaml:0:0: its links loop")


def test_a_profile_directory_linking_out_of_its_tree_is_refused(tmp_path, capsys, monkeypatch):
    outside = tmp_path / "elsewhere"
    _files(outside, {"secret.yaml": BASE})
    repo = tmp_path / "repo"
    _files(repo, {"profiles/ok.yaml": BASE.replace("demo", "ok")}, {"profiles/x.yaml": str(outside / "secret.yaml")})
    monkeypatch.chdir(repo)
    _refused(repo, capsys, ["render", "profiles", "-o", "out"], "profiles/x.yaml:0:0: links out of profiles")


@pytest.fixture(scope="module")
def rendered_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rendered")
    assert main(["render", str(REPO / "profiles" / "vllm-llama31-405b.yaml"), "-o", str(root / "out")]) == 0
    return root / "out" / "vllm-llama31-405b"


def _edit(name: str, change):
    def apply(directory: Path) -> None:
        (directory / name).write_text(change((directory / name).read_text()))

    return apply


VALIDATE_ROWS = {
    "kind: {a: 1}": (
        _edit("service.yaml", lambda t: t.replace("kind: Service", "kind: {a: 1}")),
        None,
        "kind: must be",
    ),
    "apiVersion: [v1]": (
        _edit("service.yaml", lambda t: t.replace("apiVersion: v1", "apiVersion: [v1]")),
        None,
        "apiVersion",
    ),
    "an object nested deep": (_edit("service.yaml", lambda t: t + "  x: " + _nested(200) + "\n"), None, "nest more"),
    "a Service that lost its spec, validating the LWS": (
        _edit("service.yaml", lambda t: t.split("spec:")[0]),
        "leaderworkerset.yaml",
        None,
    ),
    "a !!binary value": (
        _edit("service.yaml", lambda t: t.replace("kind: Service", "kind: Service\nextra: !!binary aGk=")),
        None,
        "a value JSON cannot hold",
    ),
    "a kustomization naming a 300-character file": (
        _edit("kustomization.yaml", lambda t: t.replace("resources:", "resources:\n- " + "a" * 300 + ".yaml")),
        None,
        "a component of 305 bytes",
    ),
    "a sibling whose profile extends a NUL path": (
        lambda d: (d.parent / "team-b.yaml").write_text(BASE + 'extends: "x\\0y"\n'),
        None,
        None,
    ),
}


@pytest.mark.parametrize("row", VALIDATE_ROWS)
def test_a_hand_edited_output_directory_gives_findings_never_a_crash(rendered_dir, tmp_path, capsys, row):
    mutate, target, expected = VALIDATE_ROWS[row]
    directory = tmp_path / "o" / "demo"
    shutil.copytree(rendered_dir, directory)
    (tmp_path / ".git").mkdir()
    mutate(directory)
    code = main(["validate", str(directory / target if target else directory)])
    said = capsys.readouterr()
    said = said.out + said.err
    assert "Traceback" not in said and "internal error" not in said, said
    if expected is None:  # the broken file is another's to report: this one validates
        assert code == 0, said
    else:
        assert code == 1 and expected in said, said
        assert POSITIONED.search(said)


def test_validate_of_a_directory_of_thousands_reads_each_file_once(tmp_path, capsys, monkeypatch):
    from lwsgen.load import inherit

    _files(tmp_path, {"p0.yaml": BASE})
    for index in range(1, 2000):
        (tmp_path / f"p{index}.yaml").write_text(f"extends: p{index - 1}.yaml\nname: n{index}\n")
    reads = []
    real = inherit.load_mapping
    monkeypatch.setattr(inherit, "load_mapping", lambda path, *a: reads.append(path) or real(path, *a))
    assert main(["validate", str(tmp_path / "p1999.yaml")]) == 1
    assert "more than 32 bases in one extends chain" in capsys.readouterr().out
    assert len(reads) == 33  # its own chain, and no further
    reads.clear()
    assert main(["validate", str(tmp_path)]) == 1
    assert "p40.yaml:1:1: extends: more than 32 bases" in capsys.readouterr().out
    assert len(reads) == 2000  # every file once, not once per chain that reaches it (66,000 before)


def test_a_profile_whose_file_name_is_not_utf8_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    name = os.fsdecode(b"p\xff.yaml")
    (tmp_path / name).write_text(BASE)
    _refused(tmp_path, capsys, ["render", name, "-o", "out"], "p\\xff.yaml:0:0: its path is not valid UTF-8")


def test_the_walks_resolver_resolves_every_path_as_realpath_does(tmp_path, monkeypatch):
    """bounds.Resolver (one realpath per directory) gives bounds.resolved's answer for every kind of
    path a walk meets: plain files, links to files and to directories, dangling and looping links,
    files under a looping or linked directory, '..', relative paths and missing files."""
    from lwsgen import bounds

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.yaml").write_text("x: 1\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "to-a.yaml").symlink_to("a.yaml")
    (tmp_path / "real" / "dangling.yaml").symlink_to("nowhere.yaml")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "real" / "up.yaml").symlink_to(tmp_path / "linked" / "a.yaml")
    monkeypatch.chdir(tmp_path / "real")
    paths = [
        *(tmp_path / "real").iterdir(),
        *(tmp_path / "linked").iterdir(),
        tmp_path / "loop",
        tmp_path / "loop" / "a.yaml",
        tmp_path / "linked" / ".." / "real" / "a.yaml",
        tmp_path / "real" / "..",
        tmp_path / "real" / "missing.yaml",
        Path("a.yaml"),
        Path("to-a.yaml"),
        Path("../linked/a.yaml"),
    ]
    resolve = bounds.Resolver()
    for path in paths * 2:  # the second pass answers from the directories it kept
        assert resolve(path) == bounds.resolved(path), path
