"""The engines' flag tables (lwsgen/runtimes/flags, dumped from the real parsers) and the pure-Python
checker over them (lwsgen/check/flags.py): unit tests against the committed tables, and, where the
engines' venvs exist (`make engine-args` builds them), the checker's verdicts against the real
parsers' and the tables against a fresh dump."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, engine_missing, json_through
from lwsgen.check import flags
from lwsgen.check.flags import argv_problems

VENVS = Path(os.environ.get("LWSGEN_ENGINE_VENVS", REPO / ".venv-engines"))
TOOLS = REPO / "tools" / "engine_args"
TABLES = REPO / "lwsgen" / "runtimes" / "flags"
PINNED = {"vllm": "0.33.0", "sglang": "0.5.23", "aphrodite": "0.20.0"}  # the examples' releases
OLDEST = {"vllm": "0.8.5", "sglang": "0.4.6"}  # the oldest releases lwsgen checks (ENGINE.oldest)
# Every parser make engines installs, by (engine, release): the examples' in venv ENGINE, the oldest in
# venv ENGINE-RELEASE
PARSERS = sorted({**{(e, v): e for e, v in PINNED.items()}, **{(e, v): f"{e}-{v}" for e, v in OLDEST.items()}})


def _venv(engine: str, version: str | None = None) -> Path:
    name = engine if version in (None, PINNED[engine]) else f"{engine}-{version}"
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        engine_missing(f"no {engine} venv at {python.parent.parent} (make test-engines builds it)")
    return python


def _messages(engine: str, argv: list[str]) -> dict[int, str]:
    return dict(argv_problems(engine, PINNED[engine], argv))


# ---- the committed tables -------------------------------------------------------------------------


def test_tables_are_found_as_package_data_and_say_what_they_are():
    assert flags.known_versions("sglang")[-1] == "0.5.23" and "0.33.0" in flags.known_versions("vllm")
    assert flags.known_versions("no-such-engine") == []
    for engine, version in PINNED.items():
        table, exact = flags.table_for(engine, version)
        assert exact and (table["engine"], table["version"]) == (engine, version)
        assert table["source"].startswith(f"{engine} {version} ")
        assert table["allow_abbrev"] is True and table["prefix_chars"] == "-"
        assert table["flags"]["--port"]["takes_value"] is True
    table, _ = flags.table_for("vllm", "0.33.0")
    assert table["parser_class"] == "vllm.utils.argparse_utils.FlexibleArgumentParser"
    assert not table["abbreviation_overridden"] and table["rewrites"]["probes"]
    assert flags.table_for("sglang", "0.5.23")[0]["rewrites"] is None


def test_a_version_without_a_table_gets_the_nearest_not_exact():
    table, exact = flags.table_for("sglang", "99.0")
    assert not exact and table["version"] == flags.known_versions("sglang")[-1]
    table, exact = flags.table_for("sglang", "0.0.1")
    assert not exact and table["version"] == flags.known_versions("sglang")[0]
    assert flags.table_for("llamacpp", "b6123") is None and argv_problems("llamacpp", "b6123", ["--x"]) == []
    assert "the nearest table to 99.0" in argv_problems("sglang", "99.0", ["--no-such-flag"])[0][1]


def test_version_order_is_pep440_like():
    ordered = ["0.4.9", "0.4.10rc1", "0.4.10", "0.4.10.post2", "0.5", "0.5.1", "0.11.0"]
    assert sorted(reversed(ordered), key=flags._version_key) == ordered


# ---- argv_problems against the committed tables ---------------------------------------------------


def test_an_unknown_long_option():
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--no-such-flag", "1"])
    assert index == 2 and message == "--no-such-flag is not a flag of sglang 0.5.23"
    [(_, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--enable-metrix"])
    assert message.endswith("did you mean --enable-metrics?")


def test_an_ambiguous_abbreviation_names_the_candidates():
    assert argv_problems("sglang", "0.5.23", ["--model-path", "m", "--cuda-graph-max-bs", "64"]) == [
        (
            2,
            "--cuda-graph-max-bs is not a flag of sglang 0.5.23 (argparse finds it ambiguous: "
            "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill); use one of those",
        )
    ]
    # the value after it is its own, not a second problem; and '=' is split off first
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--cuda-graph-max-bs=64", "--tp-size", "8"])
    assert index == 0 and "ambiguous: --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill" in message


def test_a_unique_abbreviation_is_expanded_and_named():
    problems = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--tp", "8", "--dp=2"])
    assert problems == [
        (2, "--tp is not a flag of sglang 0.5.23: argparse expands the abbreviation to --tp-size; write --tp-size"),
        (4, "--dp is not a flag of sglang 0.5.23: argparse expands the abbreviation to --dp-size; write --dp-size"),
    ]
    # single-dash flags are prefix-matched too (argparse does, whatever allow_abbrev says)
    [(index, message)] = argv_problems("vllm", "0.33.0", ["m", "-t", "2"])
    assert index == 1 and "expands the abbreviation to -tp" in message
    [(_, message)] = argv_problems("vllm", "0.33.0", ["m", "-d", "2"])
    assert "ambiguous: -dc, -dcp, -dp," in message


def test_flag_equals_value_forms():
    assert argv_problems("sglang", "0.5.23", ["--model-path=m", "--tp-size=8", "--host=0.0.0.0"]) == []
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path=m", "--enable-metrics=true"])
    assert index == 1 and message.startswith("--enable-metrics takes no value")
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path=m", "--no-such=1"])
    assert index == 1 and message.startswith("--no-such=1 is not a flag")
    # a value with '=' in it, after the flag's own '='
    assert argv_problems("vllm", "0.33.0", ["m", '--override-generation-config={"a": "b=c"}']) == []


def test_values_are_skipped_and_checked():
    # "-1" looks like a negative number, and no flag does: a value; "--x" after a valued flag is not
    assert argv_problems("sglang", "0.5.23", ["--model-path", "m", "--port", "-1", "--max-running-requests", "4"]) == []
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "--port", "30000"])
    assert index == 0 and "--model-path needs a value, but '--port'" in message
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--port"])
    assert index == 2 and "expected one argument" in message
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--tp-size", "eight"])
    assert index == 3 and message == "--tp-size: 'eight' is not an int (argparse: invalid int value)"
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--dtype", "fp99"])
    assert index == 3 and "'fp99' is not one of its choices in sglang 0.5.23 (auto, half," in message
    # nargs '+' takes every argument up to the next option
    assert argv_problems("vllm", "0.33.0", ["m", "--served-model-name", "a", "b", "--port", "8000"]) == []
    # a word no flag takes
    [(index, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "--enable-metrics", "true"])
    assert index == 3 and "'true' is no flag's value here" in message


def test_valid_full_command_lines_have_no_problems():
    sglang = ["--model-path", "/models/x", "--served-model-name", "x", "--tp-size", "16", "--nnodes", "2"]
    sglang += ["--node-rank", "1", "--dist-init-addr", "s-0.s:20000", "--host", "0.0.0.0", "--port", "30000"]
    sglang += ["--enable-metrics", "--enable-dp-attention", "--dp-size", "2", "--mem-fraction-static=0.85"]
    sglang += ["--cuda-graph-max-bs-decode", "64", "--trust-remote-code", "--chunked-prefill-size", "-1"]
    assert argv_problems("sglang", "0.5.23", sglang) == []
    vllm = ["/models/x", "--served-model-name", "x", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
    vllm += ["--nnodes", "2", "--node-rank", "0", "--master-addr", "v-0.v", "--master-port", "29501"]
    vllm += ["--host", "0.0.0.0", "--port", "8080", "--gpu-memory-utilization", "0.9", "--enable-expert-parallel"]
    vllm += ["--no-enable-prefix-caching", "--max-model-len", "32k", "-tp", "8", "--dtype=bfloat16"]
    assert argv_problems("vllm", "0.33.0", vllm) == []


def test_vllm_rewrites_before_argparse():
    # FlexibleArgumentParser.parse_args: underscores, -O levels, dotted JSON keys, --model to the front
    ok = ["m", "--tensor_parallel_size", "2", "-O3", "--compilation-config.mode", "3", "--max_model_len=4096"]
    assert argv_problems("vllm", "0.33.0", ok) == []
    assert argv_problems("vllm", "0.33.0", ["--model", "m", "--port", "8000"]) == []
    [(index, message)] = argv_problems("vllm", "0.33.0", ["m", "--tensor_parallel", "2"])
    assert index == 1 and "expands the abbreviation to --tensor-parallel-size" in message
    assert "reads '--tensor_parallel' as '--tensor-parallel'" in message
    # a negative decimal is a dotted key to vLLM: the value must go with '='
    problems = argv_problems("vllm", "0.33.0", ["m", "--kv-cache-memory-bytes", "-0.5", "--port", "8000"])
    assert problems and problems[0][0] == 2 and "dotted key '-0.5'" in problems[0][1]
    [(index, message)] = argv_problems("vllm", "0.33.0", ["--served-model-name", "x", "--port", "8000"])
    assert index == 0 and "without the model as the first argument" in message
    # --no-enable-x is registered though hidden from --help (EnableDisableAction)
    assert argv_problems("vllm", "0.33.0", ["m", "--no-enable-prefix-caching", "--disable-log-stats"]) == []


@pytest.mark.parametrize("engine, version", [(e, v) for e in ("vllm", "aphrodite") for v in flags.known_versions(e)])
def test_the_vllm_rewrite_reproduces_the_recorded_probes(engine, version):
    """Each table's FlexibleArgumentParser (vLLM's releases, Aphrodite's copy) by its recorded probes:
    what its mirror hands argparse is what the real parse_args did, and it refuses what that raised on."""
    table, _ = flags.table_for(engine, version)
    rewrite = flags._rewrite_of(table)
    for probe in table["rewrites"]["probes"]:
        assert probe["argv"][0] == "serve"
        problems: list = []
        got = [t for t, _ in rewrite(probe["argv"][1:], problems, engine)]
        if "raises" in probe:
            assert problems, probe
            continue
        expected = ["{}" if t.startswith("{") else t for t in probe["argparse_gets"][1:]]
        assert got == expected, probe


def test_help_and_double_dash():
    [(_, message)] = argv_problems("sglang", "0.5.23", ["--model-path", "m", "-h"])
    assert "prints the help and exits" in message
    assert argv_problems("sglang", "0.5.23", ["--model-path", "m", "--", "x"])


# ---- against the real parsers ---------------------------------------------------------------------

RUN_REAL = r"""
import argparse, contextlib, io, json, os, sys, traceback
# stdout is the verdicts alone: what the engine's loggers print (Aphrodite's hold the stream they
# found at import) goes to stderr
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.path.insert(0, sys.argv[2])
engine = sys.argv[1]
if engine == "vllm":
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import parse
    top, _ = parse.vllm_parser()
    run = lambda argv: top.parse_args(["serve", *argv])
