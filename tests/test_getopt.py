"""lwsgen's reading of tritonserver's command line (lwsgen/check/getopt.py, pure Python) held to
glibc's own getopt_long (called through ctypes by the group simulator's tritonserver stand-in,
tests/groupsim/standins/triton_getopt.py): on the same argvs, the same verdict, and never looser."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from lwsgen.check import getopt

STANDIN = Path(__file__).resolve().parent / "groupsim" / "standins" / "triton_getopt.py"


def _glibc():
    spec = importlib.util.spec_from_file_location("triton_getopt", STANDIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _argvs(container: str, count: int = 400) -> list[list[str]]:
    """Options whole, cut short, run on, given '=' or a next word, bad values, words, '--'."""
    options = getopt.table_for(container)[0]["options"]
    names = sorted(options)
    rng = random.Random(f"getopt-{container}")
    values = ["1", "true", "OFF", "x", "-3", " 7", "12abc", "2147483648", ".5", "", "a:b"]
    argvs = []
    for _ in range(count):
        argv = []
        for _ in range(rng.randint(1, 4)):
            name = rng.choice(names)
            form = rng.choice(["whole", "whole", "cut", "longer", "equals", "next", "word", "dash", "short"])
            if form == "cut":
                name = name[: rng.randint(1, len(name))]
            elif form == "longer":
                name += rng.choice(["s", "-x"])
            if form == "word":
                argv.append(rng.choice(["extra", "-", "--"]))
            elif form == "short":
                argv.append("-" + rng.choice("xhO"))
            elif form == "equals":
                argv.append(f"--{name}={rng.choice(values)}")
            elif form == "next":
                argv += [f"--{name}", rng.choice(values)]
            else:
                argv.append(f"--{name}")
        argvs.append(argv)
    return argvs


@pytest.mark.parametrize("container", ["24.07", "26.07"])
def test_the_mirror_gives_glibcs_verdict(container):
    glibc = _glibc()
    argvs = _argvs(container)
    differ = [
        (argv, glibc.problems(argv, container), getopt.problems(argv, container))
        for argv in argvs
        if bool(glibc.problems(argv, container)) != bool(getopt.problems(argv, container))
    ]
    assert differ == []
    verdicts = [bool(getopt.problems(argv, container)) for argv in argvs]
    assert any(verdicts) and not all(verdicts)  # both kinds of argv were generated


def test_the_rendered_rank_arguments_pass():
    common = ["--disable-auto-complete-config", "--allow-cpu-metrics=false", "--model-load-thread-count=2",
              "--model-repository=/models/repo", "--id=rank0",
              "--backend-config=python,shm-region-prefix-name=p0_"]  # fmt: skip
    leader = ["--http-port=8000", "--grpc-port=8001", "--metrics-port=8002", "--allow-metrics=true",
              "--metrics-interval-ms=1000"]  # fmt: skip
    worker = ["--allow-http=false", "--allow-grpc=false", "--allow-metrics=false", "--model-control-mode=explicit",
              "--load-model=tensorrt_llm", "--log-info=false", "--log-warning=false"]  # fmt: skip
    for container in ("24.07", "26.07"):
        assert getopt.problems([*common, *leader], container) == []
        assert getopt.problems([*common, *worker], container) == []


def test_what_tritonserver_refuses_is_said_at_its_word():
    assert getopt.problems(["--model-repository=/m", "--no-such"], "26.07") == [
        (1, "tritonserver: unrecognized option '--no-such'")
    ]
    [(index, message)] = getopt.problems(["--allow", "--model-repository=/m"], "26.07")
    assert index == 0 and "is ambiguous" in message
    assert getopt.problems(["--allow-client-shm=true"], "24.07")  # added after 24.07 (Triton 2.48.0)
    assert getopt.problems(["--allow-client-shm=true"], "26.07") == []
    assert getopt.table_for("25.03") == (getopt.table_for("24.07")[0], False)


def _triton(image: str, extra: list[str]) -> dict:
    return {
        "name": "t",
        "runtime": "triton-trtllm",
        "image": image,
        "model": {"path": "/var/run/models/repo", "extraArgs": extra},
        "parallelism": {"tensor": 8, "pipeline": 2},
        "node": {"gpus": 8},
        "storage": {"claimName": "models"},
        "service": {"type": "ClusterIP"},
    }


def test_render_refuses_a_triton_extra_arg_tritonserver_refuses(said):
    image = "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"
    errors, _ = said(_triton(image, ["--log-verbose=1", "--exit-timeout-sec=30", "--allow-http=maybe"]))
    assert errors == ["model.extraArgs[2]: Bad option --allow-http: invalid value for bool option: maybe"]
    errors, _ = said(_triton(image, ["--log-verbose=1", "--strict-readiness"]))
    assert errors == ["model.extraArgs[1]: tritonserver: option '--strict-readiness' requires an argument"]
    assert said(_triton(image, ["--log-verbose=1", "--exit-timeout-secs=30"])) == ([], [])
    # a release between tables: the nearest one's verdict, as a warning
    errors, warnings = said(_triton(image.replace("26.07", "25.06"), ["--no-such"]))
    assert errors == [] and warnings == ["model.extraArgs[0]: tritonserver: unrecognized option '--no-such'"]
