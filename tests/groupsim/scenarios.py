"""Scenarios a group of pods must survive, run on the simulator. Each returns an Outcome: whether the
group did what a user needs (formed, or failed as a group within the bound with a sentence) and
what was seen, for the test's message and the closing note's table."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from groupsim import sim

POLL = 1  # LWSGEN_POLL_SECONDS in every scenario
BOUND = 40  # LWSGEN_RENDEZVOUS_TIMEOUT in every scenario: short, through the scripts' own variable
LATE = 10  # seconds a late pod or a late DNS name comes after the others
FORM = 60  # seconds a group may take to form once every pod is there (Ray starts in ~5 s per node)
# Seconds after a member is lost by which some container must have exited non-zero: Ray needs its
# node-death detection first (RAY_DETECTOR below), then the leader's 3 failed polls.
GROUP_FAILS = 40
STAYS = 15  # seconds a formed group must go on serving: over 3 watch polls that each time out (3 s)
STOP = 5  # LWSGEN_STOP_SECONDS: how long a leader lets an engine stuck on a lost member stop

# The wall-clock margins above (never the scripts' own bounds, which they keep by their own clocks)
# are for an idle 2-core machine; calibrate() scales them by how much slower this machine starts,
# now, what every pod starts: a Python with torch and Ray (REFERENCE_START seconds on an idle one).
REFERENCE_START = 4.0
SLACK = 1.0


def calibrate() -> float:
    global SLACK
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch.distributed, ray"], check=True, capture_output=True)
    SLACK = max(1.0, (time.monotonic() - start) / REFERENCE_START)
    return SLACK


def wall(seconds: float) -> float:
    """A wall-clock margin on this machine, now."""
    return seconds * SLACK


TIMING_ONLY = "timing-only miss: "  # the margin ran out while nothing had failed

SERVE = {  # the program each runtime's leader ends in, as its stand-in records it
    "vllm": "vllm",
    "aphrodite": "aphrodite",
    "sglang": "sglang",
    "llamacpp": "llama-server",
    "triton-trtllm": "tritonserver",
    "trtllm-serve": "trtllm-serve",
}


@dataclass
class Outcome:
    passed: bool
    detail: str
    seconds: float = 0.0
    logs: dict[str, str] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)  # what the stand-ins recorded (argv, env, ranks)
    exit_code: int | None = None

    def __str__(self) -> str:
        logs = "\n".join(f"--- {name}\n{text[-2500:]}" for name, text in self.logs.items())
        return f"{self.detail} ({self.seconds:.1f} s)\n{logs}"


def _logs(group: list[sim.Pod]) -> dict[str, str]:
    return {f"{p.name}/{c.name} exit={c.exit_code}": c.log for p in group for c in p.init_containers + p.containers}


# Ray's own node-death detector, shortened as the rendezvous is (defaults: 5 failed health checks
# 3 s apart, each allowed 10 s, src/ray/common/ray_config_def.h); read from RAY_<name> by every Ray process.
RAY_DETECTOR = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
    "RAY_health_check_timeout_ms": "1000",  # a node lost without a word answers no check: each times out
    # how long a node's Ray processes retry a lost head before they end (default 60 s, the same file), which
    # `ray start --block` on a worker then ends with (ray-worker.sh): the head_node_lost scenario
    "RAY_gcs_rpc_server_reconnect_timeout_s": "10",
}


def _simulation(directory: Path, extra: dict[str, str] | None = None, downloaded: bool = True) -> sim.Simulation:
    overrides = {"LWSGEN_POLL_SECONDS": str(POLL), "LWSGEN_RENDEZVOUS_TIMEOUT": str(BOUND), **RAY_DETECTOR}
    overrides["LWSGEN_STOP_SECONDS"] = str(STOP)
    overrides |= extra or {}
    return sim.Simulation(sim.load(directory), overrides, downloaded)


def _runtime(simulation: sim.Simulation) -> str:
    workload = next(o for o in simulation.objects if o.get("kind") in ("LeaderWorkerSet", "DisaggregatedSet"))
    return workload["metadata"]["labels"]["app.kubernetes.io/name"]


def _serving(simulation: sim.Simulation, group: list[sim.Pod], timeout: float) -> Outcome:
    start = time.monotonic()
    program = SERVE[_runtime(simulation)]
    deadline = start + timeout
    while time.monotonic() < deadline:
        records = [r for r in simulation.records(program) if r["hostname"] == group[0].name]
        leader = group[0].containers[0]
        if records and leader.ready:  # as its probes find it: a leader never ready gets no traffic
            time.sleep(1)  # the other pods' ranks and nodes record themselves too
            outcome = Outcome(True, f"the leader serves: {program} {' '.join(records[0]['argv'])}", 0, _logs(group))
            outcome.records = simulation.records()
            return outcome
        dead = [c for p in group for c in p.containers if c.exit_code not in (None, 0)]
        if dead:
            why = f" ({', '.join(dead[0].probe_events)})" if dead[0].probe_events else ""
            return Outcome(False, f"{dead[0].pod.name}/{dead[0].name} exited {dead[0].exit_code}{why}", 0, _logs(group))
        time.sleep(0.2)
    reached = "reached" if simulation.records(program) else "did not reach"
    ready = "" if group[0].containers[0].ready else ", its readiness probe never passed"
    return Outcome(False, f"{TIMING_ONLY}the leader {reached} {program} within {timeout:.0f} s{ready}", 0, _logs(group))


def _gives_up(group: list[sim.Pod], who: list[sim.Pod]) -> Outcome:
    """Each pod in who ends non-zero at the bound it keeps by its own clock, having said why."""
    within = wall(BOUND + 15)
    deadline = time.monotonic() + within
    for pod in who:
        container = pod.containers[0]
        code = pod.sim.wait_exit(container, max(deadline - time.monotonic(), 0.1))
        if code is None:
            return Outcome(False, f"{TIMING_ONLY}{pod.name} still waits after {within:.0f} s", 0, _logs(group))
        if code == 0:
            return Outcome(False, f"{pod.name} exited 0 without its group", 0, _logs(group))
        if "gave up after" not in container.log:
            return Outcome(False, f"{pod.name} exited {code} without saying why", 0, _logs(group))
    return Outcome(True, f"{', '.join(p.name for p in who)} gave up at the bound with a sentence", 0, _logs(group))


def timed(scenario: Callable[[Path], Outcome]) -> Callable[[Path], Outcome]:
    def run(directory: Path) -> Outcome:
        start = time.monotonic()
        outcome = scenario(directory)
        outcome.seconds = time.monotonic() - start
        return outcome

    run.__name__ = scenario.__name__
    return run


@timed
def together(directory: Path) -> Outcome:
    """Every pod at once: the group forms, and keeps serving through several of the leader's watch
    polls (a watch that breaks its own group, as probing a busy rpc-server did, shows here)."""
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        for pod in group:
            simulation.start_pod(pod)
        formed = _serving(simulation, group, wall(FORM))
        if not formed.passed:
            return formed
        return _stays_serving(group, formed)


@timed
def roles_together(directory: Path) -> Outcome:
    """A DisaggregatedSet: one group of every role's LeaderWorkerSet, all at once (the controller
    creates them together); every role's group forms and keeps serving."""
    with _simulation(directory) as simulation:
        groups = [sim.lws_group(simulation, lws=lws) for lws in sim.role_sets(simulation)]
        for pod in (p for group in groups for p in group):
            simulation.start_pod(pod)
        served = []
        for group in groups:
            formed = _serving(simulation, group, wall(FORM))
            if not formed.passed:
                return formed
            served.append(group[0].name)
        everyone = [p for group in groups for p in group]
        outcome = _stays_serving(everyone, Outcome(True, f"every role's leader serves: {', '.join(served)}"))
        outcome.logs = _logs(everyone)
        outcome.records = simulation.records()
        return outcome