elif engine == "aphrodite":
    import parse
    top, _ = parse.aphrodite_parser()
    run = lambda argv: top.parse_args(["serve", *argv])
else:
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    run = parser.parse_args
out = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            run(argv)
            verdict = {"exit": None}
        except SystemExit as e:
            verdict = {"exit": e.code}
        except Exception as e:  # vLLM's rewrites raise before argparse
            verdict = {"exit": type(e).__name__}
    lines = [l for l in err.getvalue().splitlines() if "error" in l.lower()]
    verdict["error"] = lines[-1] if lines else ""
    out.append(verdict)
answer.write(json.dumps(out))
answer.flush()
"""


def _real(engine: str, argvs: list[list[str]], version: str | None = None) -> list[dict]:
    return json_through([str(_venv(engine, version)), "-c", RUN_REAL, engine, str(TOOLS)], argvs, timeout=600)


# (argv, what happens): "ok" the real parser takes it as written, "reinterpreted" it takes it as
# something else (an abbreviation), "rejected" it refuses it; the checker must say nothing for "ok"
# and a problem otherwise.
SGLANG = ["--model-path", "m"]
CASES = {
    "sglang": [
        ([*SGLANG, "--tp-size", "8", "--port", "-1", "--enable-metrics"], "ok"),
        ([*SGLANG, "--tp-size=8", "--host=0.0.0.0", "--dtype", "half", "--chunked-prefill-size", "-1"], "ok"),
        ([*SGLANG, "--cuda-graph-max-bs-decode", "64", "--served-model-name", "x"], "ok"),
        ([*SGLANG, "--cuda-graph-max-bs", "64"], "rejected"),
        ([*SGLANG, "--cuda-graph-max-bs=64"], "rejected"),
        ([*SGLANG, "--tp", "8"], "reinterpreted"),
        ([*SGLANG, "--dp=2"], "reinterpreted"),
        ([*SGLANG, "--no-such-flag", "1"], "rejected"),
        ([*SGLANG, "--tp_size", "8"], "rejected"),
        ([*SGLANG, "--enable-metrics=true"], "rejected"),
        ([*SGLANG, "--enable-metrics", "true"], "rejected"),
        ([*SGLANG, "--port"], "rejected"),
        (["--model-path", "--port", "30000"], "rejected"),
        ([*SGLANG, "--tp-size", "eight"], "rejected"),
        ([*SGLANG, "--dtype", "fp99"], "rejected"),
        ([*SGLANG, "--mode", "x"], "rejected"),
        ([*SGLANG, "-x"], "rejected"),
        ([*SGLANG, "--", "x"], "rejected"),
    ],
    "vllm": [
        (["m", "--tensor-parallel-size", "8", "-tp", "8", "--port", "8080", "--enable-expert-parallel"], "ok"),
        (["m", "--tensor_parallel_size", "2", "-O3", "--max_model_len=4096", "--dtype=half"], "ok"),
        (["m", "--compilation-config.mode", "3", "--served-model-name", "a", "b", "--port", "8000"], "ok"),
        (["m", "--no-enable-prefix-caching", "--disable-log-stats", "-O", "2"], "ok"),
        (["--model", "m", "--port", "8000"], "ok"),
        (["m", "--tensor-parallel", "2"], "reinterpreted"),
        (["m", "-t", "2"], "reinterpreted"),
        (["m", "--enable-expert"], "reinterpreted"),
        (["m", "-d", "2"], "rejected"),
        (["m", "--no-such-flag", "1"], "rejected"),
        (["m", "--enable-expert-parallel=1"], "rejected"),
        (["m", "--port"], "rejected"),
        (["m", "--dtype", "fp99"], "rejected"),
        (["m", "--kv-cache-memory-bytes", "-0.5", "--port", "8000"], "rejected"),
        (["m", "extra"], "rejected"),
        (["--served-model-name", "x", "--port", "8000"], "rejected"),
        (["m", "-Ox"], "ok"),  # -O<mode> is --optimization-level <mode>, checked after parsing
        (["m", "-O", "x"], "rejected"),
        (["m", "--enable"], "rejected"),
        (["m", "--config", "/no/such.json"], "rejected"),
    ],
}
# Aphrodite 0.20.0 carries vLLM's parser: the same argvs, as its own parser judges them
CASES["aphrodite"] = list(CASES["vllm"])
# The oldest releases: what changed since (vLLM 0.8.5's FlexibleArgumentParser refuses the token
# --model and has no dotted keys; SGLang 0.4.6 has one --cuda-graph-max-bs, no pipeline)
CASES_OLDEST = {
    "vllm": [
        (["m", "--tensor-parallel-size", "8", "--port", "8080", "--distributed-executor-backend", "ray"], "ok"),
        (["m", "--tensor_parallel_size", "2", "--max_model_len=4096", "-tp", "2"], "ok"),
        (["m", "--model=x", "--served-model-name", "a", "b", "--enable-expert-parallel"], "ok"),
        (["--served-model-name", "x", "--port", "8000", "--model=m"], "ok"),
        (["--model", "m", "--port", "8000"], "rejected"),
        (["m", "--tensor-parallel", "2"], "reinterpreted"),
        (["m", "--headless"], "rejected"),
        (["m", "--nnodes", "2"], "rejected"),
        (["m", "--compilation-config.level", "3"], "rejected"),
        (["m", "extra"], "rejected"),
    ],
    "sglang": [
        ([*SGLANG, "--tp-size", "8", "--enable-metrics", "--cuda-graph-max-bs", "64"], "ok"),
        (
            [
                *SGLANG,
                "--dist-init-addr",
                "a:1",
                "--nnodes",
                "2",
                "--node-rank",
                "1",
                "--disaggregation-mode",
                "prefill",
            ],
            "ok",
        ),
        ([*SGLANG, "--tp", "8"], "reinterpreted"),
        ([*SGLANG, "--enable-dp-lm-head"], "rejected"),
        ([*SGLANG, "--pp-size", "2"], "rejected"),
        ([*SGLANG, "--tp_size", "8"], "rejected"),
    ],
}


def _generated(engine: str, version: str, count: int = 150) -> list[list[str]]:
    """Flags cut short, run on, respelled and given '=' values: argvs the checker must not pass when
    the parser refuses them."""
    table, _ = flags.table_for(engine, version)
    rng = random.Random(f"{engine}-flags")
    simple = sorted(
        s
        for s, f in table["flags"].items()
        if s.startswith("--")
        and s not in ("--help", "--config")
        and not f["error"]
        and (f["nargs"] == 0 or (f["nargs"] is None and f["type"] == "int" and not f["choices"]))
    )
    base = ["m"] if engine in ("vllm", "aphrodite") else SGLANG
    argvs = []
    for _ in range(count):
        argv = list(base)
        for _ in range(rng.randint(1, 3)):
            flag = rng.choice(simple)
            takes = table["flags"][flag]["takes_value"]
            form = rng.choice(["whole", "cut", "cut", "longer", "under", "equals", "value"])
            if form == "cut":
                flag = flag[: rng.randint(3, len(flag) - 1)]
            elif form == "longer":
                flag += rng.choice(["s", "-x", "-decode"])
            elif form == "under":
                flag = "--" + flag[2:].replace("-", "_")
            if form == "equals":
                argv.append(f"{flag}=2")
            elif takes or form == "value":
                argv += [flag, "2"]
            else:
                argv.append(flag)
        argvs.append(argv)
    return argvs


@pytest.mark.engines  # the engines' own parsers (make engines): make test-engines runs it
@pytest.mark.parametrize("engine, version", PARSERS)
def test_the_checker_is_never_looser_than_the_real_parser(engine, version):
    cases = CASES[engine] if version == PINNED[engine] else CASES_OLDEST[engine]
    generated = _generated(engine, version)
    verdicts = _real(engine, [argv for argv, _ in cases] + generated, version)
    for (argv, expected), real in zip(cases, verdicts[: len(cases)], strict=True):
        problems = argv_problems(engine, version, argv)
        assert (real["exit"] is not None) == (expected == "rejected"), (argv, real)
        assert bool(problems) == (expected != "ok"), (argv, problems, real)
    looser = [
        (argv, real)
        for argv, real in zip(generated, verdicts[len(cases) :], strict=True)
        if real["exit"] is not None and not argv_problems(engine, version, argv)
    ]
    assert looser == []
    # and the checker's silence is rare only where the parser objects: some generated argvs pass
    assert any(real["exit"] is None for real in verdicts[len(cases) :])


@pytest.mark.engines  # the engines' own parsers (make engines): make test-engines runs it
def test_the_real_sglang_finds_cuda_graph_max_bs_ambiguous():
    [real] = _real("sglang", [[*SGLANG, "--cuda-graph-max-bs", "64"]])
    assert real["exit"] == 2
    assert real["error"].endswith(
        "error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill"
    )


@pytest.mark.engines  # the engines' own parsers (make engines): make test-engines runs it
@pytest.mark.parametrize("engine, release", PARSERS)
def test_the_committed_table_is_what_the_parser_dumps(engine, release):
    proc = subprocess.run(
        [str(_venv(engine, release)), str(TOOLS / "dump_flags.py"), engine],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    version = json.loads(proc.stdout)["version"]
    assert version == release, f"the {engine} venv has {version}, not the pinned {release}"
    committed = (TABLES / f"{engine}-{version}.json").read_text(encoding="utf-8")
    assert proc.stdout == committed, f"regenerate: {sys.executable} ... dump_flags.py {engine} (see its docstring)"


def _sglang_profile(image: str, **model) -> dict:
    return {
        "name": "s",
        "runtime": "sglang",
        "image": image,
        "model": {"path": "/var/run/models/m", **model},
        "parallelism": {"tensor": 8, "pipeline": 2},
        "node": {"gpus": 8},
        "storage": {"claimName": "models"},
        "service": {"type": "ClusterIP"},
    }


def test_render_refuses_an_extra_arg_the_images_engine_version_lacks_at_its_line(said):
    """The SGLang P/D example's decode role passed --cuda-graph-max-bs to 0.5.23, which exits 2."""
    profile = _sglang_profile(
        "lmsysorg/sglang:v0.5.23", extraArgs=["--mem-fraction-static", "0.8", "--cuda-graph-max-bs", "64"]
    )
    errors, _ = said(profile)
    assert errors == [
        "model.extraArgs[2]: --cuda-graph-max-bs is not a flag of sglang 0.5.23 (argparse finds it ambiguous: "
        "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill); use one of those"
    ]
    profile["model"]["extraArgs"][2] = "--cuda-graph-max-bs-decode"
    assert said(profile) == ([], [])


