"""The MPI launcher's access, authorised by the real API server against the rendered Role: the
leader's script lists its group's pods (the exact kubectl call of templates/scripts/mpi-leader.sh) and
execs into its workers (kubectl-rsh) with the launcher ServiceAccount's token; an exec into a pod
outside the Role's resourceNames is refused."""

from __future__ import annotations

import subprocess

from tests.cluster.api import Api
from tests.cluster.controlplane import ControlPlane, binary

LISTING = '{range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[*].ready}{"\\n"}{end}'
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"


def _token(api: Api, namespace: str, account: str) -> str:
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    return api.request("POST", path, json=request).json()["status"]["token"]


def _kubectl(plane: ControlPlane, token: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary("kubectl"), "--server", plane.server, "--certificate-authority", str(plane.pki.ca),
         "--token", token, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def launcher(plane: ControlPlane, objects: list[dict], pods: list[dict], problems: list[str]) -> None:
    bindings = [o for o in objects if o["kind"] == "RoleBinding" and o["metadata"]["name"].endswith("-launcher")]
    if not bindings:
        return
    binding = bindings[0]
    namespace = binding["metadata"]["namespace"]
    account = binding["subjects"][0]["name"]
    token = _token(plane.admin, namespace, account)
    leader = next(p for p in pods if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/worker-index") == "0")
    key = leader["metadata"]["labels"][GROUP_KEY]
    group = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["labels"].get(GROUP_KEY) == key)
    listed = _kubectl(plane, token, "get", "pods", "--namespace", namespace, "--selector", f"{GROUP_KEY}={key}",
                      "--field-selector", "status.phase=Running", "--output", f"jsonpath={LISTING}")  # fmt: skip
    names = sorted(line.split()[0] for line in listed.stdout.splitlines() if line.strip())
    if listed.returncode != 0 or names != group:
        problems.append(f"launcher {account}: kubectl get pods listed {names} (exit {listed.returncode}: "
                        f"{listed.stderr.strip()}), its group is {group}")  # fmt: skip
    container = _env(leader, "LWSGEN_WORKER_CONTAINER") or leader["spec"]["containers"][0]["name"]
    for worker in (n for n in group if n != leader["metadata"]["name"]):
        done = _kubectl(plane, token, "exec", worker, "--namespace", namespace, "--container", container,
                        "--", "/bin/sh", "-c", "true")  # fmt: skip
        if done.returncode != 0:
            problems.append(f"launcher {account}: exec into its worker {worker} failed: {done.stderr.strip()}")
    outside = _kubectl(plane, token, "exec", leader["metadata"]["name"], "--namespace", namespace, "--", "true")
    if "forbidden" not in outside.stderr.lower():
        problems.append(f"launcher {account}: exec into {leader['metadata']['name']} (not in resourceNames) was "
                        f"not refused: exit {outside.returncode} {outside.stderr.strip()}")  # fmt: skip


def _env(pod: dict, name: str) -> str | None:
    for container in pod["spec"]["containers"]:
        for entry in container.get("env", []):
            if entry["name"] == name and "value" in entry:
                return entry["value"]
    return None
