#!/bin/bash
# lwsgen: wait (bounded) until the group leader's address resolves, then exec the command given
# as arguments, unchanged. Engines that dial $(LWS_LEADER_ADDRESS) once at start (sglang) would
# otherwise crash and, under RecreateGroupOnPodRestart, recreate the whole group.
set -euo pipefail
LWSGEN_ROLE=${LWSGEN_ROLE:-pod}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}"
(( $# > 0 )) || { log "no command given"; exit 2; }
leader_resolves() {
  status="the leader address ${LWS_LEADER_ADDRESS} does not resolve yet"
  resolves "$LWS_LEADER_ADDRESS"
}
wait_until leader_resolves
log "starting: $*"
if [ -n "${LWSGEN_API_KEY_FLAG:-}" ]; then
  # service.apiKeySecret for an engine that takes its key only as a flag: appended here, unlogged.
  set -- "$@" "$LWSGEN_API_KEY_FLAG" "${LWSGEN_API_KEY:?the API key Secret is empty}"
fi
exec "$@"