def test_a_version_without_its_own_table_is_checked_against_the_nearest_as_a_warning(write_profile, tmp_path, capsys):
    from lwsgen.cli import main

    path = write_profile(_sglang_profile("lmsysorg/sglang:v0.5.24", extraArgs=["--no-such-flag"]))
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().err
    assert (
        "model.extraArgs[0]: warning: --no-such-flag is not a flag of sglang 0.5.23 (the nearest table to 0.5.24)"
        in said
    )


def test_the_oldest_release_is_held_to_its_own_parsers_table(said):
    """SGLang 0.4.6 (the oldest lwsgen checks): --cuda-graph-max-bs is its one flag, and a flag added
    later (--enable-dp-lm-head) is an error, not a warning against 0.5.23's table."""
    profile = _sglang_profile("lmsysorg/sglang:v0.4.6", extraArgs=["--cuda-graph-max-bs", "64", "--enable-dp-lm-head"])
    profile["parallelism"] = {"tensor": 16}
    errors, _ = said(profile)
    assert errors == [
        "model.extraArgs[2]: --enable-dp-lm-head is not a flag of sglang 0.4.6; did you mean --enable-ep-moe?"
    ]
    profile["model"]["extraArgs"] = ["--cuda-graph-max-bs", "64"]
    assert said(profile) == ([], [])


