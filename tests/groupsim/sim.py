"""The group simulator: one group of a rendered LeaderWorkerSet (or the NCCL test) run as pods on
one machine. Each pod is a network namespace on a bridge with a kubelet-style /etc/hosts and
resolv.conf pointing at dnsmasq; each container a PID namespace (its command is PID 1) and mount
namespace over an overlay of the host root, with the pod's volumes, its ServiceAccount token only
where automountServiceAccountToken allows, the env built as the kubelet and the LWS webhook build
it, and its image played by a stand-in (tests/groupsim/images.py)."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastyaml
from groupsim import api, images, kubeenv, probes
from groupsim.net import DOMAIN, Network

HERE = Path(__file__).resolve().parent
_RUNS = itertools.count()
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SIM_DIR = "/run/groupsim"  # the API socket and the stand-ins' records, in every container


@dataclass
class Container:
    pod: Pod
    spec: dict[str, Any]
    init: bool
    process: subprocess.Popen | None = None
    pid1: int | None = None
    env: list[tuple[str, str]] = field(default_factory=list)
    started: float | None = None
    exit_code: int | None = None
    exited: float | None = None
    log_path: Path | None = None
    ready: bool = False  # as the kubelet's prober last found it (probes.py)
    probe_events: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def status(self) -> dict[str, Any]:
        if self.exit_code is not None:
            state = {"terminated": {"exitCode": self.exit_code}}
        elif self.process is not None:
            state = {"running": {"startedAt": self.started}}
        else:
            state = {"waiting": {"reason": "PodInitializing"}}
        ready = "running" in state and self.ready
        return {"name": self.name, "ready": ready, "started": "running" in state, "restartCount": 0, "state": state}


@dataclass
class Pod:
    sim: Simulation
    name: str
    namespace: str
    labels: dict[str, str]
    template: dict[str, Any]
    subdomain: str | None
    prepend: list[tuple[str, str]]
    index: int
    netns: str = ""
    ip: str = ""
    phase: str = "Pending"
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    frozen: list[int] = field(default_factory=list)  # processes freeze_pod stopped

    @property
    def spec(self) -> dict[str, Any]:
        return self.template["spec"]

    @property
    def fqdn(self) -> str:
        return f"{self.name}.{self.subdomain}.{self.namespace}.svc.{DOMAIN}"

    @property
    def root(self) -> Path:  # by index too: a pod recreated under the same name gets fresh volumes
        return self.sim.root / "pods" / f"{self.name}.{self.index}"

    def container(self, name: str | None = None) -> Container:
        if name is None:
            return self.containers[0]
        return next(c for c in self.containers + self.init_containers if c.name == name)

    def object(self) -> dict[str, Any]:
        """The Pod as the API server returns it."""
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": dict(self.labels)},
            "spec": {"serviceAccountName": self.spec.get("serviceAccountName", "default")},
            "status": {
                "phase": self.phase,
                "podIP": self.ip,
                "containerStatuses": [c.status() for c in self.containers],
            },
        }


class Simulation:
    def __init__(
        self,
        objects: list[dict[str, Any]],
        overrides: dict[str, str] | None = None,
        downloaded: bool = True,
        real: dict[str, str] | None = None,
    ):
        # Under /tmp, not /dev/shm (every container mounts its own there), readable by the
        # non-root users some containers run as; removed afterwards unless GROUPSIM_KEEP is set.
        self.root = Path(tempfile.mkdtemp(prefix="groupsim-", dir="/tmp"))
        self.root.chmod(0o755)
        self.objects = objects
        self.overrides = overrides or {}
        self.tag = f"gs{os.getpid()}x{next(_RUNS)}"  # namespaces gs<pid>x<n>-*: cleanup_stale knows whose
        self.network = Network(self.root / "net", self.tag)
        self.shared = self.root / "shared"
        (self.shared / "records").mkdir(parents=True)
        os.chmod(self.shared / "records", 0o777)
        self.real = real or {}  # programs the images run for real: name in the image -> binary here
        self.standins = images.install(self.root / "standins", self.real)
        self._indices = itertools.count()  # pods' network indices: a recreated pod gets a new one
        self.api = api.ApiServer(str(self.shared / "api.sock"), self, api.Rbac(objects))
        self.pods: dict[str, Pod] = {}
        self.sessions: list[subprocess.Popen] = []  # exec sessions (kubectl exec, exec probes)
        self.lock = threading.Lock()
        # PersistentVolumeClaims: one directory per claim, shared by every pod (ReadWriteMany)
        self.claims = self.root / "claims"
        if downloaded:
            self.finish_downloads()

    # -- lifecycle

    def __enter__(self) -> Simulation:
        self.network.start()
        self.api.start()
        os.chmod(self.shared / "api.sock", 0o777)
        return self

    def __exit__(self, *_) -> None:
        for pod in list(self.pods.values()):  # first: a frozen exec session holds another pod's end
            self._kill_frozen(pod)
        for session in self.sessions:
            if session.poll() is None:
                session.kill()
        for pod in list(self.pods.values()):
            self.kill_pod(pod)
        self.api.stop()
        self.network.stop()
        if not os.environ.get("GROUPSIM_KEEP"):
            shutil.rmtree(self.root, ignore_errors=True)

    # -- objects

    def find(self, kind: str, name: str | None = None) -> dict[str, Any]:
        return next(
            o for o in self.objects if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)
        )

    def claim(self, name: str) -> Path:
        where = self.claims / name
        where.mkdir(parents=True, exist_ok=True)
        where.chmod(0o777)
        return where

    def finish_downloads(self) -> None:
        """What a model-download Job leaves on its claim when it succeeds: the files and, last, the
        marker (templates/scripts/download-model.py), for every such Job in the set."""
        for job in (o for o in self.objects if o.get("kind") == "Job"):
            pod = job["spec"]["template"]["spec"]
            container = pod["containers"][0]
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            if "LWSGEN_TARGET" not in env:
                continue
            claims = {
                v["name"]: v["persistentVolumeClaim"]["claimName"]
                for v in pod["volumes"]
                if "persistentVolumeClaim" in v
            }
            [mount] = [m for m in container["volumeMounts"] if m["name"] in claims]
            target = self.claim(claims[mount["name"]]) / os.path.relpath(env["LWSGEN_TARGET"], mount["mountPath"])
            target.mkdir(parents=True, exist_ok=True)
            (target / "config.json").write_text("{}")
            (target / "model.safetensors").write_bytes(b"\0" * 4096)
            (target / ".lwsgen-complete").write_text(json.dumps({"revision": env["LWSGEN_REVISION"], "files": 2}))

    def config_map_data(self) -> dict[str, dict[str, str]]:
        return {o["metadata"]["name"]: o.get("data", {}) for o in self.objects if o.get("kind") == "ConfigMap"}

    # -- what the API server asks

    def pods_listing(self) -> list[dict[str, Any]]:
        with self.lock:
            return [p.object() for p in self.pods.values() if p.phase != "Gone"]

    def exec_in(
        self, namespace: str | None, pod_name: str, container: str | None, argv: list[str], fds: list[int]
    ) -> int:
        pod = self.pods.get(pod_name)
        if pod is None or namespace not in (None, pod.namespace) or pod.phase == "Gone":
            os.write(fds[2], f'Error from server (NotFound): pods "{pod_name}" not found\n'.encode())
            return 1
        target = pod.container(container)
        if target.pid1 is None or target.exit_code is not None:
            os.write(fds[2], f"error: container {target.name} is not running\n".encode())
            return 1
        return self._nsenter(target, argv, fds)

    def _nsenter(self, target: Container, argv: list[str], fds: list[int], timeout: float | None = None) -> int:
        env = [f"{k}={v}" for k, v in target.env]
        command = ["nsenter", "-t", str(target.pid1), "-n", "-m", "-u", "-p", "-r", "-w", "--", "/usr/bin/env", "-i"]
        process = subprocess.Popen([*command, *env, *argv], stdin=fds[0], stdout=fds[1], stderr=fds[2])
        self.sessions.append(process)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise

    # -- pods

    def add_pod(self, name, namespace, labels, template, subdomain, prepend) -> Pod:
        pod = Pod(self, name, namespace, labels, template, subdomain, prepend, next(self._indices))
        pod.netns, pod.ip = self.network.add_pod(pod.index)
        for group, init in (("initContainers", True), ("containers", False)):
            for spec in template["spec"].get(group, []):
                target = pod.init_containers if init else pod.containers
                target.append(Container(pod, spec, init))
        self.pods[name] = pod
        return pod

    def start_pod(self, pod: Pod, publish: bool = True) -> None:
        """Kubelet: volumes, init containers one by one, then the containers together."""
        volumes = self._volumes(pod)
        if publish:
            self.publish(pod)
        threading.Thread(target=self._run_pod, args=(pod, volumes), daemon=True).start()

    def publish(self, pod: Pod) -> None:
        if pod.subdomain:  # a Deployment's pod has no name of its own in DNS
            self.network.publish(pod.fqdn, pod.ip)
        for service in kserve_services(pod):
            self.network.publish(f"{service}.{pod.namespace}.svc.{DOMAIN}", pod.ip)

    def _run_pod(self, pod: Pod, volumes: dict[str, Path]) -> None:
        for container in pod.init_containers:
            self._start(container, volumes)
            if container.spec.get("restartPolicy") == "Always":
                # a native sidecar: the kubelet starts the next container once it has started
                # (pkg/kubelet/kuberuntime/kuberuntime_container.go, SidecarContainers: no startupProbe here)
                continue
            container.process.wait()
            if container.exit_code != 0:
                pod.phase = "Failed"
                return
        for container in pod.containers:
            self._start(container, volumes)
        pod.phase = "Running"

    def _volumes(self, pod: Pod) -> dict[str, Path]:
        made: dict[str, Path] = {}
        data = self.config_map_data()
        for volume in pod.spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                made[volume["name"]] = self.claim(volume["persistentVolumeClaim"]["claimName"])
                continue
            where = pod.root / "volumes" / volume["name"]
            where.mkdir(parents=True)
            if "configMap" in volume:
                source = volume["configMap"]
                entries = data[source["name"]]
                items = source.get("items") or [{"key": k, "path": k} for k in entries]
                for item in items:
                    path = where / item["path"]
                    path.write_text(entries[item["key"]])
                    path.chmod(item.get("mode", source.get("defaultMode", 0o644)))
            else:  # emptyDir, and any other volume as an empty directory the pod may write
                where.chmod(0o777)
            made[volume["name"]] = where
        if self._automount(pod):
            account = pod.root / "serviceaccount"
            account.mkdir(parents=True)
            (account / "token").write_text(api.token_for(pod.namespace, pod.spec.get("serviceAccountName", "default")))
            (account / "namespace").write_text(pod.namespace)
            made["__serviceaccount"] = account
        return made

    def _automount(self, pod: Pod) -> bool:
        allowed = pod.spec.get("automountServiceAccountToken")
        if allowed is None:
            account = next(
                (
                    o
                    for o in self.objects
                    if o.get("kind") == "ServiceAccount" and o["metadata"]["name"] == pod.spec.get("serviceAccountName")
                ),
                {},
            )
            allowed = account.get("automountServiceAccountToken", True)
        return bool(allowed)

    def _fields(self, pod: Pod) -> dict[str, str]:
        values = {
            "metadata.name": pod.name,
            "metadata.namespace": pod.namespace,
            "status.podIP": pod.ip,
            "spec.serviceAccountName": pod.spec.get("serviceAccountName", "default"),
            "spec.nodeName": f"node-{pod.index}",
        }
        values |= {f"metadata.labels['{k}']": v for k, v in pod.labels.items()}
        values |= {
            f"metadata.annotations['{k}']": v for k, v in (pod.template["metadata"].get("annotations") or {}).items()
        }
        return values

    def _env(self, container: Container, image: images.Image) -> list[tuple[str, str]]:
        spec = container.spec
        secrets: dict[tuple[str, str], str] = {}
        for entry in spec.get("env", []):
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                secrets[(ref["name"], ref["key"])] = f"sim-secret-{ref['name']}-{ref['key']}"
        config_maps = {(n, k): v for n, d in self.config_map_data().items() for k, v in d.items()}
        pod = container.pod
        pod_object = {
            "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": pod.labels},
            "spec": pod.spec,
        }
        env = kubeenv.container_env(
            spec,
            pod_object,
            prepend=container.pod.prepend,
            field_values=self._fields(container.pod),
            secret_values=secrets,
            config_map_values=config_maps,
        )
        names = {k for k, _ in env}
        base = [(k, v) for k, v in image.env.items() if k not in names]  # the image's ENV, under the pod's
        gpus = _gpus(spec)
        if gpus:  # the GPUs the device plugin gives, as CUDA and Ray would find them on a GPU node
            base.append(("CUDA_VISIBLE_DEVICES", ",".join(str(i) for i in range(gpus))))
            base.append(("RAY_OVERRIDE_RESOURCES", json.dumps({"GPU": gpus})))
        base.append(("HOSTNAME", container.pod.name))
        return base + env + list(self.overrides.items())

    def _start(self, container: Container, volumes: dict[str, Path]) -> None:
        pod, spec = container.pod, container.spec
        image = images.image(spec["image"], self.standins, self.real)
        container.env = self._env(container, image)
        argv = kubeenv.expand_command(
            [*(spec.get("command") or image.entrypoint), *spec.get("args", [])], container.env
        )
        base = pod.root / "containers" / container.name
        for part in ("upper", "work", "root"):
            (base / part).mkdir(parents=True)
        mounts = [(str(self.shared), SIM_DIR, False)]
        for mount in spec.get("volumeMounts", []):
            mounts.append((str(volumes[mount["name"]]), mount["mountPath"], bool(mount.get("readOnly"))))
        if "__serviceaccount" in volumes:
            mounts.append((str(volumes["__serviceaccount"]), SA_DIR, True))
        security = spec.get("securityContext", {})
        init_spec = {
            "root": str(base / "root"),
            "upper": str(base / "upper"),
            "work": str(base / "work"),
            "hostname": pod.name,
            "files": [
                *image.files,
                ("/etc/hosts", self._hosts(pod), 0o644),
                ("/etc/resolv.conf", self._resolv(pod), 0o644),
            ],
            "mounts": mounts,
            "env": container.env,
            "argv": argv,
            "workdir": spec.get("workingDir"),
            "user": security.get("runAsUser"),
            "group": security.get("runAsGroup"),
        }
        (base / "spec.json").write_text(json.dumps(init_spec))
        container.log_path = base / "log"
        command = [
            "nsenter",
            f"--net=/run/netns/{pod.netns}",
            "unshare",
            "--mount",
            "--pid",
            "--uts",
            "--fork",
            "--kill-child",
            "--",
            sys.executable,
            str(HERE / "containerinit.py"),
            str(base / "spec.json"),
        ]
        with container.log_path.open("wb") as log:  # the container keeps its own descriptor
            container.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        container.started = time.monotonic()
        container.pid1 = _child_of(container.process.pid)
        threading.Thread(target=self._reap, args=(container,), daemon=True).start()
        if not container.init:
            probes.start(container, self)

    def _reap(self, container: Container) -> None:
        code = container.process.wait()
        container.exited = time.monotonic()
        container.exit_code = 128 - code if code < 0 else code  # unshare reports the child's signal

    def _hosts(self, pod: Pod) -> str:
        """kubelet's managed /etc/hosts (managedHostsFileContent)."""
        lines = [
            "# Kubernetes-managed hosts file.",
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            "fe00::0\tip6-localnet",
            "fe00::0\tip6-mcastprefix",
            "fe00::1\tip6-allnodes",
            "fe00::2\tip6-allrouters",
        ]
        if pod.subdomain:
            lines.append(f"{pod.ip}\t{pod.fqdn}\t{pod.name}")
        else:
            lines.append(f"{pod.ip}\t{pod.name}")
        return "\n".join(lines) + "\n"

    def _resolv(self, pod: Pod) -> str:
        search = f"{pod.namespace}.svc.{DOMAIN} svc.{DOMAIN} {DOMAIN}"
        return f"search {search}\nnameserver {self.network.dns_ip}\noptions ndots:5\n"

    # -- what a test does to pods

    def stop_container(self, container: Container, grace: float) -> float:
        """kubelet's stop: SIGTERM to PID 1, SIGKILL after the grace period; returns seconds taken."""
        start = time.monotonic()
        if container.exit_code is None and container.pid1:
            os.kill(container.pid1, signal.SIGTERM)
            try:
                container.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(container.pid1, signal.SIGKILL)
                container.process.wait()
        return time.monotonic() - start

    def delete_pod(self, pod: Pod, grace: float) -> None:
        """The pod is deleted (LeaderWorkerSet recreating its group): each container stopped as the
        kubelet stops it, its DNS name withdrawn, and the name free for the pod that replaces it."""
        for container in pod.containers:
            if container.process is not None:
                self.stop_container(container, grace)
        self.kill_pod(pod)
        if pod.subdomain:
            self.network.unpublish(pod.fqdn)
        for service in kserve_services(pod):
            self.network.unpublish(f"{service}.{pod.namespace}.svc.{DOMAIN}")

    def kill_pod(self, pod: Pod) -> None:
        """The pod is gone at once (its node died, or it was force-deleted): every process SIGKILLed."""
        self._kill_frozen(pod)
        for container in pod.init_containers + pod.containers:
            if container.process and container.exit_code is None and container.pid1:
                try:
                    os.kill(container.pid1, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                container.process.wait()
        pod.phase = "Gone"

    def _kill_frozen(self, pod: Pod) -> None:
        for pid in pod.frozen:  # an exec session's nsenter among them: it must go to reap its child
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pod.frozen.clear()

    def freeze_pod(self, pod: Pod) -> None:
        """The pod's node is lost without a word (power or link): every process of the pod stops
        (SIGSTOP) and its link goes down, so no FIN or RST leaves it and connections to it time out.
        Its DNS name stays, as the headless Service keeps a not-ready address (publishNotReadyAddresses)."""
        self.network.cut(pod.index)
        pod.phase = "Unknown"
        for _ in range(10):  # again until no new process: one forked meanwhile would run on
            fresh = [
                pid
                for container in pod.init_containers + pod.containers
                if container.process and container.exit_code is None and container.pid1
                for pid in _pids_in_namespace_of(container.pid1)
                if pid not in pod.frozen
            ]
            if not fresh:
                break
            for pid in fresh:
                try:
                    os.kill(pid, signal.SIGSTOP)
                    pod.frozen.append(pid)
                except ProcessLookupError:
                    pass

    def wait_exit(self, container: Container, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while container.process is None:  # its pod is still running init containers
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        try:
            container.process.wait(max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            return None
        while container.exit_code is None:
            time.sleep(0.01)
        return container.exit_code

    def records(self, program: str | None = None) -> list[dict[str, Any]]:
        found = [json.loads(p.read_text()) for p in sorted((self.shared / "records").glob("*.json"))]
        return [r for r in found if program is None or r["program"] == program]


def _gpus(container: dict[str, Any]) -> int:
    limits = container.get("resources", {}).get("limits", {})
    return sum(int(v) for k, v in limits.items() if k.endswith("/gpu"))


def _pids_in_namespace_of(pid1: int) -> list[int]:
    """Every process in the PID namespace whose PID 1 is pid1 (as the host numbers them)."""
    try:
        namespace = os.readlink(f"/proc/{pid1}/ns/pid")
    except OSError:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == namespace:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _child_of(pid: int) -> int:
    """unshare --fork's child: the container's PID 1, as the host sees it."""
    for _ in range(500):
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except FileNotFoundError:
            return pid
        if children:
            return int(children[0])
        time.sleep(0.005)
    raise RuntimeError("the container's PID 1 did not start")


def load(directory: Path) -> list[dict[str, Any]]:
    objects = []
    for path in sorted(directory.glob("*.yaml")):
        objects.extend(o for o in fastyaml.load_all(path.read_text()) if isinstance(o, dict) and "kind" in o)
    return objects + kserve_sets(objects)


# On the LeaderWorkerSet the simulator runs a KServe InferenceService's Deployments as: no LWS
# webhook touches those pods (no LWS_* env, no LWS labels).
MADE_BY = "groupsim.lwsgen.dev/made-by"
ISVC_GENERATION = "1"  # an InferenceService's first generation, on its pods' isvc.generation label


def kserve_services(pod: Pod) -> list[str]:
    """The headless Services KServe makes for an InferenceService's head and worker pods, which
    publish not-ready addresses: <isvc>-head-<generation> and <isvc>-workers-<generation>, selecting
    by the app and isvc.generation labels (kserve/kserve@v0.20.0
    pkg/controller/v1beta1/inferenceservice/reconcilers/service/service_reconciler.go#L195-L240,
    pkg/constants/constants.go#L62, #L755-L774). KServe's names as literals here, not lwsgen's
    constants: the simulator holds lwsgen to KServe, not to itself."""
    isvc, generation = pod.labels.get("serving.kserve.io/inferenceservice"), pod.labels.get("isvc.generation")
    if not isvc or not generation:
        return []
    app = pod.labels.get("app")
    if app == f"isvc.{isvc}-predictor":
        return [f"{isvc}-head-{generation}"]
    if app == f"isvc.{isvc}-predictor-worker":
        return [f"{isvc}-workers-{generation}"]
    return []


# What KServe's controller injects into an InferenceService's containers
# (kserve/kserve@v0.20.0 pkg/controller/v1beta1/inferenceservice/components/predictor.go#L624-L677).
def _isvc_env(isvc: str, nodes: int, gpus: str, tensor: int, pipeline: int, head: str | None) -> list[dict]:
    env = {"RAY_NODE_COUNT": nodes, "REQUEST_GPU_COUNT": gpus, "PIPELINE_PARALLEL_SIZE": pipeline}
    env |= {"TENSOR_PARALLEL_SIZE": tensor}
    if head is None:
        env |= {"MODEL_NAME": isvc, "MODEL_DIR": "/mnt/models"}
    else:
        env |= {"ISVC_NAME": isvc, "HEAD_SVC": head, "WORKER_SVC": f"{isvc}-workers-{ISVC_GENERATION}"}
    return [{"name": k, "value": str(v)} for k, v in env.items()]


def kserve_sets(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What KServe makes of an LLMInferenceService, the LeaderWorkerSet <name>-kserve-mn of lwsgen's
    pods (lwsgen/output/kserve.py), and of an InferenceService, its head and worker Deployments: run
    here as one group of their pods, the head first, with the env KServe's controller adds, the
    labels it puts on the pods (isvc.generation) and its headless Services (kserve_services), which
    resolve once their pod exists."""
    from lwsgen import platforms
    from lwsgen.output import kserve

    made, _ = kserve.workloads([o for o in objects if o.get("kind") == "LLMInferenceService"])
    services = [o for o in objects if o.get("kind") == "LLMInferenceService"]
    # its own workload's and, with spec.prefill, the prefill one's
    by_lws = {platforms.llmisvc_lws(s["metadata"]["name"], role): s for s in services for role in (None, "prefill")}
    out = []
    for lws in made.values():
        service = by_lws[lws["metadata"]["name"]]
        lws["metadata"]["labels"] = dict(service["metadata"].get("labels", {}))
        out.append(lws)
    isvcs = [o for o in objects if o.get("kind") == "InferenceService"]
    runtimes = [o for o in objects if o.get("kind") == "ServingRuntime"]
    deployments = kserve.isvc_deployments(isvcs, runtimes)
    for isvc, (head, worker) in zip(isvcs, zip(deployments[::2], deployments[1::2], strict=True), strict=True):
        name, spec = isvc["metadata"]["name"], isvc["spec"]["predictor"]["workerSpec"]
        gpus = worker["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        tensor, pipeline = spec["tensorParallelSize"], spec["pipelineParallelSize"]
        nodes = -(-tensor * pipeline // int(gpus))
        lws_name = f"{name}-predictor"
        leader, follower = copy.deepcopy(head["spec"]["template"]), copy.deepcopy(worker["spec"]["template"])
        for template in (leader, follower):  # components/predictor.go#L214, #L541
            template["metadata"]["labels"]["isvc.generation"] = ISVC_GENERATION
        if runtime_annotations(runtimes, isvc).get("multinode/executor-backend") == "mp":  # constants.go#L743-L744
            nodes = pipeline  # mp: pipeline pods of tensor GPUs (components/predictor.go#L759-L766)
        leader["spec"]["containers"][0]["env"] += _isvc_env(name, nodes, gpus, tensor, pipeline, None)
        head_service = f"{name}-head-{ISVC_GENERATION}"  # constants.go#L765-L768
        follower["spec"]["containers"][0]["env"] += _isvc_env(name, nodes, gpus, tensor, pipeline, head_service)
        out.append(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": lws_name, "namespace": isvc["metadata"].get("namespace", "default")}
                | {"labels": dict(isvc["metadata"].get("labels", {})), "annotations": {MADE_BY: "kserve-isvc"}},
                "spec": {"leaderWorkerTemplate": {"size": nodes, "leaderTemplate": leader, "workerTemplate": follower}},
            }
        )
    return out


def runtime_annotations(runtimes: list[dict[str, Any]], isvc: dict[str, Any]) -> dict[str, str]:
    """The spec.annotations of the ServingRuntime an InferenceService names (where KServe reads its
    executor backend: components/predictor.go#L608)."""
    name = isvc["spec"]["predictor"]["model"]["runtime"]
    runtime = next(r for r in runtimes if r["metadata"]["name"] == name)
    return runtime["spec"].get("annotations") or {}


def group_key(lws: str, namespace: str, group: int) -> str:
    """LWS labels a group's pods with a hash of the leader's namespaced name (utils.Sha1Hash)."""
    return hashlib.sha1(f"{namespace}/{lws}-{group}".encode()).hexdigest()


def role_set(ds: dict[str, Any], role: dict[str, Any], revision: str | None = None) -> dict[str, Any]:
    """The LeaderWorkerSet a DisaggregatedSet's controller makes for one role (slice 0), as lws v0.10.0
    does: named <set>-<slice>-<revision>-<role> (pkg/utils/disaggregatedset/utils.go GenerateName)
    with GenerateLabels' five labels on the set and both pod templates (lws_manager.go). The
    controller's revision is the first 8 hex digits of a SHA-256 over its Go structs' JSON
    (ComputeRevision), which a Python dict cannot reproduce byte for byte: the simulator hashes the
    roles itself unless given the real one (make test-cluster passes the controller's)."""
    name, namespace = ds["metadata"]["name"], ds["metadata"].get("namespace", "default")
    if revision is None:
        templates = [{"name": r["name"], "template": r["spec"]["leaderWorkerTemplate"]} for r in ds["spec"]["roles"]]
        revision = hashlib.sha256(json.dumps(templates, sort_keys=True).encode()).hexdigest()[:8]
    spec = copy.deepcopy(role["spec"])
    labels = {
        "app": f"{name}-0-{role['name']}",
        "disaggregatedset.x-k8s.io/role": role["name"],
        "disaggregatedset.x-k8s.io/slice": "0",
        "disaggregatedset.x-k8s.io/name": name,
        "disaggregatedset.x-k8s.io/revision": revision,
    }
    template = spec["leaderWorkerTemplate"]
    for side in ("leaderTemplate", "workerTemplate"):
        if side in template:
            template[side].setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": f"{name}-0-{revision}-{role['name']}", "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def role_sets(sim: Simulation) -> list[dict[str, Any]]:
    """The role LeaderWorkerSets of every DisaggregatedSet (role_set), added to the simulation's
    objects; and those KServe makes of an LLMInferenceService with spec.prefill (kserve_sets: the
    prefill one and the service's own, decode), already among them."""
    from lwsgen import platforms

    made = []
    for ds in (o for o in sim.objects if o.get("kind") == "DisaggregatedSet"):
        for role in ds["spec"]["roles"]:
            lws = role_set(ds, role)
            sim.objects.append(lws)
            made.append(lws)
    sets = {o["metadata"]["name"]: o for o in sim.objects if o.get("kind") == "LeaderWorkerSet"}
    for service in (o for o in sim.objects if o.get("kind") == "LLMInferenceService"):
        if (service.get("spec") or {}).get("prefill") is not None:
            made += [sets[platforms.llmisvc_lws(service["metadata"]["name"], role)] for role in ("prefill", None)]
    return made


def _deployments(lws: dict[str, Any]) -> bool:
    return (lws["metadata"].get("annotations") or {}).get(MADE_BY) == "kserve-isvc"


def group_pods(lws: dict[str, Any], size: int | None = None, group: int = 0) -> list[tuple[str, dict, dict, list]]:
    """What the LWS controller and its pod webhook make of one group, as the simulator assumes it:
    (pod name, labels, the pod template it comes from, the env the webhook prepends), leader first."""
    name, namespace = lws["metadata"]["name"], lws["metadata"].get("namespace", "default")
    template = lws["spec"]["leaderWorkerTemplate"]
    size = size or template.get("size", 1)
    deployments = _deployments(lws)
    pods = []
    for worker in range(size):
        side = (
            template.get("leaderTemplate")
            if worker == 0 and "leaderTemplate" in template
            else template["workerTemplate"]
        )
        pod_name = f"{name}-{group}" if worker == 0 else f"{name}-{group}-{worker}"
        labels = dict(side["metadata"].get("labels", {}))
        if deployments:  # KServe's Deployments: the pod's own labels and env only
            pods.append((pod_name, labels, side, []))
            continue
        labels |= {
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
            "leaderworkerset.sigs.k8s.io/group-key": group_key(name, namespace, group),
        }
        pods.append((pod_name, labels, side, kubeenv.lws_env(name, namespace, group, worker, size)))
    return pods


def lws_group(sim: Simulation, size: int | None = None, group: int = 0, lws: dict | None = None) -> list[Pod]:
    """The pods of one group of the LeaderWorkerSet (the first, or lws), leader first, added but not started."""
    lws = lws or sim.find("LeaderWorkerSet")
    name, namespace = lws["metadata"]["name"], lws["metadata"].get("namespace", "default")
    return [
        sim.add_pod(pod_name, namespace, labels, side, None if _deployments(lws) else name, prepend)
        for pod_name, labels, side, prepend in group_pods(lws, size, group)
    ]


def mpijob_group(sim: Simulation) -> tuple[Pod, list[Pod]]:
    """The MPIJob as the MPI operator (v2beta1) runs it: workers <job>-worker-<i> behind a headless
    Service named after the job, and a launcher with the hostfile and OpenMPI settings the operator
    adds (pkg/controller/mpi_job_controller.go: ompiEnvVars, the hostfile at /etc/mpi/hostfile with
    "<worker>.<job>.<namespace>.svc slots=<slotsPerWorker>")."""
    job = sim.find("MPIJob")
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    slots = job["spec"].get("slotsPerWorker", 1)
    replicas = job["spec"]["mpiReplicaSpecs"]
    count = replicas["Worker"]["replicas"]
    hostfile = "".join(f"{name}-worker-{i}.{name}.{namespace}.svc slots={slots}\n" for i in range(count))
    workers = [
        sim.add_pod(f"{name}-worker-{i}", namespace, {}, replicas["Worker"]["template"], name, []) for i in range(count)
    ]
    launcher_template = copy.deepcopy(replicas["Launcher"]["template"])
    spec = launcher_template["spec"]
    spec.setdefault("volumes", []).append({"name": "mpi-job-config", "configMap": {"name": f"{name}-config"}})
    for container in spec["containers"]:
        container.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": "/etc/mpi"})
        container["env"] = [
            *container.get("env", []),
            {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
            {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
        ]
    sim.objects.append({"kind": "ConfigMap", "metadata": {"name": f"{name}-config"}, "data": {"hostfile": hostfile}})
    launcher = sim.add_pod(f"{name}-launcher", namespace, {}, launcher_template, name, [])
    return launcher, workers


def indexed_job_group(sim: Simulation) -> list[Pod]:
    """The Indexed Job's pods, <job>-<index>, each with JOB_COMPLETION_INDEX as the Job controller
    adds it, on the subdomain of the job's headless Service."""
    job = sim.find("Job")
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    template = job["spec"]["template"]
    pods = []
    for index in range(job["spec"]["completions"]):
        indexed = copy.deepcopy(template)
        for container in indexed["spec"]["containers"]:
            container["env"] = [*container.get("env", []), {"name": "JOB_COMPLETION_INDEX", "value": str(index)}]
        subdomain = indexed["spec"].get("subdomain")
        pods.append(sim.add_pod(f"{name}-{index}", namespace, {}, indexed, subdomain, []))
    return pods


def cleanup_stale() -> None:
    """Namespaces an interrupted run left behind: those of simulator processes no longer alive."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.split() else ""
        owner = re.match(r"gs(\d+)x\d+-", name)
        if owner and not Path(f"/proc/{owner.group(1)}").exists():
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
