"""What the real-engine group tests share: a story of cells told once per module on the group
simulator (each cell printed as `<example> <scenario> PASS|FAIL` with its detail on the next line),
and the steps every story takes: start a group, wait until the leader's probes find it ready, send
completions through the leader's serving port, lose a member, and see the group fail in its bound."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from groupsim import prometheus, sim


class Story:
    """Each cell's verdict as the story reaches it, what stopped it, and the pods' logs."""

    def __init__(self, root: Path):
        self.root = root
        self.cells: dict[str, tuple[bool, str]] = {}
        self.logs: dict[str, str] = {}
        self.error = ""  # what stopped the story, if something raised
        self.stopped_log = ""  # the pods' logs where a group did not form

    def cell(self, scenario: str, passed: bool, detail: str) -> bool:
        self.cells[scenario] = (passed, detail)
        return passed

    def keep_logs(self, simulation: sim.Simulation, prometheus_log: Path | None = None) -> None:
        self.logs = {f"{n}/{c.name}": c.log for n, p in simulation.pods.items() for c in p.containers}
        if prometheus_log and prometheus_log.exists():
            self.logs["prometheus"] = prometheus_log.read_text()

    def verdict(self, example: str, scenario: str, label: str) -> tuple[bool, str]:
        """Print the cell's line, `<example> <label> PASS|FAIL`, and return (passed, the message a
        failure shows)."""
        reached = self.error or "an earlier step failed"
        passed, detail = self.cells.get(scenario, (False, f"not reached: {reached}"))
        print(f"{example} {label} {'PASS' if passed else 'FAIL'}\n  {detail}")
        logs = "\n".join(f"--- {name}\n{text[-3000:]}" for name, text in self.logs.items())
        return passed, f"{detail}\n{logs}"


def start(simulation: sim.Simulation, group_index: int, size: int | None = None) -> list[sim.Pod]:
    group = sim.lws_group(simulation, size=size, group=group_index)
    for pod in group:
        simulation.start_pod(pod)
    return group


def wait_ready(group: list[sim.Pod], within: float) -> str | None:
    """None once the leader is ready as its probes find it; otherwise why not."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if group[0].containers[0].ready:
            return None
        dead = [c for p in group for c in p.containers if c.exit_code is not None]
        if dead:
            return f"{dead[0].pod.name}/{dead[0].name} exited {dead[0].exit_code}"
        time.sleep(0.5)
    return f"the leader was not ready within {within:.0f} s"


def serving_port(pod: sim.Pod) -> int:
    [port] = [p["containerPort"] for p in pod.containers[0].spec["ports"] if p["name"] == "http"]
    return port


def complete(simulation: sim.Simulation, leader: sim.Pod, model: str, tokens: int = 16) -> dict:
    """/v1/completions through the leader's serving port, from beside the pods."""
    url = f"http://{leader.ip}:{serving_port(leader)}/v1/completions"
    payload = {"model": model, "prompt": "the leader and the worker", "max_tokens": tokens}
    return prometheus.post(simulation.network.bridge_ns, url, payload)


def load(simulation: sim.Simulation, leader: sim.Pod, model: str, clients: int, stop: threading.Event):
    """clients threads sending long completions to the leader until stop is set."""

    def client() -> None:
        while not stop.is_set():
            try:
                complete(simulation, leader, model, tokens=256)
            except OSError:
                return

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def series_per_group(prom: prometheus.Prometheus, series: list[str], groups: int) -> dict[str, list]:
    """Each series' samples once every series has one per group, or as they are after 30 s."""
    found: dict[str, list] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = {name: prom.query(name) for name in series}
        if all(len(samples) == groups for samples in found.values()):
            break
        time.sleep(1)
    return found


def peaks_under_load(simulation, prom, leader: sim.Pod, model: str, series: list[str], seconds: float, join: float):
    """prometheus.peaks of series while 6 clients send long completions to leader."""
    stop = threading.Event()
    threads = load(simulation, leader, model, clients=6, stop=stop)
    try:
        return prometheus.peaks(prom, series, seconds=seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(join)


def failed_within(group: list[sim.Pod], since: float, bound: float) -> tuple[bool, str]:
    """Whether a container of the group other than the lost last pod exits non-zero within bound."""
    survivors = [c for p in group[:-1] for c in p.containers]
    while time.monotonic() - since < bound:
        failed = [c for c in survivors if c.exit_code not in (None, 0)]
        if failed:
            taken = failed[0].exited - since
            return True, f"{failed[0].pod.name}/{failed[0].name} exited {failed[0].exit_code} {taken:.1f} s after"
        time.sleep(0.2)
    return False, f"the rest of the group still runs {bound:.0f} s after its worker was lost"


def leader_said(pod: sim.Pod) -> list[str]:
    return [line for line in pod.containers[0].log.splitlines() if line.startswith("lwsgen leader:")]


def stays(simulation: sim.Simulation, group: list[sim.Pod], seconds: float, model: str) -> tuple[bool, str]:
    """The formed group goes on serving for `seconds` with no failed watch poll, then answers."""
    watched = time.monotonic()
    while time.monotonic() - watched < seconds:
        ended = [c for p in group for c in p.containers if c.exit_code is not None]
        if ended or not group[0].containers[0].ready:
            return False, f"torn down while serving; the leader said: {leader_said(group[0])[-1:]}"
        time.sleep(0.5)
    false_alarms = [line for line in leader_said(group[0]) if "watch: " in line or "lost a member" in line]
    if false_alarms:
        return False, f"the leader's watch fired on a healthy group: {false_alarms[-1]}"
    answer = complete(simulation, group[0], model)
    return bool(answer["choices"]), f"{seconds:.0f} s without a failed watch poll, then answered"
