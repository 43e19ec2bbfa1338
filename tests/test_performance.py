"""Guards against a 3x slowdown, in-process and quick; `make bench` measures the real figures."""

import gc
import os
import statistics
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
HELP_MS = 40.0  # `python -m lwsgen --help`, a new process
# A cold `lwsgen render` of one profile, new process, minus importing yaml, jinja2 and jsonschema_rs
# (the floor lwsgen cannot go below): imports, validators, templates, parse-back, write.
OWN_COLD_MS = 35.0

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
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1e3


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
    subprocess.run(
        render, check=True, capture_output=True, env=COMPILED
    )  # fills the template and schema caches, as any second run finds them
    fastest = {}
    for _ in range(7):  # interleaved, so machine noise hits both; the minimum is the steadiest figure
        for name, command in (("render", render), ("floor", floor)):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=COMPILED)
            fastest[name] = min(fastest.get(name, float("inf")), (time.perf_counter() - start) * 1e3)
    own = fastest["render"] - fastest["floor"]
    assert own < 3 * OWN_COLD_MS, f"{own:.0f} ms over the {fastest['floor']:.0f} ms its libraries take to import"


@pytest.mark.quiet
def test_help_stays_within_3x_of_its_measured_cost():
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lwsgen", "--help"], check=True, capture_output=True, env=COMPILED)
        runs.append((time.perf_counter() - start) * 1e3)
    assert statistics.median(runs) < 3 * HELP_MS, f"{statistics.median(runs):.0f} ms"


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
