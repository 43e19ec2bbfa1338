"""Stage 5, parse back: rendered text -> objects, one kind per file, plus the kustomization."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from lwsgen.model import Deployment

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KUSTOMIZATION = "kustomization.yaml"


@dataclass(frozen=True)
class OutputFile:
    """One file of OUT/<name>/ and the objects it holds."""

    name: str
    objects: tuple[dict[str, Any], ...]
    in_kustomization: bool = True
    header: str = ""  # comment lines written above the YAML (files that are not cluster objects)


def prune(value: Any) -> Any:
    """Null means 'not written': templates place every field and Python sets the absent ones to None."""
    if isinstance(value, dict):
        return {k: prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def parse(text: str) -> tuple[dict[str, Any], ...]:
    return tuple(prune(doc) for doc in yaml.load_all(text, Loader=_Loader) if doc is not None)


def kustomization(resources: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": sorted(resources)}


# What a file outside kustomization.yaml is for, said at its top.
HEADERS = {
    "prometheus-adapter-rules": (
        "# prometheus-adapter rules for the HorizontalPodAutoscaler in this directory. Not a cluster object\n"
        "# and not in kustomization.yaml: add the entries under `rules:` to the adapter's configuration\n"
        "# (Helm chart value `rules.custom`, or the `rules:` list of its config.yaml). Profiles that scale\n"
        "# on the same metric emit the same entry; keep one.\n"
    ),
    "nccl-test": (
        "# NCCL all-reduce preflight on the shape of one group of this LeaderWorkerSet. A one-off test,\n"
        "# not in kustomization.yaml. Run it, read its one-line verdict, remove it:\n"
        "#   kubectl apply -f nccl-test.yaml\n"
        "#   kubectl logs -n <namespace> -l app.kubernetes.io/component=nccl-test --tail=-1 | grep 'lwsgen nccl-test'\n"
        "#   kubectl delete -f nccl-test.yaml\n"
    ),
    "eksctl-nodegroup": (
        "# eksctl nodeGroups entry for the nodes this LeaderWorkerSet selects (Cluster Autoscaler scales it\n"
        "# from 0). Not a cluster object: add it under `nodeGroups:` of your ClusterConfig, in one\n"
        "# availability zone (EFA and placement groups need one), then `eksctl create nodegroup`.\n"
    ),
    "volcano-queue": (
        "# The Volcano Queue this profile's groups are scheduled from. Cluster-scoped and usually shared by\n"
        "# several deployments, so not in kustomization.yaml: apply it once, by whoever owns the queue:\n"
        "#   kubectl apply -f volcano-queue.yaml\n"
    ),
}


def build(deployment: Deployment, rendered: dict[str, str]) -> list[OutputFile]:
    files = [OutputFile(f"{key}.yaml", parse(text), key not in deployment.extra_files, HEADERS.get(key, ""))
             for key, text in rendered.items()]
    files.append(OutputFile(KUSTOMIZATION, (kustomization([f.name for f in files if f.in_kustomization]),), False))
    return sorted(files, key=lambda f: f.name)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    """libyaml dumper: block style, key order kept, multi-line strings as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump(objects: tuple[dict[str, Any], ...], header: str = "") -> str:
    """Objects -> YAML text; the same objects always give the same bytes."""
    return header + yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=100000, explicit_start=len(objects) > 1)
