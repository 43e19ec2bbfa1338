"""One example on the real control plane: what its user provides first (namespace, GPU nodes of the
profile's node type, the model claim's volume, the token Secret), then every object lwsgen wrote,
applied as a GitOps tool applies them (server-side, fieldValidation=Strict)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import fastyaml
from lwsgen.cli import main
from lwsgen.pipeline import render_profile
from tests.cluster import nodes as fake_nodes
from tests.cluster.api import Api, ApiError, load_all
from tests.cluster.lwsmanifests import KUSTOMIZE

REPO = Path(__file__).resolve().parents[2]
OUTSIDE_KUSTOMIZATION = ("nccl-test.yaml",)  # objects a user applies by hand (docs/nccl.md)


@dataclass
class Example:
    name: str
    profile_path: Path
    out_dir: Path
    problems: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.rendered = render_profile(self.profile_path)
        self.profile = self.rendered.profile
        self.namespace = self.profile.namespace

    def roles(self) -> dict[str, object]:
        """role name -> that role's profile; one unnamed role for a single LeaderWorkerSet."""
        return dict(self.profile.roles) or {"": self.profile}

    def objects(self) -> list[dict]:
        """What the kustomization applies (built by the real kustomize), then the files a user
        applies by hand."""
        out = subprocess.run([str(KUSTOMIZE), "build", str(self.out_dir)], capture_output=True, text=True, check=True)
        objs = load_all(out.stdout)
        for name in OUTSIDE_KUSTOMIZATION:
            if (self.out_dir / name).exists():
                objs += load_all((self.out_dir / name).read_text())
        return objs

    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.node_objects()]

    def node_objects(self, short: int = 0) -> list[dict]:
        """Nodes for every group the profile may run, `short` fewer per role. Where the profile asks
        for placement the nodes give it room to go wrong: each group a domain of
        scheduling.exclusiveTopology, each DisaggregatedSet slice a domain of the placement's
        topologyKey (ExclusiveSlice), each domain twice the nodes its group or slice takes, so a
        set placed without the constraint would spread over them (checks.domains)."""
        made = []
        slices, slice_key = self._slices()
        for slice_index in range(slices):
            for role, profile in self.roles().items():
                group_key = profile.scheduling.exclusive_topology
                room = 2 if slice_key or group_key else 1
                count = profile.groups_at_most * profile.group_size * room
                prefix = "-".join(p for p in (self.name, f"s{slice_index}" if slices > 1 else "", role) if p)
                role_nodes = fake_nodes.nodes(prefix, fake_nodes.node_type(profile), count - short)
                for index, node in enumerate(role_nodes):
                    labels = node["metadata"]["labels"]
                    if slice_key:
                        labels[slice_key] = f"{self.name}-slice-{slice_index}"
                    if group_key:
                        labels[group_key] = f"{prefix}-group-{index // (profile.group_size * room)}"
                made += role_nodes
        return made

    def domain_keys(self) -> tuple[str | None, str | None]:
        """The node label each group must keep to (scheduling.exclusiveTopology), and each slice."""
        return self.profile.scheduling.exclusive_topology, self._slices()[1]

    def _slices(self) -> tuple[int, str | None]:
        if not self.profile.roles:
            return 1, None
        d = self.profile.disaggregation
        exclusive = d.placement.type == "ExclusiveSlice"
        return d.slices, d.placement.topology_key if exclusive else None


def rendered_in(profile: Path, namespace: str, root: Path, name: str, node_labels: dict | None = None) -> Example:
    """The profile (with what sits beside it: its templates) in a namespace of its own, its pods held
    to nodes with node_labels if given, rendered as a user renders it, under root."""
    source = root / "profiles" / name
    shutil.copytree(profile.parent, source, ignore=shutil.ignore_patterns("*.yaml"))
    data = fastyaml.load(profile.read_text())
    data["namespace"] = namespace
    if node_labels:
        data.setdefault("node", {}).setdefault("nodeSelector", {}).update(node_labels)
    (source / "profile.yaml").write_text(fastyaml.dump(data, sort_keys=False))
    assert main(["render", str(source / "profile.yaml"), "-o", str(root / "out")]) == 0
    example = Example(name, source / "profile.yaml", root / "out")
    example.out_dir = root / "out" / example.profile.name
    return example


def provide(api: Api, example: Example, objects: list[dict], nodes: bool = True) -> None:
    """What the profile says the cluster already has: the namespace, the nodes (unless the test makes
    its own), a bound volume for each claim the pods mount that lwsgen does not create, the priority
    classes the pods name and the Secrets they read."""
    api.ensure_namespace(example.namespace)
    for node in example.node_objects() if nodes else []:
        if api.find("v1", "Node", node["metadata"]["name"]) is None:
            api.create(node)
    created = {o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"}
    for claim in sorted(_claims(objects) - created):
        _bound_volume(api, example.namespace, claim)
    for claim in (o for o in objects if o["kind"] == "PersistentVolumeClaim"):
        _volume_for(api, example.namespace, claim)
    for priority in sorted(
        {spec["priorityClassName"] for spec in _pod_specs(objects) if spec.get("priorityClassName")}
    ):
        if api.find("scheduling.k8s.io/v1", "PriorityClass", priority) is None:  # the Priority admission needs it
            made = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": priority}}
            api.create({**made, "value": 1000})
    for secret in sorted(_secrets(objects)):
        if api.find("v1", "Secret", secret, example.namespace) is None:
            made = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}, "stringData": {"token": "x"}}
            api.create(made, example.namespace)
    for namespace, name in sorted(_kserve_gateways(objects, example.namespace)):
        _gateway(api, namespace, name)


