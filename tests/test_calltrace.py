"""A render's calls run down the layers, as its imports do (tools/calltrace.py): no function of a
lower stage calls into a higher one. Calls from the ground floor up are callbacks (the registry
running the rules registered with it, a record's method), not imports, and are not counted."""

import importlib.util

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
