"""Images played by stand-ins: what each image's PATH, ENV and files are in the simulator. Real
programs where they run on a CPU (bash, Ray and Python from the test venv, OpenMPI's mpirun and
orted from Debian's openmpi-bin, torch with gloo); GPU engines are the stand-ins in standins/."""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
# Programs of the test venv an image has (its Python with Ray and torch); not the venv's kubectl.
FROM_VENV = ("python3", "python", "ray", "torchrun")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# program on PATH -> the stand-in file that plays it
PROGRAMS = {
    "llama-server": "llama_server.py",
    "rpc-server": "rpc_server.py",
    "vllm": "vllm_cli.py",
    "aphrodite": "vllm_cli.py",
    "tritonserver": "mpi_rank.py",
    "trtllm-llmapi-launch": "mpi_rank.py",
    "trtllm-serve": "mpi_rank.py",
    "all_reduce_perf": "all_reduce_perf.py",
    "sshd": "sshd.py",
    "ssh": "ssh.py",
    "kubectl": "../kubectl.py",
    "llm-d-routing-sidecar": "routing_sidecar.py",
}
# Programs a test may run for real (make engines builds them), by the name the image's binary has,
# with the stand-ins that then leave PATH: llama.cpp builds since PR #25045 name the RPC server
# ggml-rpc-server, so the launch script must find that name, not the stand-in's rpc-server.
REPLACES = {"llama-server": ("llama-server",), "ggml-rpc-server": ("rpc-server",), "vllm": ("vllm",)}
# Real engines that are Python packages: the stand-ins' modules of the same name leave PYTHONPATH
PYTHON_ENGINES = {"vllm"}
# where the llama.cpp images keep their binaries (the launch scripts add /app to PATH)
LLAMACPP_PREFIX = "/app"


@dataclass
class Image:
    env: dict[str, str]
    files: list[tuple[str, str, int]] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)


def install(where: Path, real: dict[str, str] | None = None) -> Path:
    """The stand-ins, as executables in where/bin and modules in where/python and where/lib; none for
    a program of `real` (name in the image -> the real binary on this machine)."""
    replaced = {standin for program in real or {} for standin in REPLACES[program]}
    shutil.copytree(HERE / "standins", where / "lib", ignore=shutil.ignore_patterns("python", "__pycache__"))
    shutil.copytree(HERE / "standins" / "python", where / "python", ignore=shutil.ignore_patterns("__pycache__"))
    (where / "bin").mkdir()
    (where / "python-bin").mkdir()
    for program in FROM_VENV:
        wrapper = where / "python-bin" / program
        wrapper.write_text(f'#!/bin/sh\nexec {VENV_BIN / program} "$@"\n')
        wrapper.chmod(0o755)
    for program, binary in (real or {}).items():  # on PATH where the image has it
        (where / "bin" / program).symlink_to(binary)
    for program, source in PROGRAMS.items():
        if program in replaced:
            continue
        script = (HERE / "standins" / source).resolve()
        wrapper = where / "bin" / program
        wrapper.write_text(
            f"#!{sys.executable}\nimport runpy, sys\nsys.path.insert(0, {str(where / 'lib')!r})\n"
            f"import standin\nstandin.PROGRAM = {program!r}\nrunpy.run_path({str(script)!r}, run_name='__main__')\n"
        )
        wrapper.chmod(0o755)
    return where


def _symlinks(prefix: str, *programs: str) -> list[tuple[str, str, int]]:
    """OpenMPI under an image's prefix: the same prefix on every pod, as the launch relies on."""
    links = {"mpirun": "/usr/bin/mpirun", "orted": "/usr/bin/orted"}
    return [(f"{prefix}/{p}", f"symlink:{links[p]}", 0o755) for p in programs]


def _program_file(path: str, program: str, standins: Path) -> tuple[str, str, int]:
    return (path, f"symlink:{standins / 'bin' / program}", 0o755)


def _tag_version(reference: str) -> str | None:
    """The engine version an image tag spells (v0.33.0, 0.5.23, 26.07-trtllm-python-py3), or None (a
    commit, latest)."""
    tag = reference.rsplit(":", 1)[-1] if ":" in reference.rsplit("/", 1)[-1] else ""
    match = re.fullmatch(r"v?(\d+(?:\.\d+)+(?:\.post\d+)?)", tag)
    # NGC's tritonserver images: YY.MM-trtllm-python-py3 (the container release)
    match = match or re.match(r"(\d{2}\.\d{2})-", tag)
    return match.group(1) if match else None


def _python_path(standins: Path, real: dict[str, str]) -> list[Path]:
    """The stand-ins' modules, without their engine packages once a real engine runs."""
    return [standins / "lib"] if PYTHON_ENGINES & set(real) else [standins / "python", standins / "lib"]


def image(reference: str, standins: Path, real: dict[str, str] | None = None) -> Image:
    real = real or {}
    repository = reference.rsplit(":", 1)[0].rsplit("@", 1)[0]
    env = {
        "PATH": f"{standins / 'bin'}:{standins / 'python-bin'}:{SYSTEM_PATH}",
        "PYTHONPATH": ":".join(str(p) for p in _python_path(standins, real)),
        "PYTHONDONTWRITEBYTECODE": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "LWSGEN_DIST_BACKEND": "gloo",  # no GPU here: the NCCL test's all-reduce runs over gloo
    }
    version = _tag_version(reference)
    if version:  # which flag table the engine stand-ins hold their argv to
        env["LWSGEN_STANDIN_ENGINE_VERSION"] = version
    files: list[tuple[str, str, int]] = []
    if "llama.cpp" in repository:
        for program, binary in real.items():
            files.append((f"{LLAMACPP_PREFIX}/{program}", f"symlink:{binary}", 0o755))
        for program in ("llama-server", "rpc-server"):
            if not any(program in REPLACES[r] for r in real):
                files.append(_program_file(f"{LLAMACPP_PREFIX}/{program}", program, standins))
    entrypoint: list[str] = []
    if "llm-d-router-disagg-sidecar" in repository:  # the image's entrypoint is the sidecar itself
        entrypoint = [str(standins / "bin" / "llm-d-routing-sidecar")]
    if "tritonserver" in repository or "tensorrt-llm" in repository:
        files += _symlinks("/opt/hpcx/ompi/bin", "mpirun", "orted")
    if "triton_trtllm_multinode" in repository:
        files += _symlinks("/opt/amazon/openmpi/bin", "mpirun", "orted")
        files += [_program_file("/opt/nccl-tests/build/all_reduce_perf", "all_reduce_perf", standins)]
        files += [_program_file("/usr/sbin/sshd", "sshd", standins)]
    return Image(env, files, entrypoint)