# The Gateway an LLMInferenceService's router uses when it names none: ingressGateway in KServe's
# inferenceservice-config (config/configmap/inferenceservice.yaml, kserve/kserve@v0.20.0)
KSERVE_GATEWAY = ("kserve", "kserve-ingress-gateway")


def _kserve_gateways(objects: list[dict], namespace: str) -> set[tuple[str, str]]:
    """The Gateways the LLMInferenceServices' routers attach to: KServe makes its route, pool and
    endpoint picker only once the Gateway exists."""
    found = set()
    for obj in objects:
        router = (obj.get("spec") or {}).get("router") if obj["kind"] == "LLMInferenceService" else None
        if not isinstance(router, dict) or "gateway" not in router:
            continue
        refs = (router.get("gateway") or {}).get("refs") or []
        found |= {(r.get("namespace") or namespace, r["name"]) for r in refs} if refs else {KSERVE_GATEWAY}
    return found


def _gateway(api: Api, namespace: str, name: str) -> None:
    """A Gateway no implementation runs (none runs here): it exists, which is what KServe asks of it."""
    api.ensure_namespace(namespace)
    if api.find("gateway.networking.k8s.io/v1", "Gateway", name, namespace) is None:
        listener = {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}
        made = {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": name},
            "spec": {"gatewayClassName": "lwsgen-test", "listeners": [listener]},
        }
        api.create(made, namespace)


def cordon(api: Api, name: str) -> None:
    """No new pod lands on the node: a later test's pods go to its own nodes."""
    api.merge_patch("v1", "Node", name, None, {"spec": {"unschedulable": True}})


def on_own_nodes(api: Api, example: Example, namespace: str, lws: dict, nodes: list[dict]) -> None:
    """Ready a test's one LeaderWorkerSet in namespace: every node there is cordoned, the test's own
    nodes are made, and what the set's pods mount and read is provided."""
    for node in api.list("v1", "Node"):
        cordon(api, node["metadata"]["name"])
    for node in nodes:
        api.create(node)
    example.namespace = namespace
    provide(api, example, [lws], nodes=False)


def _pod_specs(objects: list[dict]):
    for obj in objects:
        spec = obj.get("spec") or {}
        stack = [spec]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if "containers" in node and isinstance(node["containers"], list):
                    yield node
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)


def _claims(objects: list[dict]) -> set[str]:
    return {
        v["persistentVolumeClaim"]["claimName"]
        for spec in _pod_specs(objects)
        for v in spec.get("volumes", [])
        if "persistentVolumeClaim" in v
    }


def _secrets(objects: list[dict]) -> set[str]:
    names = set()
    for spec in _pod_specs(objects):
        for c in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            for e in c.get("env", []):
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    names.add(ref["name"])
    return names


def _pv(name: str, namespace: str, claim: str, size: str, modes: list[str], storage_class: str = "") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": modes,
            "storageClassName": storage_class,
            "hostPath": {"path": f"/var/lwsgen-test/{name}"},  # never mounted: kwok runs no containers
            "claimRef": {"namespace": namespace, "name": claim},
        },
    }


def _bound_volume(api: Api, namespace: str, claim: str) -> None:
    name = f"{namespace}-{claim}"
    if api.find("v1", "PersistentVolume", name) is None:
        api.create(_pv(name, namespace, claim, "10Ti", ["ReadWriteMany", "ReadOnlyMany"]))
    if api.find("v1", "PersistentVolumeClaim", claim, namespace) is None:
        api.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim},
                "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": name,
                         "resources": {"requests": {"storage": "10Ti"}}},
            },
            namespace,
        )  # fmt: skip


def _volume_for(api: Api, namespace: str, claim: dict) -> None:
    """A claim lwsgen creates is provisioned by the cluster's storage class; here a volume waits for it."""
    spec = claim["spec"]
    name = f"{namespace}-{claim['metadata']['name']}"
    storage_class = spec.get("storageClassName") or ""
    if storage_class and api.find("storage.k8s.io/v1", "StorageClass", storage_class) is None:
        api.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": storage_class},
                    "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"})  # fmt: skip
    if api.find("v1", "PersistentVolume", name) is None:
        size = spec["resources"]["requests"]["storage"]
        api.create(_pv(name, namespace, claim["metadata"]["name"], size, spec["accessModes"], storage_class))


def apply_all(api: Api, example: Example, objects: list[dict]) -> list[str]:
    """Apply every object; what the server refused or warned about."""
    problems = []
    for obj in objects:
        what = f"{obj['kind']} {obj['metadata']['name']}"
        try:
            applied = api.apply(obj, example.namespace)
        except ApiError as e:
            problems.append(f"{what} refused: {e}")
            continue
        problems += [f"{what}: the server warned: {w}" for w in applied.warnings]
    return problems
