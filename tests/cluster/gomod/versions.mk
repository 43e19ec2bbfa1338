# The upstream components make cluster builds (Makefile includes this; tests/cluster/modules.py reads it).
# k8s.io/kubernetes and etcd are pinned in tests/cluster/gomod/kube/go.mod (etcd at the version Kubernetes requires).
KUBERNETES_VERSION := v1.36.3
LWS_VERSION := v0.10.0
KWOK_VERSION := v0.8.0
PROMETHEUS_ADAPTER_VERSION := v0.12.0
# llm-d-router's endpoint picker: the proxy serves this version's source archive but not its .info/.mod, so
# tools/cluster/build_endpoint_picker.sh fetches the archive and checks it against this SHA-256
ENDPOINT_PICKER_VERSION := v0.10.0
ENDPOINT_PICKER_ZIP_SHA256 := 9524db96c27fb21544c0ab0cf68b0b5f4092a0a43f2ef0121583daa639181946
KUBE_STATE_METRICS_VERSION := v2.20.0
