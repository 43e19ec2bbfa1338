# Included by the Makefile; apart from versions.mk so a KEDA pin does not rebuild make cluster's components.
# KEDA's operator (make keda, not part of make cluster: ~11 min to build cold): the proxy's source archive,
# checked against this SHA-256 by tools/cluster/build_keda.sh (go install refuses a go.mod with replace lines)
KEDA_VERSION := v2.21.0
KEDA_ZIP_SHA256 := 74b59fe16144250748b716d6dc8789dee52d26164daab732145bed60456013a4
