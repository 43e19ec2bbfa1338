#!/bin/bash
# Build Istio's istiod (pilot-discovery) from its module, and keep the Gateway API CRDs it watches that
# ../shared/crds lacks (its gateways and httproutes are kept from there).
# Usage: build_istiod.sh OUT_DIR OUT_CRD_DIR ISTIO_VERSION GATEWAY_API_VERSION
#
# istio.io/istio's go.mod has no replace lines, so go install builds it as released (no -trimpath: the
# ~1,500 packages' build cache is shared with a plain go build of the same module).
set -euo pipefail
out=$1 crds=$2 version=$3 gateway_api=$4
GOBIN=$out GOFLAGS=-mod=mod go install -ldflags="-s -w" "istio.io/istio/pilot/cmd/pilot-discovery@$version"
go mod download "sigs.k8s.io/gateway-api@$gateway_api"
standard="$(go env GOMODCACHE)/sigs.k8s.io/gateway-api@$gateway_api/config/crd/standard"
rm -rf "$crds" && mkdir -p "$crds"
for crd in "$standard"/gateway.networking.k8s.io_*.yaml; do
  case "$(basename "$crd")" in
    *_gateways.yaml | *_httproutes.yaml | *_vap_*) ;;  # kept from ../shared/crds; a policy, not a CRD
    *) cp "$crd" "$crds/" ;;
  esac
done
