"""lwsgen's performance figures and targets (make bench).

Measured in one run, on the installed `lwsgen` console script (not an editable install), after one
warm-up run (which fills Python's bytecode and lwsgen's template and schema caches, as any second
run on a machine finds them). Timings are medians of interleaved runs, so machine noise hits lwsgen
and the kubectl comparison alike:

- cold render of one profile (a new process, full validation) vs `kubectl kustomize` of its output
  directory, CPU time of interleaved runs: at most 1.5x;
- marginal cost of a profile in a generated batch of 300: (T(300) - T(1)) / 299, at most 2 ms; the
  CPU time per profile is printed beside it;
- peak memory rendering 1, 500 and 1000 profiles: growth linear and under 200 MB for 1000;
- `render --check` of 1000 unchanged profiles whose renders are kept (lwsgen/render_cache.py): at
  most 15% of the same check rendering afresh;
- `lwsgen --help`: under 100 ms.
Beside the two targets lwsgen misses it prints the floors under them, each measured on its own:
creating the example's files on the filesystem the batch writes to, libyaml composing the YAML a
profile renders (the parse-back every render does), and a Python process importing the three
libraries the design renders with (PyYAML, Jinja2, jsonschema-rs) against kustomize's CPU.
Every other render is fresh (LWSGEN_NO_RENDER_CACHE=1). With a helm binary (make bench builds one),
the cold render's CPU is also set beside `helm template` of a chart holding the same objects.
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FRESH = {**os.environ, "LWSGEN_NO_RENDER_CACHE": "1"}  # every render done, not found kept
KEPT = {k: v for k, v in os.environ.items() if k != "LWSGEN_NO_RENDER_CACHE"}


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Wall and CPU time (user + system, child processes included) of one run, in ms, and its
    peak resident memory in MB. Renders are fresh unless env says otherwise."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or FRESH)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1e3
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed")
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3, usage.ru_maxrss / 1024


def timed(cmd: list[str]) -> float:
    return run(cmd)[0]


def interleaved(commands: dict[str, list[str]], runs: int, cpu: bool = False) -> dict[str, float]:
    """Median wall time per command (CPU time instead with cpu=True), runs interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            samples[name].append(run(cmd)[1 if cpu else 0])
    return {name: statistics.median(values) for name, values in samples.items()}


def generate(profiles: Path, count: int, target: Path) -> None:
    """count profiles: the examples in turn, each renamed <name>-<i>."""
    examples = sorted(profiles.glob("*.yaml"))
    target.mkdir(parents=True)
    for i in range(count):
        source = examples[i % len(examples)]
        text = re.sub(r"^name: (\S+)$", rf"name: \g<1>-{i}", source.read_text(), count=1, flags=re.M)
        (target / f"p{i:04d}.yaml").write_text(text)