def _stays_serving(group: list[sim.Pod], formed: Outcome) -> Outcome:
    deadline = time.monotonic() + STAYS
    while time.monotonic() < deadline:
        ended = [c for p in group for c in p.containers if c.exit_code is not None]
        if ended or not group[0].containers[0].ready:
            who = f"{ended[0].pod.name}/{ended[0].name} exited {ended[0].exit_code}" if ended else "leader not ready"
            return Outcome(False, f"formed, then {who} while serving", 0, _logs(group))
        time.sleep(0.5)
    formed.detail += f"; still serving {STAYS} s later"
    return formed


@timed
def worker_late(directory: Path) -> Outcome:
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        simulation.start_pod(group[0])
        time.sleep(LATE)
        for pod in group[1:]:
            simulation.start_pod(pod)
        return _serving(simulation, group, wall(FORM))


@timed
def leader_dns_late(directory: Path) -> Outcome:
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        simulation.start_pod(group[0], publish=False)
        for pod in group[1:]:
            simulation.start_pod(pod)
        time.sleep(LATE)
        simulation.publish(group[0])
        return _serving(simulation, group, wall(FORM))


@timed
def worker_never(directory: Path) -> Outcome:
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        simulation.start_pod(group[0])
        return _gives_up(group, [group[0]])


