"""Shared fixtures: example profiles, a profile writer, the upstream material in ../shared."""

from __future__ import annotations

import copy
import os
import shutil
import sys
from pathlib import Path

import pytest

import fastyaml

# Renders of unchanged input are kept between runs (lwsgen/render_cache.py); tests that replace a
# stage to see what it does must reach it, so the suite renders afresh unless a test turns them on.
os.environ.setdefault("LWSGEN_NO_RENDER_CACHE", "1")
# A rule that reports a code it did not declare fails the test that made it say it (lwsgen/registry.py).
os.environ.setdefault("LWSGEN_STRICT_RULES", "1")

# Property tests marked `sampled` draw a third of their examples in make test; make test-slow
# (LWSGEN_EXHAUSTIVE=1) runs them whole.
EXHAUSTIVE = bool(os.environ.get("LWSGEN_EXHAUSTIVE"))


def examples(count: int) -> int:
    """How many examples a `sampled` property test draws in this run."""
    return count if EXHAUSTIVE else max(count // 3, 10)


REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LWSGEN_SHARED", REPO.parent / "shared"))
PROFILES = REPO / "profiles"

# A vLLM release without a flag table of its own (a post-release of 0.8.5): lwsgen says what its
# nearest table refuses in extraArgs as warnings and refuses nothing, so any string a test writes
# there reaches the template (the quoting tests; the flag checks have their own, test_engine_flags.py)
VLLM_UNTABLED = "vllm/vllm-openai:v0.8.5.post1"
# and of Triton (NGC 25.06: between the 24.07 and 26.07 option tables), for the same reason
TRITON_UNTABLED = "nvcr.io/nvidia/tritonserver:25.06-trtllm-python-py3"

MINIMAL = {
    "name": "demo",
    "runtime": "vllm",
    "image": "vllm/vllm-openai:v0.8.5",
    "model": {"path": "/models/Llama-3.1-8B-Instruct"},  # a hub id would warn that every pod downloads it
    "parallelism": {"tensor": 8, "pipeline": 2},
    "node": {"gpus": 8},
    "monitoring": {"enabled": False},
    "service": {"type": "ClusterIP"},  # the default LoadBalancer, open, is warned about (tested on its own)
}


def tool(name: str) -> str:
    """An external tool the tests run for real: from the venv (make test installs it there) or PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; run the tests through `make test`, which installs it")
    return found


def json_through(argv: list[str], payload, timeout: float):
    """Run argv (an engine venv's python on a script) with payload as JSON on stdin; its JSON stdout."""
    import json
    import subprocess

    proc = subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def engine_missing(reason: str) -> None:
    """Skip for want of a real engine, or fail under make test-engines (LWSGEN_ENGINES_REQUIRED), so
    CI never passes on engines it did not run. Callable at module level."""
    if os.environ.get("LWSGEN_ENGINES_REQUIRED"):
        pytest.fail(f"make test-engines needs it: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def merged(base: dict, **changes) -> dict:
    """A deep copy of base with dotted-path changes: merged(p, **{"node.gpus": 4})."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        if value is ...:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return out


@pytest.fixture
def minimal() -> dict:
    return copy.deepcopy(MINIMAL)


@pytest.fixture
def write_profile(tmp_path):
    """Write a profile (dict or text) to tmp_path/<name> and return its path. tmp_path stands for a
    repository (it has a .git), so bases in it may be anywhere below it."""
    (tmp_path / ".git").mkdir(exist_ok=True)

    def write(profile, name: str = "profile.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = profile if isinstance(profile, (str, bytes)) else fastyaml.dump(profile, sort_keys=False)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def render(write_profile):
    """Render a profile dict through the whole pipeline (nothing written) and return the Rendered."""
    from lwsgen.pipeline import render_profile

    def run(profile: dict, name: str = "profile.yaml"):
        return render_profile(write_profile(profile, name))

    return run


@pytest.fixture
def said(write_profile):
    """What stages 1-2 say of a profile dict: (errors, warnings), each as 'field.path: message'."""
    from lwsgen.pipeline import load_profile
    from lwsgen.problems import ProblemsError

    def run(profile: dict) -> tuple[list[str], list[str]]:
        def text(problem) -> str:
            return f"{problem.path}: {problem.message}"

        try:
            _, _, warnings = load_profile(write_profile(profile))
        except ProblemsError as err:
            return [text(p) for p in err.problems if p.severity == "error"], []
        return [], [text(p) for p in warnings]

    return run


def objects_of(rendered) -> dict[str, dict]:
    """file name -> the object in it (a list for the one-off multi-document files)."""
    out = {}
    for name, text in rendered.files.items():
        docs = list(fastyaml.load_all(text))
        out[name] = docs[0] if len(docs) == 1 else docs
    return out


def lws_of(rendered) -> dict:
    return objects_of(rendered)["leaderworkerset.yaml"]


def problem_codes(path) -> list[str]:
    """The codes of the problems a profile file has through stage 2 (empty when it is valid)."""
    from lwsgen.pipeline import load_profile
    from lwsgen.problems import ProblemsError

    try:
        load_profile(path)
    except ProblemsError as err:
        return [p.code for p in err.problems]
    return []


# Timing tests (marker `quiet`) compare against the machine they run on, but a burst of other work can
# still land on one measurement: a failed one runs once more, and a pass then is reported as a timing
# miss, not a failure. make test runs them after the rest, on their own.
TIMING_MISSES: list[str] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if item.get_closest_marker("quiet") is None:
        return (yield)
    try:
        return (yield)
    except AssertionError as first:
        result = item.runtest()  # a second miss fails the test
        TIMING_MISSES.append(f"{item.nodeid}: {str(first).splitlines()[0]}")
        return result


def pytest_terminal_summary(terminalreporter):
    if TIMING_MISSES:
        terminalreporter.section("timing misses (passed when run again)")
        for line in TIMING_MISSES:
            terminalreporter.line(line)
