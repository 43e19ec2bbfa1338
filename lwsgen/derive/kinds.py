"""The one table of output kinds. Each kind is declared once, here: its key (the template
templates/<key>.yaml.j2 and the file <key>.yaml), the objects its file holds and their schemas,
when it is emitted, its builder, its Argo CD sync wave, whether it is in the kustomization (and,
if not, the header that says why). Adding a kind is its template, its builder and one entry.

A builder takes (Context, Kind) and returns the values its template places, or None when the
profile does not emit the kind. The output tables of README.md and docs/ are generated from here.
"""

from collections.abc import Callable
from typing import Any

from lwsgen.derive import (
    alerts,
    cluster,
    dashboard,
    delivery,
    disaggregation,
    gateway,
    isvc,
    kserve,
    monitoring,
    nccl,
    network,
    patchschema,
    workload,
)
from lwsgen.records import Record


class Document(Record):
    """One object a kind's file may hold: apiVersion and kind (None for a configuration fragment),
    and the project schema in schemas/ that validates it (None: Kubernetes' own, strict)."""

    api_version: str | None
    kind: str | None
    schema: str | None = None


class Kind(Record):
    key: str
    documents: tuple[Document, ...]
    what: str  # for people: what the file holds
    when: str  # for people: when the profile emits it
    build: Callable[[Any, "Kind"], Any]
    component: str  # app.kubernetes.io/component of what it creates
    wave: int | None = None  # Argo CD sync wave (gitops.argocd.syncWaves); lower waves apply first
    outside: str = ""  # why the file is not in kustomization.yaml; empty: it is
    header: str = ""  # comment lines at the top of the file, saying what to do with it
    per_role: bool = False  # with roles: one object per role (the same one once), all in its file

    @property
    def file(self) -> str:
        return f"{self.key}.yaml"

    @property
    def in_kustomization(self) -> bool:
        return not self.outside


KUSTOMIZATION = "kustomization"


class Kustomization(Record):
    resources: tuple[str, ...]
    configurations: tuple[str, ...] = ("kustomizeconfig.yaml",)
    openapi: str = "kustomize-openapi.yaml"  # derive/patchschema.py: merge keys for patches


class TransformerConfig(Record):
    """kustomizeconfig.yaml: the LeaderWorkerSet's field specs, a DisaggregatedSet's (set: True) where
    the profile has roles, KServe's kinds' (kserve: True) on a KServe platform (None: not written)."""

    set: bool | None = None
    kserve: bool | None = None


def _transformer_config(ctx: Any, _kind: "Kind") -> TransformerConfig:
    kserve = True if ctx.profile.platform != "lws" else None
    return TransformerConfig(True if ctx.roles is not None else None, kserve)


def _kustomization(_ctx: Any, _kind: Kind) -> None:
    return None  # built by derive() from the other kinds it emitted


def _core(api_version: str, kind: str) -> tuple[Document, ...]:
    return (Document(api_version, kind),)


def _own(api_version: str, kind: str, schema: str) -> tuple[Document, ...]:
    return (Document(api_version, kind, schema),)


ADAPTER_HEADER = (
    "# prometheus-adapter rules for the HorizontalPodAutoscaler in this directory. Not a cluster object\n"
    "# and not in kustomization.yaml: add the entries under `rules:` to the adapter's configuration\n"
    "# (Helm chart value `rules.custom`, or the `rules:` list of its config.yaml). Profiles that scale\n"
    "# on the same metric emit the same entry; keep one.\n"
)
NCCL_HEADER = (
    "# NCCL all-reduce preflight on the shape of one group of this LeaderWorkerSet. A one-off test,\n"
    "# not in kustomization.yaml. Run it, read its one-line verdict, remove it:\n"
    "#   kubectl apply -f nccl-test.yaml\n"
    "#   kubectl logs -n <namespace> -l app.kubernetes.io/component=nccl-test --tail=-1 | grep 'lwsgen nccl-test'\n"
    "#   kubectl delete -f nccl-test.yaml\n"
)
EKSCTL_HEADER = (
    "# eksctl nodeGroups entry for the nodes this LeaderWorkerSet selects (Cluster Autoscaler scales it\n"
    "# from 0). Not a cluster object: add it under `nodeGroups:` of your ClusterConfig, in one\n"
    "# availability zone (EFA and placement groups need one), then `eksctl create nodegroup`.\n"
)
QUEUE_HEADER = (
    "# The Volcano Queue this profile's groups are scheduled from. Cluster-scoped and usually shared by\n"
    "# several deployments, so not in kustomization.yaml: apply it once, by whoever owns the queue:\n"
    "#   kubectl apply -f volcano-queue.yaml\n"
)