@timed
def leader_never(directory: Path) -> Outcome:
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        for pod in group[1:]:
            simulation.start_pod(pod)
        return _gives_up(group, group[1:])


@timed
def worker_dies(directory: Path) -> Outcome:
    """The group formed, then a worker pod is lost at once (its node died): every one of its
    processes SIGKILLed, its exit never seen by a kubelet. Some other container of the group must
    exit non-zero, so LeaderWorkerSet recreates the group."""
    return _lose_a_worker(directory, sim.Simulation.kill_pod)


@timed
def node_lost(directory: Path) -> Outcome:
    """The group formed, then a worker's node is lost without a word (power or network): its
    processes frozen and its link cut, so no socket of it is closed (no FIN, no RST) and its name
    still resolves. The rest of the group must notice and exit non-zero, as for worker_dies."""
    return _lose_a_worker(directory, sim.Simulation.freeze_pod)


@timed
def head_node_lost(directory: Path) -> Outcome:
    """KServe's InferenceService: the head and the worker are two Deployments, which no controller
    recreates as a group. The head's node is lost without a word (as node_lost): the worker must
    notice and exit non-zero, so that its Deployment restarts it to join the head that replaces it."""
    return _lose_a_worker(directory, sim.Simulation.freeze_pod, lost=0)


def _lose_a_worker(directory: Path, lose: Callable[[sim.Simulation, sim.Pod], None], lost: int = -1) -> Outcome:
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        for pod in group:
            simulation.start_pod(pod)
        formed = _serving(simulation, group, wall(FORM))
        if not formed.passed:
            return formed
        time.sleep(2)
        gone = group[lost]
        lose(simulation, gone)
        since = time.monotonic()
        survivors = [c for p in group if p is not gone for c in p.containers]
        bound = wall(GROUP_FAILS)
        while time.monotonic() - since < bound:
            failed = [c for c in survivors if c.exit_code not in (None, 0)]
            if failed:
                taken = failed[0].exited - since
                return Outcome(
                    True,
                    f"{failed[0].pod.name}/{failed[0].name} exited {failed[0].exit_code} {taken:.1f} s after",
                    0,
                    _logs(group),
                )
            time.sleep(0.2)
        watcher = group[-1 if lost == 0 else 0].containers[0].log
        counting = "timing-only miss (the watch was counting): " if "watch: " in watcher else ""
        who = "the head" if lost == 0 else "a worker"
        return Outcome(
            False, f"{counting}the rest of the group still runs {bound:.0f} s after {who} was lost", 0, _logs(group)
        )


@timed
def model_arrives_late(directory: Path) -> Outcome:
    """model.source: every pod that reads the model waits in its await-model init container, saying
    for which Job, until the download's marker is on the claim; then the group forms and serves."""
    with _simulation(directory, downloaded=False) as simulation:
        group = sim.lws_group(simulation)
        for pod in group:
            simulation.start_pod(pod)
        waiters = [c for p in group for c in p.init_containers if c.name == "await-model"]
        if not waiters:
            return Outcome(False, "no pod waits for the model", 0, _logs(group))
        deadline = time.monotonic() + wall(FORM)
        while not all("waiting for job/" in c.log for c in waiters):
            if time.monotonic() > deadline:
                return Outcome(False, "the pods did not say they wait for the download", 0, _logs(group))
            time.sleep(0.2)
        time.sleep(LATE)  # the download takes a while: nothing may start meanwhile
        started = [c for p in group for c in p.containers if c.process is not None]
        if started or simulation.records():
            return Outcome(False, "a container started before the model was there", 0, _logs(group))
        simulation.finish_downloads()
        outcome = _serving(simulation, group, wall(FORM))
        outcome.detail = f"{len(waiters)} pods waited for the marker, then: {outcome.detail}"
        return outcome


