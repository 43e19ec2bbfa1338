"""Pods as network namespaces: a bridge in a namespace of its own, one veth per pod, and dnsmasq on
the bridge answering `<pod>.<subdomain>.<ns>.svc.cluster.local` only once a pod is published (its
hosts file appears in dnsmasq's --hostsdir, which dnsmasq re-reads on change). Traffic stays on the
bridge and loopback: nothing is routed out of the bridge namespace."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

DOMAIN = "cluster.local"


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def netns_available() -> str | None:
    """Why pods cannot be network namespaces here, or None."""
    if os.geteuid() != 0:
        return "the group simulator needs root for network namespaces (CI runs as root)"
    for tool in ("ip", "unshare", "nsenter", "dnsmasq"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed; `make test` installs it"
    probe = f"gsprobe{os.getpid()}"
    try:
        run("ip", "netns", "add", probe)
    except subprocess.CalledProcessError as error:
        return f"cannot create a network namespace: {error.stderr.strip()}"
    run("ip", "netns", "delete", probe)
    return None


class Network:
    """One bridge (10.<n>.0.0/24, dnsmasq at .1) and the pods' namespaces on it."""

    def __init__(self, root: Path, tag: str):
        self.root, self.tag = root, tag
        self.bridge_ns = f"{tag}-br"
        self.subnet = f"10.{200 + os.getpid() % 50}.0"
        self.dns_ip = f"{self.subnet}.1"
        self.hosts_dir = root / "dns"
        self.hosts_dir.mkdir(parents=True)
        self.namespaces: list[str] = []
        self.next_host = 2
        self.dnsmasq: subprocess.Popen | None = None

    def start(self) -> None:
        run("ip", "netns", "add", self.bridge_ns)
        self.namespaces.append(self.bridge_ns)
        self._in(self.bridge_ns, "ip", "link", "set", "lo", "up")
        self._in(self.bridge_ns, "ip", "link", "add", "br0", "type", "bridge")
        self._in(self.bridge_ns, "ip", "addr", "add", f"{self.dns_ip}/24", "dev", "br0")
        self._in(self.bridge_ns, "ip", "link", "set", "br0", "up")
        dnsmasq = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
        with (self.root / "dnsmasq.log").open("w") as log:
            self.dnsmasq = self._dnsmasq(dnsmasq, log)
        for _ in range(100):
            if self._dns_listening():
                return
            time.sleep(0.05)
        raise RuntimeError(f"dnsmasq did not start: {(self.root / 'dnsmasq.log').read_text()}")

    def _dnsmasq(self, dnsmasq: str, log) -> subprocess.Popen:
        return subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.bridge_ns,
                dnsmasq,
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--no-negcache",
                "--user=root",
                f"--listen-address={self.dns_ip}",
                "--bind-interfaces",
                f"--local=/{DOMAIN}/",
                f"--hostsdir={self.hosts_dir}",
                f"--pid-file={self.root / 'dnsmasq.pid'}",
                "--log-facility=-",
                "--cache-size=0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

    def _dns_listening(self) -> bool:
        probe = subprocess.run(
            ["ip", "netns", "exec", self.bridge_ns, "ss", "-lun"], capture_output=True, text=True, check=False
        )
        return f"{self.dns_ip}:53" in probe.stdout

    def _in(self, ns: str, *argv: str) -> None:
        run("ip", "netns", "exec", ns, *argv)

    def add_pod(self, index: int) -> tuple[str, str]:
        """A namespace with its veth on the bridge; returns (namespace, IP)."""
        ns, ip = f"{self.tag}-p{index}", f"{self.subnet}.{self.next_host}"
        self.next_host += 1
        host_end, pod_end = f"{self.tag}h{index}"[-15:], f"{self.tag}c{index}"[-15:]
        run("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        run(
            "ip", "link", "add", host_end, "netns", self.bridge_ns, "type", "veth", "peer", "name", pod_end, "netns", ns
        )
        self._in(self.bridge_ns, "ip", "link", "set", host_end, "master", "br0", "up")
        self._in(ns, "ip", "link", "set", "lo", "up")
        self._in(ns, "ip", "link", "set", pod_end, "name", "eth0")
        self._in(ns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        self._in(ns, "ip", "link", "set", "eth0", "up")
        # A default route into the bridge namespace, which routes nowhere: programs that find their
        # address by "connecting" a UDP socket outwards (Ray) see eth0, and nothing leaves the bridge.
        self._in(ns, "ip", "route", "add", "default", "via", self.dns_ip)
        return ns, ip

    def cut(self, index: int) -> None:
        """Pod index's link goes down on the bridge side: what it sends and what is sent to it is
        dropped, with no error to either end (a node lost with its network)."""
        self._in(self.bridge_ns, "ip", "link", "set", f"{self.tag}h{index}"[-15:], "down")

    def publish(self, fqdn: str, ip: str) -> None:
        """Make fqdn resolve (the headless Service's endpoint appears)."""
        staged = self.hosts_dir.parent / f".{fqdn}"
        staged.write_text(f"{ip} {fqdn}\n")
        staged.rename(self.hosts_dir / fqdn)

    def unpublish(self, fqdn: str) -> None:
        (self.hosts_dir / fqdn).unlink(missing_ok=True)

    def stop(self) -> None:
        if self.dnsmasq and self.dnsmasq.poll() is None:
            self.dnsmasq.send_signal(signal.SIGTERM)
            try:
                self.dnsmasq.wait(5)
            except subprocess.TimeoutExpired:
                self.dnsmasq.kill()
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)
        self.namespaces.clear()
