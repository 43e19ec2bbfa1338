#!/bin/bash
# lwsgen: the rendezvous of an engine whose pods dial the leader themselves (sglang; vllm and
# aphrodite launched natively, --nnodes with --headless workers): the leader
# waits (bounded) until every worker's address resolves; a worker waits until the leader's
# address resolves and its rendezvous port (LWSGEN_LEADER_PORT) accepts connections, so that a
# stale or absent leader is a "waiting" line and, at the bound, a clear failure, not a silent hang
# inside the engine. Then exec the command given as arguments, unchanged. Neither engine notices a
# node that vanished without closing its sockets (power or link loss: vLLM's leader learns of it
# only at its next step, SGLang's collectives wait on it): with a beacon (LWSGEN_BEACON_PORT) each
# worker answers on it from its start, the leader waits for every beacon before the engine and
# then watches them, and exits 1 when one is gone for 3 polls (lib.sh beacon, beacons_answer).
# Where no controller recreates the group (LWSGEN_WATCH_EACH_OTHER), the worker watches the leader too.
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
leader_beacon_answers() {
  status="the leader ${LWS_LEADER_ADDRESS} does not answer on port ${LWSGEN_BEACON_PORT}"
  beacon_answers "$LWS_LEADER_ADDRESS"
}
# Pods that no controller recreates as a group (KServe's head and worker Deployments) watch each
# other: the leader answers on a beacon too, and the worker stops its engine when the leader is gone.
watch_each_other=""
[ -z "${LWSGEN_WATCH_EACH_OTHER:-}" ] || [ -z "${LWSGEN_BEACON_PORT:-}" ] || watch_each_other=1
if [ "$LWSGEN_ROLE" = leader ]; then
  [ -z "$watch_each_other" ] || beacon
  wait_until workers_resolve
  [ -z "${LWSGEN_BEACON_PORT:-}" ] || wait_until beacons_answer
else
  [ -z "${LWSGEN_BEACON_PORT:-}" ] || beacon
  wait_until leader_answers
fi
if [ "$LWSGEN_ROLE" = worker ] && [ -n "${LWSGEN_DP_RANKS_PER_POD:-}" ]; then
  # vLLM data parallelism: this pod's first rank, from its index (the kubelet cannot multiply)
  set -- "$@" --data-parallel-start-rank "$((LWS_WORKER_INDEX * LWSGEN_DP_RANKS_PER_POD))"
fi
log "starting: $*"
if [ -n "${LWSGEN_API_KEY_FLAG:-}" ]; then
  # service.apiKeySecret for an engine that takes its key only as a flag: appended here, unlogged.
  set -- "$@" "$LWSGEN_API_KEY_FLAG" "${LWSGEN_API_KEY:?the API key Secret is empty}"
fi
if [ "$LWSGEN_ROLE" = leader ] && [ -n "${LWSGEN_BEACON_PORT:-}" ] && (( LWS_GROUP_SIZE > 1 )); then
  supervise beacons_answer "$@"
fi
if [ "$LWSGEN_ROLE" = worker ] && [ -n "$watch_each_other" ]; then
  supervise leader_beacon_answers "$@"
fi
exec "$@"