@timed
def single_pod(directory: Path) -> Outcome:
    """A group of one: the directory is rendered from a profile whose group is one pod."""
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        simulation.start_pod(group[0])
        return _serving(simulation, group, wall(FORM))


def stops_promptly(directory: Path) -> Outcome:
    """A pod waiting for its group is deleted: its container must end on SIGTERM at once, not
    after the grace period. The leader waits alone for its workers; then the workers wait for a
    leader whose name resolves but that runs nothing."""
    start = time.monotonic()
    with _simulation(directory) as simulation:
        group = sim.lws_group(simulation)
        slow = []
        for waiting in (group[:1], group[1:]):
            for pod in waiting:
                simulation.start_pod(pod)
            time.sleep(5)
            simulation.network.unpublish(group[0].fqdn)  # the leader pod is gone: so is its name
            for pod in waiting:
                taken = simulation.stop_container(pod.containers[0], grace=15)
                if taken > 3:
                    slow.append(f"{pod.name} took {taken:.1f} s")
        outcome = Outcome(not slow, "; ".join(slow) or "every waiting container ended within 3 s of SIGTERM")
        outcome.logs, outcome.seconds = _logs(group), time.monotonic() - start
        return outcome


LWS_SCENARIOS = [
    together,
    worker_late,
    leader_dns_late,
    worker_never,
    leader_never,
    worker_dies,
    node_lost,
    stops_promptly,
]


def _verdict(container: sim.Container) -> str:
    return next((line for line in container.log.splitlines() if "lwsgen nccl-test:" in line), "")


def mpijob(directory: Path, bus_bandwidth: float) -> Outcome:
    """The MPIJob NCCL test on a fabric with the given bus bandwidth: real mpirun --tag-output,
    the verdict script reading its tagged output."""
    start = time.monotonic()
    with _simulation(directory, {"GROUPSIM_BUS_BW_GBPS": str(bus_bandwidth)}) as simulation:
        launcher, workers = sim.mpijob_group(simulation)
        for pod in workers:
            simulation.start_pod(pod)
        time.sleep(1)
        simulation.start_pod(launcher)
        code = simulation.wait_exit(launcher.containers[0], wall(FORM))
        group = [launcher, *workers]
        verdict = _verdict(launcher.containers[0])
        expected = "PASS" if bus_bandwidth >= 100 else "FAIL"
        outcome = Outcome(False, f"exit {code}: {verdict or 'no verdict'}", 0, _logs(group))
        outcome.seconds = time.monotonic() - start
        outcome.passed = code is not None and expected in verdict and (code == 0) == (expected == "PASS")
        outcome.exit_code = code
        return outcome


def indexed_job(directory: Path, required: float | None = None) -> Outcome:
    """The Indexed Job NCCL test: real torchrun and torch.distributed (gloo), every pod at once."""
    start = time.monotonic()
    extra = {"LWSGEN_MAX_BYTES": "1M", **({"LWSGEN_MIN_BUS_BW_GBPS": str(required)} if required is not None else {})}
    with _simulation(directory, extra) as simulation:
        group = sim.indexed_job_group(simulation)
        for pod in group:
            simulation.start_pod(pod)
        codes = [simulation.wait_exit(pod.containers[0], wall(120)) for pod in group]
        verdict = _verdict(group[0].containers[0])
        expected = "PASS" if required is not None else "FAIL"
        passed = None not in codes and expected in verdict and (codes[0] == 0) == (expected == "PASS")
        outcome = Outcome(passed, f"exits {codes}: {verdict or 'no verdict'}", 0, _logs(group))
        outcome.seconds = time.monotonic() - start
        outcome.exit_code = codes[0]
        return outcome


def indexed_job_pod_missing(directory: Path) -> Outcome:
    """The Indexed Job with one pod never scheduled: pod 0 must not wait silently in torch's own
    rendezvous; it gives up at the bound with its sentence."""
    start = time.monotonic()
    with _simulation(directory, {"LWSGEN_MAX_BYTES": "1M"}) as simulation:
        group = sim.indexed_job_group(simulation)
        simulation.start_pod(group[0])
        outcome = _gives_up(group, group[:1])
        outcome.seconds = time.monotonic() - start
        return outcome
