"""Many profiles through the pipeline, on every core when there are enough to pay for it.

Profiles are independent, so a monorepo's batch is spread over worker processes forked after the
first profile has rendered in the parent (templates compiled, validators built: workers inherit
them instead of rebuilding them). Results come back in input order, so output and messages are the
same bytes whatever the number of jobs. Nothing is written here: the caller writes once every
profile has passed (all or nothing).
"""

import os
import signal
import sys
from pathlib import Path

from lwsgen.load.given import NOTHING, Given
from lwsgen.pipeline import Rendered, render_profile
from lwsgen.problems import Problem, ProblemsError
from lwsgen.records import Record

# Below this many profiles, starting workers costs more than it saves (measured: ~15 ms to fork
# two workers, ~5 ms per profile).
PARALLEL_FROM = 16


class Outcome(Record):
    """One profile's result: what it renders to, or what is wrong with it."""

    result: Rendered | None
    problems: tuple[Problem, ...] = ()


def _runnable() -> int:
    """Runnable tasks on the machine at this instant (/proc/stat procs_running), this one included."""
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"procs_running "):
                return int(line.split()[1])
    return 1


def busy_cpus() -> int:
    """CPUs that other work keeps busy now: the runnable tasks besides this one, the median of three
    looks. Not the load average: it lags a minute, and counts the batch this process just ran."""
    try:
        looks = sorted(_runnable() for _ in range(3))
    except (OSError, ValueError):
        return 0  # no /proc: assume the CPUs are free, as before
    return max(looks[1] - 1, 0)


# Each worker needs this many profiles to repay its start (measured: ~15 ms to fork two workers,
# ~4 ms per profile).
PER_WORKER = 8


def auto_jobs(profiles: int) -> int:
    """Worker processes for -j's default: one per CPU that is really free, and only when each gets a
    share of the batch worth its start; otherwise 1 (render here), never slower than -j 1."""
    free = int(usable_cpus() - busy_cpus())
    return max(1, min(free, profiles // PER_WORKER))


def usable_cpus() -> int:
    """CPUs this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _render_one(job: tuple[Path, str, str, Given]) -> Outcome:
    path, out_root, display, given = job
    try:
        return Outcome(render_profile(path, out_root, display, given))
    except ProblemsError as err:
        return Outcome(None, tuple(err.problems))


def _fork_context():
    """multiprocessing's fork context, or None. fork keeps what the parent has built; elsewhere
    (macOS, Windows) workers would start from nothing and rebuild every cache, so those platforms
    render in one process. Imported here: a one-profile render should not pay for multiprocessing."""
    if not sys.platform.startswith("linux"):
        return None
    import multiprocessing

    return multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None


def _results(pending) -> list[Outcome]:
    """The pool's results in order, waiting at most a fifth of a second at a time: SIGINT may reach
    one of the pool's threads, and the main thread runs the handler only once its wait ends, which
    an unbounded wait would put off until every result came in."""
    while not pending.ready():
        pending.wait(0.2)
    return pending.get()


def render_all(profiles: list[tuple[Path, str]], out_root: str, jobs: int, given: Given = NOTHING) -> list[Outcome]:
    """Outcomes in the order of `profiles`; `jobs` worker processes at most."""
    from lwsgen.load.inherit import reuse

    with reuse():
        return _render_all(profiles, out_root, jobs, given)


def _render_all(profiles: list[tuple[Path, str]], out_root: str, jobs: int, given: Given) -> list[Outcome]:
    work = [(path, out_root, display, given) for path, display in profiles]
    context = _fork_context() if jobs > 1 and len(work) >= PARALLEL_FROM else None
    if context is None:
        return [_render_one(job) for job in work]
    first = _render_one(work[0])
    workers = min(jobs, len(work) - 1)
    chunk = max(1, (len(work) - 1) // (workers * 4))
    pool = None
    try:
        pool = context.Pool(workers, initializer=_end_with, initargs=(os.getpid(),))
        outcomes = [first, *_results(pool.map_async(_render_one, work[1:], chunksize=chunk))]
    except BaseException:
        _abandon(pool, context)
        raise
    # Every outcome is in: the idle workers take their stop sentinels and end.
    pool.close()
    pool.join()
    return outcomes


def _end_with(parent: int) -> None:
    """A worker's first act: end when lwsgen ends, however it ends (PR_SET_PDEATHSIG, Linux: the
    only platform that renders in workers). A worker left behind would block for good on the task
    queue and hold lwsgen's stderr open, so whoever waits for lwsgen's output would wait forever."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # lwsgen ended before the call took effect
        os._exit(1)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _abandon(pool, context) -> None:
    """Interrupted (SIGINT): kill the workers and leave at once. Not Pool.terminate(): it takes the
    task queue's read lock, which an idle worker holds while it waits for a task, and can wait for
    it forever. Nor the pool's finalizer, which runs terminate() once the pool is collected (when
    the interrupt is caught): a killed worker may hold that lock for good (seen: a batch that hung
    after SIGINT with its two killed workers unreaped)."""
    handler = getattr(pool, "_worker_handler", None)  # it replaces a worker that ended, killed ones too
    if handler is not None:
        handler._state = "TERMINATE"  # multiprocessing.pool.TERMINATE: stop replacing them
    children = context.active_children()
    for child in children:
        child.kill()
    for child in children:
        child.join()
    finalizer = getattr(pool, "_terminate", None)  # multiprocessing.pool.Pool's, CPython 3.8-3.14
    if finalizer is not None:
        finalizer.cancel()
