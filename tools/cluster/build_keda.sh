#!/bin/bash
# Build KEDA's operator (cmd/operator) from its module's source as the Go module proxy serves it, and keep
# the CRDs of the same release beside it.
# Usage: build_keda.sh OUT_BINARY OUT_CRD_DIR VERSION ZIP_SHA256
#
# Why not `go install`: KEDA's go.mod has replace directives, which go install refuses. The archive is
# pinned by its SHA-256, unpacked, and built as KEDA's Makefile@VERSION builds it (go build of
# cmd/operator with version.Version set); its dependencies come from the proxy by its own go.sum. The
# operator watches ScaledJobs, TriggerAuthentications and CloudEventSources too, so their CRDs
# (config/crd/bases) must be installed for it to start.
set -euo pipefail
out=$1 crds=$2 version=$3 sha=$4
module=github.com/kedacore/keda/v2
source "$(dirname "$0")/module_source.sh"
module_source "$module" "$version" "$sha"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X=$module/version.Version=$version" -o "$out" ./cmd/operator
rm -rf "$crds" && mkdir -p "$crds" && cp config/crd/bases/*.yaml "$crds/"