def test_vllm_0_8_5_refuses_the_model_flag_its_successors_move():
    """vLLM 0.8.5's FlexibleArgumentParser raises on the token --model with `vllm serve`; 0.33.0 moves
    it to the front (vllm/utils.py@v0.8.5 parse_args; vllm/utils/argparse_utils.py@v0.33.0)."""
    [(index, message)] = argv_problems("vllm", "0.8.5", ["--model", "m", "--port", "8000"])
    assert index == 0 and "refuses it (ValueError" in message
    assert argv_problems("vllm", "0.33.0", ["--model", "m", "--port", "8000"]) == []
    assert argv_problems("vllm", "0.8.5", ["m", "--model=x"]) == []  # argparse's own --model takes it


def test_between_two_tables_only_what_both_lack_is_said(write_profile, tmp_path, capsys):
    """vLLM 0.20.0 has no table: a flag only 0.33.0 has (--async-scheduling) or only 0.8.5 has
    (--enable-reasoning) may be one of it, and is not said; one neither has is, as a warning."""
    from lwsgen.cli import main

    extra = ["--async-scheduling", "--enable-reasoning", "--no-such-flag"]
    path = write_profile(
        {
            "name": "v",
            "runtime": "vllm",
            "image": "vllm/vllm-openai:v0.20.0",
            "model": {"path": "/var/run/models/m", "extraArgs": extra},
            "parallelism": {"tensor": 8},
            "node": {"gpus": 8},
            "storage": {"claimName": "models"},
            "service": {"type": "ClusterIP"},
        }
    )
    assert main(["render", str(path), "-o", str(tmp_path / "out")]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "extraArgs" in line]
    assert len(said) == 1 and "model.extraArgs[2]: warning: --no-such-flag is not a flag of vllm 0.8.5" in said[0]
    assert said[0].endswith("(nor of vllm 0.33.0; 0.20.0 has no table of its own)"), said


