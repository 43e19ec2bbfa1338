#!/bin/bash
# lwsgen: worker of a Ray-based group (vLLM, Aphrodite).
# The leader's DNS name can stay unresolvable for a while after the group is created, so retry
# (bounded) until it resolves and its Ray head answers, then join and block.
set -euo pipefail

log() { printf 'lwsgen worker: %s\n' "$*"; }

: "${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}" "${LWSGEN_RENDEZVOUS_TIMEOUT:?}"
address="${LWS_LEADER_ADDRESS}:${LWSGEN_RAY_PORT}"
deadline=$((SECONDS + LWSGEN_RENDEZVOUS_TIMEOUT))
until getent hosts "$LWS_LEADER_ADDRESS" >/dev/null && ray health-check --address "$address" >/dev/null 2>&1; do
  if (( SECONDS >= deadline )); then
    log "gave up after ${LWSGEN_RENDEZVOUS_TIMEOUT}s: the Ray head at ${address} never answered"
    exit 1
  fi
  log "waiting for the Ray head at ${address}"
  sleep "${LWSGEN_POLL_SECONDS:-5}"
done
log "joining the Ray head at ${address}"
exec ray start --address="$address" --block