# Waves: what pods need (-1), then the workload (0), then what watches, routes to (1) or scales it
# and routes traffic in (2).
KINDS: tuple[Kind, ...] = (
    Kind(
        "leaderworkerset",
        _own("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkerset.schema.json"),
        "`LeaderWorkerSet` `<name>`, `size` = world size / `node.gpus`, explicit leader and worker templates",
        "always",
        workload.leaderworkerset,
        "inference-server",
        wave=0,
    ),
    Kind(
        "disaggregatedset",
        _own("disaggregatedset.x-k8s.io/v1", "DisaggregatedSet", "disaggregatedset.schema.json"),
        "`DisaggregatedSet` `<name>`: one role per `roles` entry, each the LeaderWorkerSet template of that role "
        "(its size, engine flags for KV transfer), slices and placement policy",
        "`roles` (in place of the LeaderWorkerSet)",
        disaggregation.disaggregatedset,
        "inference-server",
        wave=0,
    ),
    Kind(
        "llminferenceservice",
        (
            Document(
                "serving.kserve.io/v1alpha2", "LLMInferenceServiceConfig", "llminferenceserviceconfig.schema.json"
            ),
            Document("serving.kserve.io/v1alpha2", "LLMInferenceService", "llminferenceservice.schema.json"),
        ),
        "KServe `LLMInferenceService` `<name>` (run by KServe as the LeaderWorkerSet `<name>-kserve-mn`): "
        "`model.uri`, `parallelism`, lwsgen's leader and worker pods as `template` and `worker`, `router` for "
        "the gateway; and, for pipeline parallelism across nodes, the `LLMInferenceServiceConfig` "
        "`kserve-config-llm-worker-pipeline-parallel` KServe v0.20.0 does not ship",
        "`platform: kserve` (in place of the LeaderWorkerSet, its Service and the gateway objects)",
        kserve.llminferenceservice,
        "inference-server",
        wave=0,
    ),
    Kind(
        "inferenceservice",
        (
            Document("serving.kserve.io/v1alpha1", "ServingRuntime", "servingruntime.schema.json"),
            Document("serving.kserve.io/v1beta1", "InferenceService", "inferenceservice.schema.json"),
        ),
        "KServe `ServingRuntime` `<name>` (lwsgen's vLLM-on-Ray containers `kserve-container` and "
        "`worker-container`, `workerSpec` with the tensor and pipeline sizes) and the `InferenceService` "
        "`<name>` that names it (deployment mode Standard, autoscaler none, `storageUri` pvc://), which KServe "
        "runs as the Deployments `<name>-predictor` and `<name>-predictor-worker`",
        "`platform: kserve-isvc` (in place of the LeaderWorkerSet and its Service)",
        isvc.inferenceservice,
        "inference-server",
        wave=0,
    ),
    Kind(
        "router",
        (
            Document("v1", "ServiceAccount"),
            Document("rbac.authorization.k8s.io/v1", "Role"),
            Document("rbac.authorization.k8s.io/v1", "RoleBinding"),
            Document("apps/v1", "Deployment"),
            Document("networking.k8s.io/v1", "NetworkPolicy"),
            Document("monitoring.coreos.com/v1", "PodMonitor", "podmonitor.schema.json"),
        ),
        "the SGLang router `<name>-router` in prefill/decode mode, finding each role's leaders by label: "
        "`ServiceAccount`, `Role` (read pods), `RoleBinding`, `Deployment`, its `NetworkPolicy` and `PodMonitor`",
        "`roles` with runtime `sglang`",
        disaggregation.router,
        "router",
        wave=1,
    ),
    Kind(
        "service",
        _core("v1", "Service"),
        '`Service` `<name>-leader` selecting `leaderworkerset.sigs.k8s.io/name: <name>` + `worker-index: "0"`',
        "always",
        workload.service,
        "leader-service",
        wave=0,
    ),
    Kind(
        "configmap",
        _core("v1", "ConfigMap"),
        "`ConfigMap` `<name>-launch` with the group's launch scripts",
        "the runtime launches through scripts (all current ones)",
        workload.launch_scripts,
        "launch-scripts",
        wave=-1,
        per_role=True,
    ),
    Kind(
        "persistentvolumeclaim",
        _core("v1", "PersistentVolumeClaim"),
        "`PersistentVolumeClaim` `storage.claimName` for the model, kept by Argo CD when the application goes",
        "`storage.create`",
        delivery.persistentvolumeclaim,
        "model-storage",
        wave=-1,
    ),
    Kind(
        "model-download",
        _core("batch/v1", "Job"),
        "`Job` `<name>-model-<revision>`: downloads `model.source` into the claim once, resumable, marker last",
        "`model.source`",
        delivery.model_download,
        "model-download",
        wave=-1,
    ),
    Kind(
        "serviceaccount",
        _core("v1", "ServiceAccount"),
        "`ServiceAccount` `<name>-launcher` of the leader",
        "the runtime's leader uses the Kubernetes API (MPI over `kubectl exec`: triton-trtllm, trtllm-serve)",
        workload.service_account,
        "launcher",
        wave=-1,
        per_role=True,
    ),
    Kind(
        "role",
        _core("rbac.authorization.k8s.io/v1", "Role"),
        "`Role` `<name>-launcher`: get/list pods, create/get pods/exec, in the namespace only",
        "as serviceaccount",
        workload.role,
        "launcher",
        wave=-1,
        per_role=True,
    ),
    Kind(
        "rolebinding",
        _core("rbac.authorization.k8s.io/v1", "RoleBinding"),
        "`RoleBinding` of that Role to that ServiceAccount",
        "as serviceaccount",
        workload.role_binding,
        "launcher",
        wave=-1,
        per_role=True,
    ),
    Kind(
        "networkpolicy",
        _core("networking.k8s.io/v1", "NetworkPolicy"),
        "`NetworkPolicy` `<name>`: serving ports from the allowed sources, the group's own pods, metrics from "
        "monitoring",
        "`security.networkPolicy` (default on)",
        network.networkpolicy,
        "network-policy",
        wave=-1,
        per_role=True,
    ),
    Kind(
        "podmonitor",
        _own("monitoring.coreos.com/v1", "PodMonitor", "podmonitor.schema.json"),
        "`PodMonitor` `<name>` scraping the leaders of this LWS",
        "`monitoring.enabled` and the runtime has Prometheus metrics",
        monitoring.podmonitor,
        "metrics",
        wave=1,
        per_role=True,
    ),
    Kind(
        "prometheusrule",
        _own("monitoring.coreos.com/v1", "PrometheusRule", "prometheusrule.schema.json"),
        "`PrometheusRule` `<name>`: the runtime's records, the group GPU record and the alerts (docs/runbooks.md)",
        "`monitoring.enabled`",
        alerts.prometheusrule,
        "metrics",
        wave=1,
    ),
    Kind(
        "grafana-dashboard",
        _core("v1", "ConfigMap"),
        '`ConfigMap` `<name>-dashboard` labelled for the Grafana sidecar (`grafana_dashboard: "1"`): a dashboard '
        "of groups ready, GPU utilisation per group, the recorded queue and KV-cache series, request rate, time to "
        "first token and inter-token latency where the engine exports them, the autoscaler's replicas "
        "(docs/monitoring.md)",
        "`monitoring.enabled` and `monitoring.dashboard.enabled` (default on)",
        dashboard.grafana_dashboard,
        "dashboard",
        wave=1,
    ),
    Kind(
        "inferencepool",
        _own("inference.networking.k8s.io/v1", "InferencePool", "inferencepool.schema.json"),
        "`InferencePool` `<name>` of the leaders of this LWS, on the serving port, picked by `<name>-epp`",
        "`gateway.enabled`",
        gateway.inferencepool,
        "inference-pool",
        wave=1,
    ),
    Kind(
        "endpoint-picker",
        (
            Document("v1", "ServiceAccount"),
            Document("rbac.authorization.k8s.io/v1", "Role"),
            Document("rbac.authorization.k8s.io/v1", "RoleBinding"),
            Document("v1", "ConfigMap"),
            Document("apps/v1", "Deployment"),
            Document("v1", "Service"),
            Document("networking.k8s.io/v1", "NetworkPolicy"),
            Document("monitoring.coreos.com/v1", "PodMonitor", "podmonitor.schema.json"),
        ),
        "the endpoint picker `<name>-epp` (llm-d-router): `ServiceAccount`, `Role` (read pods, InferencePools, "
        "objectives), `RoleBinding`, config `ConfigMap`, `Deployment`, `Service`, its `NetworkPolicy` and `PodMonitor`",
        "`gateway.enabled`",
        gateway.endpoint_picker,
        "endpoint-picker",
        wave=1,
    ),
    Kind(
        "httproute",
        _own("gateway.networking.k8s.io/v1", "HTTPRoute", "httproute.schema.json"),
        "`HTTPRoute` `<name>` from `gateway.parentRefs` to the InferencePool",
        "`gateway.enabled`",
        gateway.httproute,
        "route",
        wave=2,
    ),
    Kind(
        "horizontalpodautoscaler",
        _core("autoscaling/v2", "HorizontalPodAutoscaler"),
        "`HorizontalPodAutoscaler` `<name>` on the LWS",
        "`autoscaling.enabled`, engine `hpa`",
        monitoring.horizontalpodautoscaler,
        "autoscaler",
        wave=2,
        per_role=True,
    ),
    Kind(
        "prometheus-adapter-rules",
        (Document(None, None, "prometheus-adapter-rules.schema.json"),),
        "prometheus-adapter `rules:` exposing that HPA's metric",
        "`autoscaling.enabled`, engine `hpa`",
        monitoring.adapter_rules,
        "autoscaler",
        outside="adapter configuration, not a cluster object",
        header=ADAPTER_HEADER,
    ),
    Kind(
        "scaledobject",
        _own("keda.sh/v1alpha1", "ScaledObject", "scaledobject.schema.json"),
        "KEDA `ScaledObject` `<name>` on the LWS",
        "`autoscaling.enabled`, engine `keda`",
        monitoring.scaledobject,
        "autoscaler",
        wave=2,
        per_role=True,
    ),
    Kind(
        "volcano-queue",
        _own("scheduling.volcano.sh/v1beta1", "Queue", "volcano-queue.schema.json"),
        "Volcano `Queue` `scheduling.queue`",
        "scheduler `volcano` with `scheduling.queueCapacity`",
        cluster.volcano_queue,
        "queue",
        outside="cluster-scoped and shared by deployments: applied once by its owner",
        header=QUEUE_HEADER,
        per_role=True,
    ),
    Kind(
        "nccl-test",
        (
            Document("v1", "ConfigMap"),
            Document("kubeflow.org/v2beta1", "MPIJob", "mpijob.schema.json"),
            Document("v1", "Service"),
            Document("batch/v1", "Job"),
            Document("networking.k8s.io/v1", "NetworkPolicy"),
        ),
        "NCCL all-reduce preflight: `MPIJob`, or `Service` + Indexed `Job`, with its `ConfigMap` "
        "and a `NetworkPolicy` admitting only the test's pods",
        "`ncclTest.enabled`",
        nccl.nccl_test,
        "nccl-test",
        outside="a one-off test, applied by hand",
        header=NCCL_HEADER,
        per_role=True,
    ),
    Kind(
        "eksctl-nodegroup",
        (Document(None, None, "eksctl-nodegroup.schema.json"),),
        "eksctl `nodeGroups` entry for Cluster Autoscaler",
        "`node.instanceType` is set",
        cluster.eksctl_node_group,
        "nodes",
        outside="eksctl configuration, not a cluster object",
        header=EKSCTL_HEADER,
        per_role=True,
    ),
    Kind(
        "kustomizeconfig",
        (Document(None, None, "kustomizeconfig.schema.json"),),
        "kustomize's transformer configuration for LeaderWorkerSet (name references, labels, images)",
        "always: the kustomization names it in `configurations:`, so overlays keep every reference",
        _transformer_config,
        "kustomization",
        outside="transformer configuration, not a resource",
        header=(
            "# How kustomize overlays (namePrefix/nameSuffix, namespace, labels, images) must treat\n"
            "# LeaderWorkerSet, which kustomize does not know. kustomization.yaml names this file in\n"
            "# `configurations:`; it is not a cluster object.\n"
        ),
    ),
    Kind(
        "kustomize-openapi",
        (Document(None, None, "kustomize-openapi.schema.json"),),
        "the OpenAPI schema kustomize merges patches with: merge keys of the LeaderWorkerSet's (or "
        "DisaggregatedSet's) pod templates, the PrometheusRule's groups and the core kinds",
        "always: the kustomization names it in `openapi:`, so strategic-merge patches merge containers, env, "
        "volumes and ports by name",
        patchschema.build,
        "kustomization",
        outside="kustomize's schema, not a resource",
        header=(
            "# The OpenAPI schema kustomize merges strategic-merge patches with (kustomization.yaml's\n"
            "# `openapi:`): merge keys for LeaderWorkerSet, DisaggregatedSet and PrometheusRule, which\n"
            "# kustomize does not know, and for the core kinds, whose built-in schema it replaces.\n"
            "# Generated from Kubernetes' OpenAPI; not a cluster object.\n"
        ),
    ),
    Kind(
        KUSTOMIZATION,
        _own("kustomize.config.k8s.io/v1beta1", "Kustomization", "kustomization.schema.json"),
        "lists every file above that is in the kustomization",
        "always",
        _kustomization,
        "kustomization",
        outside="it is the kustomization",
    ),
)
BY_KEY = {kind.key: kind for kind in KINDS}
BY_FILE = {kind.file: kind for kind in KINDS}


def file_of(key: str) -> str:
    """The file of a kind: lwsgen's, or one the profile's templates add (<key>.yaml, listed)."""
    return BY_KEY[key].file if key in BY_KEY else f"{key}.yaml"


def listed(key: str) -> bool:
    return BY_KEY[key].in_kustomization if key in BY_KEY else True


def project_schemas() -> dict[tuple[str, str], str]:
    """(apiVersion, kind) -> schema file, for the custom kinds lwsgen emits."""
    return {(d.api_version, d.kind): d.schema for k in KINDS for d in k.documents if d.kind and d.schema}


def core_kinds() -> tuple[tuple[str, str], ...]:
    """(apiVersion, kind) of the Kubernetes kinds lwsgen emits, validated against Kubernetes' own schemas."""
    seen = dict.fromkeys((d.api_version, d.kind) for k in KINDS for d in k.documents if d.kind and not d.schema)
    return tuple(seen)


def fragment_schemas() -> dict[str, str]:
    """File name -> schema, for files that are configuration fragments, not Kubernetes objects."""
    return {k.file: d.schema for k in KINDS for d in k.documents if d.kind is None}
