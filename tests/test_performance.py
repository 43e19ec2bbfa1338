"""Guards against a 3x slowdown, in-process and quick; `make bench` measures the real figures."""

import gc
import glob
import os
import resource
import subprocess
import sys
import time

import pytest

from conftest import PROFILES
from lwsgen.pipeline import render_profile

EXAMPLES = sorted(PROFILES.glob("*.yaml"))
# Measured on this project's machine class (2 cores) when the guard was written.
# Steady state, whole pipeline without writing, over the examples, as a multiple of _machine_speed's
# time measured beside it: machines of the class differ twofold in speed (10 ms and 20 ms per
# profile were both seen), so the guard compares against the machine it runs on.
RENDER_PER_PROFILE_IN_REFERENCE_RUNS = 1.9
# A new process's own cost, in CPU time (a busy machine delays a process but hardly adds to the CPU it
# uses), as a multiple of a calibration run beside it, interleaved, so a slower or busier machine moves
# both: `python -m lwsgen --help` over a bare `python -c pass`, and a cold `lwsgen render` of one
# profile over importing yaml, jinja2 and jsonschema_rs (the floor lwsgen cannot go below; the rest is
# imports, validators, templates, parse-back, write). Measured at 7720065 on the 2-core machine class,
# quiet (help 0.35-0.50, render 0.49-0.62) and with a CI run beside it (0.31-0.41, 0.61-0.72): the
# medians. CPU time does not see a wait (a sleep, an fsync per file, a network call).
HELP_OWN_PER_BARE_PYTHON = 0.38
RENDER_OWN_PER_FLOOR = 0.6

# New processes write and read bytecode, as an installed package has it (pip compiles it), whatever
# the caller's environment says.
COMPILED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _machine_speed() -> None:
    """A fixed piece of pure-Python work (dict updates, a sort), the kind rendering does."""
    counts: dict[int, int] = {}
    for i in range(60000):
        counts[i % 997] = counts.get(i % 997, 0) + i * 3
    sorted(counts.items())


def _ms(work) -> float:
    """CPU milliseconds of this process doing `work`: waiting for a busy CPU does not count."""
    start = time.process_time()
    work()
    return (time.process_time() - start) * 1e3


def _child_ms(command: list[str]) -> float:
    """CPU milliseconds (user and system) of a new process running `command` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, capture_output=True, env=COMPILED)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


def _own_cost(commands: dict[str, list[str]], rounds: int) -> dict[str, float]:
    """Each command's fastest CPU time over interleaved rounds, so machine noise hits them all alike."""
    fastest: dict[str, float] = {}
    for _ in range(rounds):
        for name, command in commands.items():
            fastest[name] = min(fastest.get(name, float("inf")), _child_ms(command))
    return fastest


@pytest.mark.quiet
def test_rendering_a_profile_stays_within_3x_of_its_measured_cost():
    for path in EXAMPLES:  # warm: schemas compiled, templates loaded
        render_profile(path)
    rounds, reference = [], []
    for _ in range(5):  # interleaved, so machine noise hits both; the minimum is the steadiest figure
        reference.append(_ms(_machine_speed))
        rounds.append(_ms(lambda: [render_profile(path) for path in EXAMPLES]) / len(EXAMPLES))
    ratio = min(rounds) / min(reference)
    assert ratio < 3 * RENDER_PER_PROFILE_IN_REFERENCE_RUNS, (
        f"{min(rounds):.1f} ms per profile, {ratio:.1f} times the {min(reference):.1f} ms reference work"
    )


@pytest.mark.quiet
def test_a_cold_render_stays_within_3x_of_its_measured_cost(tmp_path):
    render = [sys.executable, "-m", "lwsgen", "render", str(EXAMPLES[0]), "-o", str(tmp_path)]
    floor = [sys.executable, "-c", "import yaml, jinja2, jsonschema_rs"]
    _child_ms(render)  # fills the template and schema caches, as any second run finds them
    fastest = _own_cost({"render": render, "floor": floor}, rounds=7)
    ratio = (fastest["render"] - fastest["floor"]) / fastest["floor"]
    assert ratio < 3 * RENDER_OWN_PER_FLOOR, (
        f"{fastest['render'] - fastest['floor']:.0f} ms CPU over the {fastest['floor']:.0f} ms its libraries "
        f"take to import ({ratio:.2f} times)"
    )


