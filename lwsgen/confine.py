"""Run a profile's own code (its `templates:`) in a forked child bounded by its own CPU clock and
address space, so 81 bytes of Jinja cannot loop forever or take the machine's memory. The child
sends back its result, or the ProblemsError it raised, pickled; anything it cannot finish within
the bounds is an Exceeded the caller says at the hatch. Where fork is missing, the call runs here."""

from __future__ import annotations

import os
import pickle
import resource
import signal
from collections.abc import Callable
from typing import Any

from lwsgen import bounds
from lwsgen.problems import ProblemsError


class Exceeded(Exception):
    """The code went past a bound; the message says which."""


def _address_space() -> int:
    """This process' virtual size in bytes (the child's starts the same: fork copies it)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _child(write_fd: int, call: Callable[[], Any], cpu_seconds: int, memory: int) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        base = _address_space()
        if base:
            resource.setrlimit(resource.RLIMIT_AS, (base + memory, base + memory))
        try:
            outcome: tuple = ("ok", call())
        except ProblemsError as err:
            outcome = ("problems", err.problems)
        except MemoryError:
            outcome = ("memory", None)
        except RecursionError:
            outcome = ("recursion", None)
        data = pickle.dumps(outcome)
        if len(data) > bounds.MAX_OUTPUT_BYTES:
            data = pickle.dumps(("large", len(data)))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
    except BaseException:  # noqa: BLE001 - the parent reads a missing result as a crash of the child
        pass
    finally:
        os._exit(0)


def run(call: Callable[[], Any], what: str) -> Any:
    """call() in a bounded child; its result. Raises the child's ProblemsError, or Exceeded."""
    if not hasattr(os, "fork"):
        return call()
    cpu, memory = bounds.TEMPLATE_CPU_SECONDS, bounds.TEMPLATE_MEMORY
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(write_fd, call, cpu, memory)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read(bounds.MAX_OUTPUT_BYTES + 4096)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        raise Exceeded(f"{what} took more than {cpu} s of CPU time")
    try:
        kind, value = pickle.loads(data)
    except Exception:  # noqa: BLE001 - no whole result: the child died on the way
        raise Exceeded(f"{what} stopped before it finished (it may have exhausted its memory)") from None
    if kind == "ok":
        return value
    if kind == "problems":
        raise ProblemsError(value)
    messages = {
        "memory": f"{what} needed more than {memory >> 20} MiB of memory",
        "recursion": f"{what} recursed too deep",
        "large": f"{what} wrote more than {bounds.MAX_OUTPUT_BYTES >> 20} MiB",
    }
    raise Exceeded(messages[kind])
