"""Stage 5, parse back: rendered text -> objects, one kind per file, plus the kustomization."""

from typing import Any, NamedTuple

import yaml

from lwsgen import emit
from lwsgen.model import Deployment

KUSTOMIZATION = "kustomization.yaml"


def _resolve(self, kind, value, implicit):
    """Scalars resolve through the memoized resolver (keys and values repeat across objects)."""
    if kind is yaml.ScalarNode:
        return emit.resolved_tag(kind, value, implicit)
    return yaml.resolver.Resolver.resolve(self, kind, value, implicit)


def _no_path(self, *args):
    return None  # the safe resolvers have no path resolvers to track


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    resolve, descend_resolver, ascend_resolver = _resolve, _no_path, _no_path


class OutputFile(NamedTuple):
    """One file of OUT/<name>/ and the objects it holds."""

    name: str
    objects: tuple[dict[str, Any], ...]
    in_kustomization: bool = True
    header: str = ""  # comment lines written above the YAML (files that are not cluster objects)


_STR, _INT, _BOOL, _NULL, _MAP, _SEQ = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null", "map", "seq"))
_CONSTRUCTOR = yaml.SafeLoader("")  # for the scalar types the fast path leaves to PyYAML


def _to_python(node: yaml.Node) -> Any:
    """A composed node as Python data, as SafeLoader builds it for the values templates write,
    without SafeLoader's per-node bookkeeping (libyaml parses; this only converts), and with
    the rule that null means 'not written' applied on the way: templates place every field, and
    Python sets the ones to leave out to None."""
    tag = node.tag
    if tag == _MAP:
        pairs = ((_to_python(key), _to_python(value)) for key, value in node.value)
        return {key: value for key, value in pairs if value is not None}
    if tag == _SEQ:
        return [_to_python(item) for item in node.value]
    if tag == _STR:
        return node.value
    if tag == _NULL:
        return None
    if tag == _INT and node.value.lstrip("-").isdigit():
        return int(node.value)
    if tag == _BOOL and node.value in ("true", "false"):
        return node.value == "true"
    return _CONSTRUCTOR.construct_object(node, deep=True)


def parse(text: str) -> tuple[dict[str, Any], ...]:
    docs = (_to_python(node) for node in yaml.compose_all(text, Loader=_Loader))
    return tuple(doc for doc in docs if doc is not None)


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


def dump(objects: tuple[dict[str, Any], ...], header: str = "") -> str:
    """Objects -> YAML text (lwsgen/emit.py); the same objects always give the same bytes."""
    return header + emit.documents(objects)
