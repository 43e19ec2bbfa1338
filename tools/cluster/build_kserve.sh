#!/bin/bash
# Build KServe's LLMInferenceService controller (cmd/llmisvc) from its module's source as the Go module
# proxy serves it, and keep beside it what a test needs to run it, from the same release.
# Usage: build_kserve.sh OUT_BINARY OUT_CONFIG_DIR VERSION ZIP_SHA256
#
# Why not `go install`: KServe's go.mod has replace directives (k8s.io/*, controller-runtime, grpc, ...),
# which go install refuses. The archive is pinned by its SHA-256, unpacked, and built as
# llmisvc-controller.Dockerfile@VERSION builds it (CGO_ENABLED=0 go build ./cmd/llmisvc); its
# dependencies come from the proxy by its own go.sum.
#
# OUT_CONFIG_DIR gets, copied as the files are (nothing rendered):
#   crds/     the LLMInferenceService and LLMInferenceServiceConfig CRDs (config/crd/full/llmisvc, both
#             v1alpha1 and v1alpha2 served, v1alpha2 stored, no conversion: the release's kustomize patch
#             that adds a conversion webhook is left out). ~2.2 MB each: create them (or server-side
#             apply); client-side kubectl apply's last-applied annotation is too big for them.
#   dep-crds/ the other CRDs the controller watches, as KServe's own envtests install them: Gateway API
#             v1.5.1 Gateway, GatewayClass, HTTPRoute (test/crds) and InferencePool (v1 and
#             x-k8s.io v1alpha2) plus llm-d.ai InferenceObjective/InferenceModelRewrite
#             (config/llmisvc/gateway-inference-extension.yaml). LeaderWorkerSet's CRD is not here.
#   presets/  the well-known LLMInferenceServiceConfigs (config/llmisvcconfig/config-*.yaml). Most carry
#             no metadata.namespace: the release's kustomization puts them in "kserve", so create them
#             there (-n kserve). Their {{ ... }} fields are Go templates the controller renders itself.
#   isvc-crds/ the TrainedModel, InferenceGraph and ClusterStorageContainer CRDs cmd/manager (the
#             InferenceService controller, built beside OUT_BINARY as kserve-manager) watches.
#   inferenceservice-config.yaml  the inferenceservice-config ConfigMap (config/configmap), namespace kserve.
set -euo pipefail
out=$1 cfg=$2 version=$3 sha=$4
module=github.com/kserve/kserve
source "$(dirname "$0")/module_source.sh"
module_source "$module" "$version" "$sha"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out" ./cmd/llmisvc
# and the InferenceService controller (cmd/manager) beside it, as kserve-manager
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$(dirname "$out")/kserve-manager" ./cmd/manager
rm -rf "$cfg" && mkdir -p "$cfg/crds" "$cfg/dep-crds" "$cfg/presets"
cp config/crd/full/llmisvc/serving.kserve.io_*.yaml "$cfg/crds/"
# what cmd/manager watches beside the InferenceService and runtime CRDs of ../shared/crds
mkdir -p "$cfg/isvc-crds"
cp config/crd/full/serving.kserve.io_{trainedmodels,inferencegraphs}.yaml \
  config/crd/full/clusterstoragecontainer/serving.kserve.io_clusterstoragecontainers.yaml "$cfg/isvc-crds/"
cp test/crds/gatewayapi_*.yaml config/llmisvc/gateway-inference-extension.yaml "$cfg/dep-crds/"
cp config/llmisvcconfig/config-*.yaml "$cfg/presets/"
cp config/configmap/inferenceservice.yaml "$cfg/inferenceservice-config.yaml"
