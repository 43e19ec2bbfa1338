"""The command line through main(argv), and once for real through `python -m lwsgen`."""

import json
import subprocess
import sys

import pytest

import fastyaml
from conftest import PROFILES, REPO, merged
from lwsgen import __version__
from lwsgen.cli import FORMATS, main
from lwsgen.problems import FORMATTERS


def test_version_and_help_exit_zero(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"lwsgen {__version__}"
    for argv in (["--help"], ["render", "--help"], ["schema", "--help"]):
        assert main(argv) == 0
        assert "usage: lwsgen" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [[], ["render"], ["bogus"], ["render", "p.yaml", "--check", "--stdout"], ["render", "p.yaml", "--format", "xml"]],
)
def test_usage_errors_exit_two(argv, capsys):
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_format_choices_are_the_registered_formatters():
    assert set(FORMATS) == set(FORMATTERS)


def test_schema_prints_the_profile_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((REPO / "schemas" / "profile.schema.json").read_text())


def test_problems_as_json_and_github_annotations(write_profile, minimal, capsys):
    path = write_profile(merged(minimal, **{"node.gpus": 0}))
    assert main(["render", str(path), "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row == {
        "file": str(path),
        "line": 10,
        "column": 9,
        "path": "node.gpus",
        "message": "0 is out of range; must be at least 1",
        "code": "out-of-range",
        "severity": "error",
    }
    assert main(["render", str(path), "--format", "github"]) == 1
    assert (
        capsys.readouterr().out
        == f"::error file={path},line=10,col=9::node.gpus: 0 is out of range; must be at least 1\n"
    )


def test_a_directory_without_profiles_is_an_error(tmp_path, capsys):
    assert main(["render", str(tmp_path)]) == 1
    assert "no profiles found" in capsys.readouterr().err


def test_python_dash_m_renders_with_exit_codes(write_profile, minimal, tmp_path):
    out = tmp_path / "out"
    ok = subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", str(write_profile(minimal)), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert (out / "demo" / "leaderworkerset.yaml").is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", str(write_profile("name: [", "bad.yaml"))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "YAML syntax error" in bad.stderr
    # The process skips collecting garbage at exit; what it printed must still all arrive.
    piped = subprocess.run(
        [sys.executable, "-m", "lwsgen", "render", str(write_profile(minimal)), "--stdout"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert piped.returncode == 0, piped.stderr
    assert (out / "demo" / "leaderworkerset.yaml").read_text() in piped.stdout
    assert piped.stdout.endswith((out / "demo" / "service.yaml").read_text())  # the stream's last object, whole


HEAVY = ("yaml", "jinja2", "jsonschema_rs", "kubernetes_validate", "lwsgen.pipeline")


def _loaded_by(argv: list[str]) -> list[str]:
    """Which of HEAVY a command imports, run in a new process."""
    code = (
        f"import sys\nfrom lwsgen.cli import main\nmain({argv!r})\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return proc.stderr.strip().splitlines()[-1]


def test_help_imports_no_stage():
    assert _loaded_by(["--help"]) == "[]"


def test_validate_loads_no_template_engine_and_plan_no_schemas():
    # validate reads and checks YAML: Jinja (~30 ms) and the render pipeline are not its business
    assert _loaded_by(["validate", str(REPO / "out" / "triton-llama3-405b")]) == "['jsonschema_rs', 'yaml']"
    plan = ["plan", "--model", "llama-3.1-70b", "--gpu", "H100-80GB"]
    assert "jsonschema_rs" not in _loaded_by(plan) and "jinja2" not in _loaded_by(plan)


def test_an_internal_error_is_one_line_without_traceback(write_profile, minimal, monkeypatch, capsys):
    monkeypatch.setattr("lwsgen.pipeline.derive", lambda *a: 1 / 0)
    assert main(["render", str(write_profile(minimal))]) == 3
    err = capsys.readouterr().err
    assert err.startswith("lwsgen: internal error: ZeroDivisionError") and "Traceback" not in err


def test_a_reader_that_stops_early_gets_no_error_and_exit_0(tmp_path):
    """`lwsgen render profiles/ --stdout | head -c 100`: the closed pipe is the reader's choice, not
    a failure. The stream (~117 kB) is larger than a pipe's buffer, so the writer meets it closed."""
    with subprocess.Popen(
        [sys.executable, "-m", "lwsgen", "render", str(PROFILES), "--stdout"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    ) as proc:
        proc.stdout.read(100)
        proc.stdout.close()
        err = proc.stderr.read().decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err


def _costly(minimal):
    return merged(minimal, **{"lws.maxSurge": 1})  # valid, but warned about: a surge group needs whole nodes


def test_warnings_appear_in_every_format(write_profile, minimal, tmp_path, capsys):
    path = write_profile(_costly(minimal))
    out = str(tmp_path / "out")
    assert main(["render", str(path), "-o", out]) == 0
    assert ": lws.maxSurge: warning: each surge group" in capsys.readouterr().err
    assert main(["render", str(path), "-o", out, "--format", "json"]) == 0
    captured = capsys.readouterr()
    [row] = json.loads(captured.out)
    assert (row["severity"], row["code"], row["path"]) == ("warning", "costly", "lws.maxSurge")
    assert "files" in captured.err  # the write report stays out of the JSON
    assert main(["render", str(path), "-o", out, "--format", "github"]) == 0
    assert capsys.readouterr().out.startswith(f"::warning file={path},line=")
    assert main(["validate", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["severity"] == "warning"


def test_strict_makes_warnings_errors_in_every_format(write_profile, minimal, tmp_path, capsys):
    path = write_profile(_costly(minimal))
    assert main(["render", str(path), "-o", str(tmp_path / "out"), "--strict", "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["severity"] == "error"
    assert not (tmp_path / "out").exists()


def test_warnings_with_stdout_stream_go_to_stderr(write_profile, minimal, capsys):
    path = write_profile(_costly(minimal))
    assert main(["render", str(path), "--stdout", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("---\n") and json.loads(captured.err)[0]["severity"] == "warning"


def test_render_reads_a_profile_from_standard_input(monkeypatch, capsys, tmp_path):
    import io

    text = (PROFILES / "vllm-llama31-405b.yaml").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    assert main(["render", "-", "--stdout"]) == 0
    streamed = capsys.readouterr().out
    assert main(["render", str(PROFILES / "vllm-llama31-405b.yaml"), "--stdout"]) == 0
    assert streamed == capsys.readouterr().out  # the same bytes as from the file
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"name: x\nruntime: [\n")))
    assert main(["render", "-", "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:") and not (tmp_path / "out").exists()


def test_set_overrides_fields_and_is_checked_as_the_file_at_the_flag(capsys):
    profile = str(PROFILES / "trtllm-serve-llama31-405b.yaml")
    args = ["render", profile, "--stdout", "--set", "replicas=3", "--set", "labels.team\\.example\\.com/owner=ml"]
    assert main(args) == 0
    lws = next(d for d in fastyaml.load_all(capsys.readouterr().out) if d and d["kind"] == "LeaderWorkerSet")
    assert lws["spec"]["replicas"] == 3 and lws["metadata"]["labels"]["team.example.com/owner"] == "ml"
    assert main(["render", profile, "--stdout", "--set", "replicas=2", "--set", "replicas=three"]) == 1
    assert "--set:2:10: replicas: must be an integer, not a string" in capsys.readouterr().err
    assert main(["render", profile, "--stdout", "--set", "replicas=2", "--set", "nope"]) == 1
    assert "--set:2:1: must be PATH=VALUE" in capsys.readouterr().err
    assert main(["render", profile, "--stdout", "--set", "extends=../x.yaml"]) == 1
    assert "--set:1:1: extends: is the file's to say" in capsys.readouterr().err


def test_default_fills_only_what_no_file_sets(tmp_path, capsys):
    base = fastyaml.load((PROFILES / "triton-llama3-405b.yaml").read_text())
    base.pop("namespace", None)
    path = tmp_path / "p.yaml"
    path.write_text(fastyaml.dump(base))
    assert main(["render", str(path), "--stdout", "--default", "namespace=team-a"]) == 0
    docs = [d for d in fastyaml.load_all(capsys.readouterr().out) if d]
    assert {d["metadata"]["namespace"] for d in docs if d["kind"] == "LeaderWorkerSet"} == {"team-a"}
    path.write_text(fastyaml.dump({**base, "namespace": "mine"}))
    assert main(["render", str(path), "--stdout", "--default", "namespace=team-a"]) == 0
    docs = [d for d in fastyaml.load_all(capsys.readouterr().out) if d]
    assert {d["metadata"]["namespace"] for d in docs if d["kind"] == "LeaderWorkerSet"} == {"mine"}


def test_hostile_assignments_are_problems_not_crashes(capsys):
    profile = str(PROFILES / "trtllm-serve-llama31-405b.yaml")
    deep = ".".join(["a"] * 300)
    for assignment, said in (
        (f"labels.{deep}=1", "--set:1:1: a field path of more than 16 keys"),
        ("node.memory=1e1000000", "the API server would refuse memory '1e1000000'"),
        ("replicas=!!python/object:os.system x", "--set:1:10"),
    ):
        assert main(["render", profile, "--stdout", "--set", assignment]) == 1, assignment
        assert said in capsys.readouterr().err, assignment