def test_between_two_tables_one_flag_both_refuse_at_different_tokens_is_said():
    """0.8.5 finds --async-scheduling unknown (and takes 'yes' with it), 0.33.0 finds 'yes' left over:
    one flag, both refuse it."""
    [(index, message)] = flags.argv_problems_between("vllm", "0.20.0", ["m", "--async-scheduling", "yes"])
    assert index == 1 and message.endswith("(nor of vllm 0.33.0; 0.20.0 has no table of its own)")


def test_a_post_release_is_checked_by_its_releases_table():
    """0.8.5.post1 is 0.8.5 with fixes: a flag 0.8.5 lacks is said (a warning: not its own table)."""
    [(index, message)] = flags.argv_problems_at("vllm", "0.8.5.post1", ["m", "--headless"])
    assert index == 1 and "not a flag of vllm 0.8.5 (the nearest table to 0.8.5.post1)" in message
    assert flags.argv_problems_at("sglang", "0.4.6.post1", ["--model-path", "m", "--enable-dp-lm-head"])


@pytest.mark.parametrize("version", ["0.8.5", "0.33.0"])
def test_a_config_file_not_named_yaml_is_refused(version):
    [(index, message)] = argv_problems("vllm", version, ["m", "--config", "/etc/vllm/serve.json"])
    assert index == 2 and "reads only a .yaml or .yml file" in message
    assert argv_problems("vllm", version, ["m", "--config", "/etc/vllm/serve.yaml"]) == []


