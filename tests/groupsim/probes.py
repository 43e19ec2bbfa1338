"""The kubelet's prober for the simulator's containers: startup, readiness and liveness probes run
as the kubelet runs them (kubernetes v1.31 pkg/kubelet/prober/worker.go and prober.go), so a
container is ready only when its probes say so, and one whose startup or liveness probe fails its
failureThreshold times in a row is killed (LeaderWorkerSet then recreates the group):

- until the startup probe has succeeded, readiness and liveness are not run and the container is
  not ready (worker.doProbe: "if !started ... skip"); without a startup probe it counts as started;
- readiness starts as failure (results.Failure is the readiness worker's initial value), flips to
  success after successThreshold successes and back after failureThreshold failures; a container
  without a readiness probe is ready once started;
- httpGet succeeds on a status in [200, 400) (pkg/probe/http/http.go), to the pod IP by default,
  a named port resolved among the container's ports (prober.go findPortByName); tcpSocket on a
  connect; exec on exit status 0, run in the container.

Time is compressed as the scenarios compress the scripts' polls: a period or initial delay is at
most PERIOD_CAP seconds and a timeout at most TIMEOUT_CAP; a failure threshold is scaled by the
period's compression so that it spans the same time as on the kubelet (3 failures 10 s apart
stay 30 s of failures), and a busy CI machine does not fail a probe the kubelet would pass."""

from __future__ import annotations

import ctypes
import http.client
import os
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupsim.sim import Container, Simulation

PERIOD_CAP = 1.0
TIMEOUT_CAP = 3.0
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def start(container: Container, simulation: Simulation) -> None:
    threading.Thread(target=_run, args=(container, simulation), daemon=True).start()


def _enter_netns(netns: str) -> None:
    """This thread (only) joins the pod's network namespace, as the probes run from the pod's side."""
    fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)


def _seconds(probe: dict[str, Any], key: str, default: float, cap: float) -> float:
    return min(float(probe.get(key, default)), cap)


def _run(container: Container, simulation: Simulation) -> None:
    spec = container.spec
    startup, readiness, liveness = (spec.get(k) for k in ("startupProbe", "readinessProbe", "livenessProbe"))
    _enter_netns(container.pod.netns)
    started = startup is None
    streaks = {"startup": [0, 0], "readiness": [0, 0], "liveness": [0, 0]}  # [successes, failures] in a row
    delay = min((_seconds(p, "initialDelaySeconds", 0, PERIOD_CAP) for p in (startup, readiness) if p), default=0)
    time.sleep(delay)
    container.ready = started and readiness is None
    while container.exit_code is None and container.pod.phase not in ("Unknown", "Gone"):  # lost: no kubelet
        if not started:
            ok = _probe(container, startup)
            started = _count(streaks["startup"], ok, startup)
            if not started and streaks["startup"][1] >= _failures(startup):
                _kill(container, simulation, "startup probe failed")
                return
            container.ready = started and readiness is None
            time.sleep(_seconds(startup, "periodSeconds", 10, PERIOD_CAP))
            continue
        if readiness is not None:
            ok = _probe(container, readiness)
            _count(streaks["readiness"], ok, readiness)
            if streaks["readiness"][0] >= readiness.get("successThreshold", 1):
                container.ready = True
            elif streaks["readiness"][1] >= _failures(readiness):
                container.ready = False
        if liveness is not None:
            ok = _probe(container, liveness)
            _count(streaks["liveness"], ok, liveness)
            if streaks["liveness"][1] >= _failures(liveness):
                _kill(container, simulation, "liveness probe failed")
                return
        period = min(_seconds(p, "periodSeconds", 10, PERIOD_CAP) for p in (readiness, liveness, {}) if p is not None)
        time.sleep(period if (readiness or liveness) else PERIOD_CAP)


def _failures(probe: dict[str, Any]) -> float:
    """failureThreshold, scaled to span the same time as with the probe's real period."""
    period = float(probe.get("periodSeconds", 10))
    return probe.get("failureThreshold", 3) * period / min(period, PERIOD_CAP)


def _count(streak: list[int], ok: bool, probe: dict[str, Any]) -> bool:
    """Update [successes, failures] in a row; whether the probe now counts as succeeded."""
    streak[0], streak[1] = (streak[0] + 1, 0) if ok else (0, streak[1] + 1)
    return streak[0] >= probe.get("successThreshold", 1)


def _kill(container: Container, simulation: Simulation, why: str) -> None:
    container.probe_events.append(why)
    if container.exit_code is None:
        simulation.stop_container(
            container, grace=min(float(container.pod.spec.get("terminationGracePeriodSeconds", 30)), 5)
        )


def _port(container: Container, port: int | str) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for entry in container.spec.get("ports", []):
        if entry.get("name") == port:
            return int(entry["containerPort"])
    return -1  # the kubelet fails the probe: no such port


def _probe(container: Container, probe: dict[str, Any]) -> bool:
    timeout = _seconds(probe, "timeoutSeconds", 1, TIMEOUT_CAP)
    try:
        if "httpGet" in probe:
            get = probe["httpGet"]
            connection = http.client.HTTPConnection(
                get.get("host") or container.pod.ip, _port(container, get["port"]), timeout=timeout
            )
            try:
                connection.request(
                    "GET", get.get("path", "/"), headers={h["name"]: h["value"] for h in get.get("httpHeaders", [])}
                )
                return 200 <= connection.getresponse().status < 400
            finally:
                connection.close()
        if "tcpSocket" in probe:
            with socket.create_connection((container.pod.ip, _port(container, probe["tcpSocket"]["port"])), timeout):
                return True
        if "exec" in probe:
            fds = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
            try:
                return container.pod.sim._nsenter(container, probe["exec"]["command"], fds, timeout) == 0
            finally:
                for fd in fds:
                    os.close(fd)
    except (OSError, http.client.HTTPException, subprocess.TimeoutExpired):
        return False
    return False  # a grpc probe or one the simulator does not know: never passes
