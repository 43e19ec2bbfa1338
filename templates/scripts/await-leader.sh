#!/bin/bash
# lwsgen: the rendezvous of an engine whose pods dial the leader themselves (sglang): the leader
# waits (bounded) until every worker's address resolves; a worker waits until the leader's
# address resolves and its rendezvous port (LWSGEN_LEADER_PORT) accepts connections, so that a
# stale or absent leader is a "waiting" line and, at the bound, a clear failure, not a silent hang
# inside the engine. Then exec the command given as arguments, unchanged; the engine itself fails
# when a peer is lost (SGLang's scheduler broadcasts across the group on every loop).
set -euo pipefail
if [ "${LWS_WORKER_INDEX:-0}" = 0 ]; then LWSGEN_ROLE=leader; else LWSGEN_ROLE=worker; fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}" "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}"
(( $# > 0 )) || { log "no command given"; exit 2; }
workers_resolve() {
  local i missing=()
  for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
    resolves "$(worker_address "$i")" || missing+=("$(worker_address "$i")")
  done
  status="${#missing[@]} of $((LWS_GROUP_SIZE - 1)) workers do not resolve yet (${missing[*]:-})"
  (( ${#missing[@]} == 0 ))
}
leader_answers() {
  leader_resolves || return 1
  [ -n "${LWSGEN_LEADER_PORT:-}" ] || return 0
  status="the leader ${LWS_LEADER_ADDRESS} does not accept connections on port ${LWSGEN_LEADER_PORT} yet"
  answers "$LWS_LEADER_ADDRESS" "$LWSGEN_LEADER_PORT"
}
if [ "$LWSGEN_ROLE" = leader ]; then
  wait_until workers_resolve
else
  wait_until leader_answers
fi
log "starting: $*"
if [ -n "${LWSGEN_API_KEY_FLAG:-}" ]; then
  # service.apiKeySecret for an engine that takes its key only as a flag: appended here, unlogged.
  set -- "$@" "$LWSGEN_API_KEY_FLAG" "${LWSGEN_API_KEY:?the API key Secret is empty}"
fi
exec "$@"
