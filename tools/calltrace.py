"""Which of lwsgen's modules one render enters, and how often a call crosses between its packages.

Issue #36's figure: a render of one example (the command line's own path, in process) traced with
`sys.setprofile`. A module is *entered* when a function defined in it is called by the render. What
runs at import (module bodies, class bodies, decorators registering rules, `__init_subclass__`) is
the import, not the render: every lwsgen module is imported before the trace starts, since the
command line imports the stages lazily, inside the render. A *crossing* is
a call from a function in one package of lwsgen (`check`, `derive`, `output`, ...; a top-level
module counts as the ground floor) into a function in another.

    python tools/calltrace.py [profile.yaml] [--list]

Prints `modules entered: N of M`, the crossings (all, and those between two stages rather than into
the shared ground floor) and, with --list, the modules and the package pairs.
"""

from __future__ import annotations

import collections
import importlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lwsgen"
DEFAULT_PROFILE = ROOT / "profiles" / "vllm-llama31-405b.yaml"


def module_of(filename: str) -> str | None:
    """The dotted module a code object's file is, or None outside lwsgen."""
    path = Path(filename)
    try:
        relative = path.resolve().relative_to(PACKAGE)
    except ValueError:
        return None
    parts = ["lwsgen", *relative.with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# Top-level modules that are layers of their own (pyproject.toml's import-linter contract); every
# other top-level module is the ground floor every stage shares.
OWN_LAYERS = {"cli", "batch", "render_cache", "pipeline", "platforms", "__main__"}


def package_of(module: str) -> str:
    """The layer a module belongs to: its stage package, an own top-level layer, or the ground floor."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (parts[1] in OWN_LAYERS or (PACKAGE / parts[1]).is_dir())):
        return parts[1]  # a stage's own module, its package's __init__, or an own top-level layer
    return "ground floor"


def all_modules() -> set[str]:
    return {m for path in PACKAGE.rglob("*.py") if (m := module_of(str(path)))}


def trace(argv: list[str]) -> tuple[set[str], collections.Counter]:
    """Run the command line in process under a profiler; the modules entered and the crossings."""
    for name in sorted(all_modules() - {"lwsgen.__main__"}):  # __main__ would run the command line
        importlib.import_module(name)  # imported before tracing: an import is not the render
    from lwsgen import cli

    entered: set[str] = set()
    crossings: collections.Counter = collections.Counter()
    modules: dict[str, str | None] = {}

    def module(code) -> str | None:
        name = code.co_filename
        if name not in modules:
            modules[name] = module_of(name)
        return modules[name]

    def profiler(frame, event, _arg):
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        callee = module(frame.f_code)
        if callee is None:
            return
        entered.add(callee)
        caller_frame = frame.f_back
        while caller_frame is not None and module(caller_frame.f_code) is None:
            caller_frame = caller_frame.f_back  # through a library (Jinja calling a filter, ...)
        if caller_frame is None:
            return
        caller = module(caller_frame.f_code)
        if package_of(caller) != package_of(callee):
            crossings[(package_of(caller), package_of(callee))] += 1

    sys.setprofile(profiler)
    try:
        status = cli.main(argv)
    finally:
        sys.setprofile(None)
    if status != 0:
        raise SystemExit(f"the traced render exited {status}")
    return entered, crossings


def main(args: list[str]) -> int:
    listing = "--list" in args
    paths = [a for a in args if a != "--list"]
    profile = Path(paths[0]) if paths else DEFAULT_PROFILE
    with tempfile.TemporaryDirectory() as out:
        import os

        os.environ["LWSGEN_NO_RENDER_CACHE"] = "1"  # the render itself, not a kept one
        entered, crossings = trace(["render", str(profile), "-o", out])
    total = all_modules()
    print(f"profile: {profile.name}")
    print(f"modules entered: {len(entered)} of {len(total)}")
    print(f"crossings between packages: {sum(crossings.values())}")
    between_stages = sum(n for (a, b), n in crossings.items() if "ground floor" not in (a, b))
    print(f"of which between stages (not into the ground floor): {between_stages}")
    if listing:
        for name in sorted(entered):
            print(f"  {name}")
        for (caller, callee), count in crossings.most_common(40):
            print(f"  {caller} -> {callee}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
