#!/bin/sh
# Argo CD config-management plugin `generate` for lwsgen (docs/argocd/plugin.yaml): prints the
# cluster objects of the application's profiles as one stream; writes nothing, reads no network.
# Parameters (plugin.yaml `parameters`, Argo CD passes them as ARGOCD_ENV_<NAME>):
#   PROFILE  a profile file or directory, relative to the application path (default: .)
#   STRICT   true: warnings fail the sync
#   INCLUDE  comma-separated kinds outside the kustomization to add (e.g. nccl-test)
# Values are passed as arguments, never evaluated by a shell.
set -eu
profile=${ARGOCD_ENV_PROFILE:-.}
case "$profile" in
  /* | ../* | */../* | ..) echo "lwsgen plugin: PROFILE must stay inside the application path" >&2; exit 1 ;;
esac
set -- render "$profile" --stdout
[ "${ARGOCD_ENV_STRICT:-false}" = true ] && set -- "$@" --strict
if [ -n "${ARGOCD_ENV_INCLUDE:-}" ]; then
  old_ifs=$IFS; IFS=,
  for kind in $ARGOCD_ENV_INCLUDE; do set -- "$@" --include "$kind"; done
  IFS=$old_ifs
fi
# Argo CD's HOME may be read-only: lwsgen then runs without its cache (the image ships none needed).
exec lwsgen "$@"