def file_creates(example_out: Path, scratch: Path, profiles: int = 300) -> float:
    """Wall ms a profile to create the example's output files afresh in `scratch` (a directory a
    profile, each file created exclusively and written whole, as lwsgen writes), nothing else."""
    sizes = [path.stat().st_size for path in sorted(example_out.iterdir()) if path.is_file()]
    start = time.perf_counter()
    for index in range(profiles):
        directory = scratch / f"p{index}"
        directory.mkdir(parents=True)
        for number, size in enumerate(sizes):
            fd = os.open(directory / f"f{number}.yaml", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            os.write(fd, b"x" * size)
            os.close(fd)
    elapsed = (time.perf_counter() - start) * 1e3 / profiles
    shutil.rmtree(scratch)
    return elapsed


def compose_floor(example_out: Path, runs: int = 31) -> float:
    """CPU ms for libyaml (PyYAML's C loader) to compose the example's YAML once, the least any
    parse-back with the reader lwsgen's output must agree with costs; the median of `runs`."""
    import yaml

    texts = [path.read_text() for path in sorted(example_out.glob("*.yaml"))]
    samples = []
    for _ in range(runs):
        start = time.process_time()
        for text in texts:
            for _node in yaml.compose_all(text, Loader=yaml.CSafeLoader):
                pass
        samples.append((time.process_time() - start) * 1e3)
    return statistics.median(samples)


def helm_chart(out: Path, chart: Path) -> None:
    """A chart whose templates are the files the kustomization lists, so `helm template` prints the
    same objects (Go template braces in scripts and alert rules escaped)."""
    import yaml

    listed = yaml.safe_load((out / "kustomization.yaml").read_text())["resources"]
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bench\nversion: 0.1.0\n")
    for name in listed:
        text = (out / name).read_text().replace("{{", "\0").replace("}}", '{{ "}}" }}').replace("\0", '{{ "{{" }}')
        (chart / "templates" / name).write_text(text)


def main(argv: list[str]) -> int:
    lwsgen, kubectl = argv[0], argv[1]
    helm = argv[2] if len(argv) > 2 else None
    repo = Path(__file__).resolve().parents[1]
    example = repo / "profiles" / "triton-llama3-405b.yaml"
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        out = work / "out"
        timed([lwsgen, "render", str(example), "-o", str(out)])  # warm-up
        one = interleaved(
            {
                "render": [lwsgen, "render", str(example), "-o", str(out)],
                "kustomize": [kubectl, "kustomize", str(out / "triton-llama3-405b")],
                "help": [lwsgen, "--help"],
            },
            runs=21,
        )
        for count in (1, 300):
            generate(repo / "profiles", count, work / f"batch{count}")
        timed([lwsgen, "render", str(work / "batch300"), "-o", str(work / "warm")])
        batch = interleaved(
            {n: [lwsgen, "render", str(work / f"batch{n}"), "-o", str(work / f"o{n}")] for n in (1, 300)}, runs=5
        )
        cpu = interleaved(
            {n: [lwsgen, "render", str(work / f"batch{n}"), "-o", str(work / f"c{n}")] for n in (1, 300)},
            runs=3,
            cpu=True,
        )
        peers = {
            "render": [lwsgen, "render", str(example), "-o", str(out)],
            "kustomize": [kubectl, "kustomize", str(out / "triton-llama3-405b")],
        }
        if helm:
            helm_chart(out / "triton-llama3-405b", work / "chart")
            peers["helm"] = [helm, "template", "bench", str(work / "chart")]
        python = str(Path(lwsgen).parent / "python")
        # each ends as lwsgen does, with os._exit: no interpreter teardown (~15-20 ms for the libraries)
        peers["imports"] = [python, "-c", "import os, yaml, jinja2, jsonschema_rs; os._exit(0)"]
        peers["python"] = [python, "-c", "import os; os._exit(0)"]
        cold_cpu = interleaved(peers, runs=15, cpu=True)
        creates = file_creates(out / "triton-llama3-405b", work / "creates")
        compose = compose_floor(out / "triton-llama3-405b")
        generate(repo / "profiles", 1000, work / "batch1000")
        run([lwsgen, "render", str(work / "batch1000"), "-o", str(work / "o1000")], KEPT)  # records kept
        check = {
            "fresh": [lwsgen, "render", str(work / "batch1000"), "-o", str(work / "o1000"), "--check"],
            "kept": [lwsgen, "render", str(work / "batch1000"), "-o", str(work / "o1000"), "--check"],
        }
        unchanged = {
            name: statistics.median(run(cmd, KEPT if name == "kept" else FRESH)[1] for _ in range(3))
            for name, cmd in check.items()
        }
        memory = {}
        for count in (500, 1000):
            generate(repo / "profiles", count, work / f"mem{count}")
        for count, source in ((1, work / "batch1"), (500, work / "mem500"), (1000, work / "mem1000")):
            shutil.rmtree(work / "mo", ignore_errors=True)
            memory[count] = run([lwsgen, "render", str(source), "-o", str(work / "mo")])[2]
    marginal = (batch[300] - batch[1]) / 299
    ratio = one["render"] / one["kustomize"]
    cpu_ratio = cold_cpu["render"] / cold_cpu["kustomize"]
    growth = memory[1000] - memory[1]
    per_profile = [(memory[n] - memory[1]) / (n - 1) for n in (500, 1000)]
    linear = abs(per_profile[1] - per_profile[0]) <= 0.35 * max(per_profile)
    rows = [
        ("cold render, one profile (median of 21)", f"{one['render']:.1f} ms", ""),
        ("kubectl kustomize of its output", f"{one['kustomize']:.1f} ms", ""),
        ("render / kustomize, wall", f"{ratio:.2f}x", ""),
        ("render / kustomize, CPU (median of 15)", f"{cpu_ratio:.2f}x", cpu_ratio <= 1.5),
        *(
            [("render / helm template of the same objects, CPU", f"{cold_cpu['render'] / cold_cpu['helm']:.2f}x", "")]
            if helm
            else []
        ),
        (
            "render --check, 1000 unchanged: kept / fresh (CPU)",
            f"{unchanged['kept']:.0f} / {unchanged['fresh']:.0f} ms ({unchanged['kept'] / unchanged['fresh']:.0%})",
            unchanged["kept"] <= 0.15 * unchanged["fresh"],
        ),
        ("render 1 / 300 profiles (median of 5)", f"{batch[1]:.0f} / {batch[300]:.0f} ms", ""),
        ("marginal cost per profile, wall", f"{marginal:.2f} ms", marginal <= 2.0),
        ("  CPU time per profile", f"{(cpu[300] - cpu[1]) / 299:.2f} ms", ""),
        ("peak RSS, 1 / 500 / 1000 profiles", f"{memory[1]:.0f} / {memory[500]:.0f} / {memory[1000]:.0f} MB", ""),
        (
            "memory growth for 1000 profiles",
            f"{growth:.0f} MB ({per_profile[0] * 1000:.0f} / {per_profile[1] * 1000:.0f} kB per profile)",
            growth < 200 and linear,
        ),
        ("lwsgen --help", f"{one['help']:.1f} ms", one["help"] < 100),
        ("floors under the targets lwsgen misses:", "", ""),
        ("  creating the example's files afresh, a profile", f"{creates:.2f} ms wall", ""),
        ("  libyaml composing the example's YAML, a profile", f"{compose:.2f} ms CPU", ""),
        ("  python starting and exiting / kustomize, CPU", f"{cold_cpu['python'] / cold_cpu['kustomize']:.2f}x", ""),
        (
            "  python importing yaml, jinja2, jsonschema_rs / kustomize, CPU",
            f"{cold_cpu['imports'] / cold_cpu['kustomize']:.2f}x",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value, target in rows:
        verdict = "" if target == "" else ("  target met" if target else "  TARGET MISSED")
        print(f"{label:<{width}}  {value}{verdict}")
    missed = [r for r in rows if r[2] is False]
    print(f"{sum(1 for r in rows if r[2] is True)} of {sum(1 for r in rows if r[2] != '')} targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
