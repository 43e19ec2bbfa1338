"""The engine stand-ins refuse what the engines refuse (docs/development.md lists what each copies):
an argv the engine's own parser rejects or reads as another flag ends the stand-in with exit 2,
argparse's (and click's) usage status, before it records or serves anything."""

from __future__ import annotations

import os
import subprocess

import pytest

from groupsim import images

VLLM_SERVE = ["serve", "/models/m", "--tensor-parallel-size", "8", "--port", "8080"]
SGLANG = ["-m", "sglang.launch_server", "--model-path", "/models/m", "--tp-size", "8"]
TRTLLM = ["/models/m", "--host", "0.0.0.0", "--port", "8000", "--tp_size", "8", "--pp_size", "2"]


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    return images.install(tmp_path_factory.mktemp("standins") / "s")


def _run(standins, program: str, argv: list[str], image: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **images.image(image, standins).env}
    path = standins / ("python-bin" if program == "python3" else "bin") / program
    return subprocess.run([str(path), *argv], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "program, argv, image, said",
    [
        ("vllm", [*VLLM_SERVE, "--no-such-flag", "1"], "vllm/vllm-openai:v0.33.0", "--no-such-flag"),
        ("vllm", [*VLLM_SERVE, "--tensor-parallel", "2"], "vllm/vllm-openai:v0.33.0", "--tensor-parallel"),
        ("aphrodite", [*VLLM_SERVE, "--max-model-length", "9"], "alpindale/aphrodite-openai:c0178f1d5", "length"),
        ("python3", [*SGLANG, "--cuda-graph-max-bs", "64"], "lmsysorg/sglang:v0.5.23", "--cuda-graph-max-bs"),
        ("python3", [*SGLANG, "--tp_size", "8"], "lmsysorg/sglang:v0.5.23", "--tp_size"),
        ("trtllm-serve", [*TRTLLM, "--tp-size", "8"], "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "--tp-size"),
        ("trtllm-serve", [*TRTLLM, "--trust_remote_code=1"], "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "value"),
        ("trtllm-serve", ["--port", "8000"], "nvcr.io/nvidia/tensorrt-llm/release:1.2.1", "MODEL"),
    ],
)
def test_a_standin_exits_2_where_its_engine_refuses_the_argv(standins, program, argv, image, said):
    ran = _run(standins, program, argv, image)
    assert ran.returncode == 2 and said in ran.stderr, (ran.returncode, ran.stderr[-2000:])


TRITON = "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"
REPOSITORY = ["--model-repository=/models/m", "--http-port=8000"]


@pytest.mark.parametrize(
    "argv, image, said",
    [
        ([*REPOSITORY, "--no-such-option=1"], TRITON, "unrecognized option '--no-such-option=1'"),
        ([*REPOSITORY, "--allow"], TRITON, "option '--allow' is ambiguous"),  # getopt_long's prefixes
        ([*REPOSITORY, "--grpc-port"], TRITON, "option '--grpc-port' requires an argument"),
        ([*REPOSITORY, "--allow-http=maybe"], TRITON, 'Bad option: "--allow-http".\ninvalid value for bool option'),
        ([*REPOSITORY, "--metrics-port=x"], TRITON, 'Bad option: "--metrics-port".\nInvalid option value. Got x'),
        # declared a float, read with ParseOption<int>
        ([*REPOSITORY, "--metrics-interval-ms=.5"], TRITON, 'Bad option: "--metrics-interval-ms".\nInvalid'),
        ([*REPOSITORY, "--he"], TRITON, "--help"),  # a prefix of --help: the usage, exit 1
        ([*REPOSITORY, "extra"], TRITON, "Unexpected argument: extra"),
        # 24.07 (Triton 2.48.0) has no --allow-client-shm: it came later
        ([*REPOSITORY, "--allow-client-shm=true"], TRITON.replace("26.07", "24.07"), "unrecognized option"),
    ],
)
def test_the_tritonserver_standin_exits_1_where_tritonserver_refuses_the_argv(standins, argv, image, said):
    """glibc's getopt_long over the options of src/command_line_parser.cc at the image's release, then
    the value parsers, and src/main.cc's exit 1 with the usage (tests/groupsim/standins/triton_getopt.py)."""
    ran = _run(standins, "tritonserver", argv, image)
    assert ran.returncode == 1 and said in ran.stderr, (ran.returncode, ran.stderr[-2000:])
    assert "Usage: tritonserver [options]" in ran.stderr


def test_the_tritonserver_standin_takes_what_tritonserver_takes():
    """Unique prefixes of long options (getopt_long), booleans in any case, both value forms."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("triton_getopt", images.HERE / "standins" / "triton_getopt.py")
    triton_getopt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(triton_getopt)
    argv = ["--model-repo=/m", "--allow-http", "FALSE", "--log-info=off", "--metrics-interval-ms=1000", "--id=rank0"]
    assert triton_getopt.problems(argv, "26.07") == []
    # ParseIntBoolOption takes true/false or an int; ParseOption<int64_t> beyond int32
    assert triton_getopt.problems(["--log-verbose=true", "--pinned-memory-pool-byte-size=4294967296"], "26.07") == []
    assert triton_getopt.table("25.01")["release"] == "2.48.0"  # the newest table not newer than it
    assert triton_getopt.table("26.09")["release"] == "2.71.0"
