# The upstream components make cluster builds (Makefile includes this; tests/cluster/modules.py reads it).
# k8s.io/kubernetes and etcd are pinned in tests/cluster/gomod/kube/go.mod (etcd at the version Kubernetes requires).
KUBERNETES_VERSION := v1.36.3
LWS_VERSION := v0.10.0
KWOK_VERSION := v0.8.0
PROMETHEUS_ADAPTER_VERSION := v0.12.0
