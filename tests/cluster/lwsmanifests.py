"""The LWS controller manager's webhook registrations and configuration, from its own source
(tests/cluster/upstream/lws, v0.10.0): config/webhook built with the real kustomize, each webhook's
Service reference turned into the URL the manager serves on loopback (no Service proxy here)."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

from tests.cluster.api import load_all

UPSTREAM = Path(__file__).resolve().parent / "upstream" / "lws"
KUSTOMIZE = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "kustomize"


def kustomize_build(directory: Path) -> list[dict]:
    tool = str(KUSTOMIZE) if KUSTOMIZE.exists() else "kustomize"
    out = subprocess.run([tool, "build", str(directory)], capture_output=True, text=True, check=True, env=os.environ)
    return load_all(out.stdout)


def webhooks(base_url: str, ca: Path) -> list[dict]:
    """The Mutating/ValidatingWebhookConfigurations of config/webhook, calling base_url."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    out = []
    for obj in kustomize_build(UPSTREAM / "config" / "webhook"):
        if not obj["kind"].endswith("WebhookConfiguration"):
            continue
        obj["metadata"]["name"] = "lws-" + obj["metadata"]["name"]  # config/default's namePrefix
        for hook in obj["webhooks"]:
            path = hook["clientConfig"].pop("service")["path"]
            hook["clientConfig"] = {"url": base_url + path, "caBundle": bundle}
        out.append(obj)
    return out


def manager_config(webhook_port: int, cert_dir: Path, health_port: int, gang: str | None = None) -> dict:
    """api/config/v1alpha1 Configuration: webhooks on loopback with the harness's certificate
    (internal cert management off: it would rewrite the webhook configurations for a Service); with
    gang, the scheduler provider that makes a PodGroup per group (docs/scheduling.md's setup)."""
    gang_scheduling = {"gangSchedulingManagement": {"schedulerProvider": gang}} if gang else {}
    return gang_scheduling | {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
    }
