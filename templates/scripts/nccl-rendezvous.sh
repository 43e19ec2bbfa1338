#!/bin/bash
# lwsgen: rendezvous of the NCCL test's Indexed Job, then exec torchrun (the arguments). Pod 0
# hosts torchrun's store and would wait silently up to torch's rendezvous limit; here every pod
# waits (bounded, logging) until every test pod's name resolves, and the other pods also until
# pod 0 accepts connections on the master port.
set -euo pipefail
LWSGEN_ROLE="nccl-test ${JOB_COMPLETION_INDEX:?set by the Job controller}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWSGEN_TEST_PODS:?}" "${LWSGEN_MASTER:?}" "${LWSGEN_MASTER_PORT:?}" "${LWSGEN_SUBDOMAIN:?}"
(( $# > 0 )) || { log "no torchrun command given"; exit 2; }
job=${LWSGEN_MASTER%-0.*}
peers_ready() {
  local i missing=()
  for ((i = 0; i < LWSGEN_TEST_PODS; i++)); do
    resolves "${job}-${i}.${LWSGEN_SUBDOMAIN}" || missing+=("${job}-${i}")
  done
  status="${#missing[@]} of ${LWSGEN_TEST_PODS} test pods do not resolve yet (${missing[*]:-})"
  (( ${#missing[@]} == 0 )) || return 1
  [ "$JOB_COMPLETION_INDEX" = 0 ] && return 0
  status="pod 0 (${LWSGEN_MASTER}) does not accept connections on port ${LWSGEN_MASTER_PORT} yet"
  answers "$LWSGEN_MASTER" "$LWSGEN_MASTER_PORT"
}
wait_until peers_ready
log "all ${LWSGEN_TEST_PODS} test pods are there; starting: $*"
exec "$@"
