# Included by the Makefile; apart from versions.mk so a KServe pin does not rebuild make cluster's components.
# KServe's LLMInferenceService controller (cmd/llmisvc): the proxy's source archive, checked against this
# SHA-256 by tools/cluster/build_kserve.sh (go install refuses a go.mod with replace lines)
KSERVE_VERSION := v0.20.0
KSERVE_ZIP_SHA256 := 69ad75e6658dac96a293a44c1334c854bd282c02952b80bf2392058d0887066d
