#!/bin/sh
# Argo CD config-management plugin `generate` for lwsgen (docs/argocd/plugin.yaml): prints the
# cluster objects of the application's profiles as one stream; writes nothing, reads no network.
# `lwsgen argocd-generate` reads the parameters as Argo CD passes them (ARGOCD_APP_PARAMETERS and
# PARAM_*, else plugin env ARGOCD_ENV_*), ARGOCD_APP_NAMESPACE, KUBE_VERSION and
# ARGOCD_APP_SOURCE_PATH (lwsgen/commands/argocd.py cites Argo CD's source); values are passed as
# arguments, never evaluated by a shell. Argo CD's HOME may be read-only: lwsgen needs no cache.
exec lwsgen argocd-generate
