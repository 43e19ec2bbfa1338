# Included by the Makefile; apart from versions.mk so an Istio pin does not rebuild make cluster's components.
# Istio's istiod (pilot-discovery), the Gateway implementation that writes the InferencePool status the health
# checks read (make istio, ~7 min cold). The module proxy serves no tagged istio.io/istio (403 for 1.28.0 and
# later); this pseudo-version is the commit eed52ebb66ad of 2026-08-27 (1.31 development: it requires
# istio.io/api v1.31.0-rc.0), checked by Go's checksum database like any module.
ISTIO_VERSION := v0.0.0-20260827124520-eed52ebb66ad
# The Gateway API release that Istio version requires: its GatewayClass and ReferenceGrant CRDs, which istiod
# watches and ../shared/crds does not have
GATEWAY_API_VERSION := v1.6.0