@pytest.mark.quiet
def test_help_stays_within_3x_of_its_measured_cost():
    help_ = [sys.executable, "-m", "lwsgen", "--help"]
    bare = [sys.executable, "-c", "pass"]
    fastest = _own_cost({"help": help_, "bare": bare}, rounds=5)
    ratio = (fastest["help"] - fastest["bare"]) / fastest["bare"]
    assert ratio < 3 * HELP_OWN_PER_BARE_PYTHON, (
        f"{fastest['help'] - fastest['bare']:.0f} ms CPU over a bare Python's {fastest['bare']:.0f} ({ratio:.2f} times)"
    )


def _compiled(cached: str) -> bool:
    """Python's compiled file, or pytest's for a module whose asserts it rewrites (a plugin's:
    <name>.cpython-311-pytest-<version>.pyc beside it)."""
    return os.path.exists(cached) or bool(glob.glob(glob.escape(cached[: -len(".pyc")]) + "-pytest-*.pyc"))


@pytest.mark.skipif("MAKELEVEL" not in os.environ, reason="make's targets keep compiled modules; this run is not one")
def test_under_make_every_module_a_test_process_imported_is_kept_compiled():
    """With PYTHONDONTWRITEBYTECODE from the machine's image and uv installing without compiling, every
    process of the suites compiled what it imported afresh: ~0.3 s for lwsgen alone, ~20 s for torch
    in each vLLM or group-simulator process (the autoscaling test's engines took 98 s to start, 50 s
    with torch's compiled modules kept). The Makefile unexports it, so an import writes them (what
    this holds it to; the heavy extras are installed compiled besides)."""
    assert not sys.dont_write_bytecode
    site = sys.prefix + os.sep
    uncompiled = sorted(
        name
        for name, module in list(sys.modules.items())
        if (cached := getattr(module, "__cached__", None))
        and (module.__file__ or "").startswith((site, str(PROFILES.parent / "lwsgen")))
        and not _compiled(cached)
    )
    assert uncompiled == [], f"{len(uncompiled)} imported modules have no compiled file, e.g. {uncompiled[:5]}"


def test_schemas_and_validators_are_compiled_once_per_process():
    from lwsgen.check.schema import _validator
    from lwsgen.output import validate

    render_profile(EXAMPLES[0])
    before = (
        validate.validator.cache_info().misses,
        validate.strict_texts.cache_info().misses,
        _validator.cache_info().misses,
    )
    render_profile(EXAMPLES[0])
    after = (
        validate.validator.cache_info().misses,
        validate.strict_texts.cache_info().misses,
        _validator.cache_info().misses,
    )
    assert after == before


@pytest.mark.quiet
def test_loading_a_crd_for_validate_costs_about_what_libyaml_takes_to_read_it():
    """`lwsgen validate --crd` reads CRDs of up to ~2 MB (KServe's); through PyYAML's pure-Python
    loader ../shared/crds took ~12 s, 4-11 times libyaml's parse of the same text."""
    import yaml

    from conftest import SHARED
    from lwsgen.output import crd

    path = SHARED / "crds" / "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"
    text = path.read_text()
    fastest = {}
    gc.disable()  # the collector's passes over this test process's heap are not the loader's cost (seen: 3.5x)
    try:
        for _ in range(3):  # interleaved, so machine noise hits both; the minimum is the steadiest figure
            for name, work in (
                ("lwsgen", lambda: crd._load_file.__wrapped__(path, 0)),
                ("libyaml", lambda: list(yaml.load_all(text, Loader=yaml.CSafeLoader))),
            ):
                fastest[name] = min(fastest.get(name, float("inf")), _ms(work))
    finally:
        gc.enable()
    ratio = fastest["lwsgen"] / fastest["libyaml"]
    assert ratio < 2.5, f"{fastest['lwsgen']:.0f} ms to load the CRD, {ratio:.1f} times libyaml's parse"