def test_an_extra_arg_the_kubelet_expands_is_checked_as_expanded(said):
    profile = _sglang_profile("lmsysorg/sglang:v0.5.23", extraArgs=["--max-running-requests", "$(LWS_GROUP_SIZE)"])
    assert said(profile)[0] == []


def _aphrodite_profile(version: str, extra: list[str]) -> dict:
    return {
        "name": "a",
        "runtime": "aphrodite",
        "image": "alpindale/aphrodite-openai:latest",
        "runtimeVersion": version,
        "model": {"path": "/models/m", "extraArgs": extra},
        "parallelism": {"tensor": 4, "pipeline": 2},
        "node": {"gpus": 4},
        "storage": {"claimName": "models"},
        "service": {"type": "ClusterIP"},
    }


def test_aphrodite_extra_args_are_held_to_its_own_parsers_table(said):
    """Aphrodite 0.20.0's table (dumped from `aphrodite serve`'s parser): a flag it lacks is refused
    at its line; 0.6.5 runs another program (the old server module) with no table: nothing is said."""
    errors, _ = said(_aphrodite_profile("0.20.0", ["--max-model-length", "4096"]))
    assert [e for e in errors if e.startswith("model.extraArgs[0]:") and "--max-model-length" in e], errors
    errors, warnings = said(_aphrodite_profile("0.20.0", ["--max-model-len", "4096"]))
    assert not [e for e in errors + warnings if "extraArgs" in e], errors + warnings
    errors, warnings = said(_aphrodite_profile("0.6.5", ["--max-model-length", "4096"]))
    assert not [e for e in errors + warnings if "--max-model-length" in e], errors + warnings
