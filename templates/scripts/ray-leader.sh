#!/bin/bash
# lwsgen: leader of a Ray-based group (vLLM, Aphrodite).
# Starts the Ray head, waits (bounded) until every pod of the group joined as a Ray node, then
# execs the serve command given as arguments, unchanged.
set -euo pipefail

log() { printf 'lwsgen leader: %s\n' "$*"; }

: "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}" "${LWSGEN_RENDEZVOUS_TIMEOUT:?}"
(( $# > 0 )) || { log "no serve command given"; exit 2; }

ray start --head --port="$LWSGEN_RAY_PORT" --disable-usage-stats
count_nodes='import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))'
deadline=$((SECONDS + LWSGEN_RENDEZVOUS_TIMEOUT))
while :; do
  nodes=$(python3 -c "$count_nodes" 2>/dev/null | tail -n 1) || nodes=0
  [[ "$nodes" =~ ^[0-9]+$ ]] || nodes=0
  if (( nodes >= LWS_GROUP_SIZE )); then
    break
  fi
  if (( SECONDS >= deadline )); then
    log "gave up after ${LWSGEN_RENDEZVOUS_TIMEOUT}s: ${nodes} of ${LWS_GROUP_SIZE} Ray nodes joined"
    exit 1
  fi
  log "waiting: ${nodes} of ${LWS_GROUP_SIZE} Ray nodes joined"
  sleep "${LWSGEN_POLL_SECONDS:-5}"
done
log "all ${LWS_GROUP_SIZE} Ray nodes joined; starting: $*"
exec "$@"
