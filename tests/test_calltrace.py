"""A render's calls run down the layers, as its imports do (tools/calltrace.py): no function of a
lower stage calls into a higher one. Calls from the ground floor up are callbacks (the registry
running the rules registered with it, a record's method), not imports, and are not counted."""

import importlib.util
import os

from conftest import REPO

# pyproject.toml's import-linter layers, top first (the ground floor last)
LAYERS = ("__main__", "cli", "commands", "batch", "render_cache", "pipeline", "output", "render", "derive")
LAYERS += ("check", "load", "runtimes", "platforms", "ground floor")


def _calltrace():
    spec = importlib.util.spec_from_file_location("calltrace", REPO / "tools" / "calltrace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rank(layer: str) -> int:
    return 4 if layer == "render_cache" else LAYERS.index(layer)  # batch : render_cache share a layer


def test_a_render_calls_only_down_the_layers(tmp_path):
    calltrace = _calltrace()
    entered, crossings = calltrace.trace(
        ["render", str(REPO / "profiles" / "vllm-llama31-405b.yaml"), "-o", str(tmp_path)]
    )
    assert len(entered) > 10 and crossings
    upward = [
        (caller, callee, n)
        for (caller, callee), n in crossings.items()
        if caller != "ground floor" and _rank(callee) < _rank(caller)
    ]
    assert upward == []


def test_what_runs_at_import_is_not_counted_as_the_render(tmp_path):
    """The figure is the render's: a first render traced in a fresh process, where the command line
    imports the stages lazily inside the render (class bodies, rule registrations), enters the same
    modules and makes the same crossings as a first render in a process that imported everything
    before."""
    import json
    import subprocess
    import sys

    script = (
        "import importlib, importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('calltrace', {str(REPO / 'tools' / 'calltrace.py')!r})\n"
        "calltrace = importlib.util.module_from_spec(spec); spec.loader.exec_module(calltrace)\n"
        "if sys.argv[3] == 'imported':\n"
        "    for name in sorted(calltrace.all_modules() - {'lwsgen.__main__'}):\n"
        "        importlib.import_module(name)\n"
        "entered, crossings = calltrace.trace(['render', sys.argv[1], '-o', sys.argv[2]])\n"
        "print(json.dumps([sorted(entered), sorted((f'{a} {b}', n) for (a, b), n in crossings.items())]))\n"
    )
    profile = str(REPO / "profiles" / "vllm-llama31-405b.yaml")
    env = {**os.environ, "LWSGEN_NO_RENDER_CACHE": "1"}
    traces = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, profile, str(tmp_path / start), start],
                capture_output=True,
                text=True,
                cwd=REPO,
                env=env,
                check=True,
            ).stdout.splitlines()[-1]
        )
        for start in ("fresh", "imported")
    ]
    assert traces[0] == traces[1] and len(traces[0][0]) > 10
