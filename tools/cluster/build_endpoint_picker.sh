#!/bin/bash
# Build llm-d-router's endpoint picker (cmd/epp) from its module's source as the Go module proxy serves it.
# Usage: build_endpoint_picker.sh OUT_BINARY VERSION ZIP_SHA256
#
# Why not `go install`: for github.com/llm-d/llm-d-router@v0.10.0 the proxy answers 403 for .info and
# .mod ("This module version is not available"), which go's tooling asks first, but serves the source
# archive (.zip). The archive is pinned by its SHA-256 (the file list and contents equal the v0.10.0 tag's,
# checked once against the tag's tree), unpacked, and built as Dockerfile.epp@v0.10.0 builds it
# (CGO_ENABLED=0 go build cmd/epp/main.go); its dependencies come from the proxy by its own go.sum.
set -euo pipefail
out=$1 version=$2 sha=$3
module=github.com/llm-d/llm-d-router
source "$(dirname "$0")/module_source.sh"
module_source "$module" "$version" "$sha"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $module/version.BuildRef=$version" -o "$out" ./cmd/epp
