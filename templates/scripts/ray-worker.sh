#!/bin/bash
# lwsgen: worker of a Ray group (vllm, aphrodite). Retries (bounded, from this script's start)
# until the leader's address resolves and its Ray head answers, then joins and blocks; `ray start
# --block` exits non-zero when this node's Ray processes die (after the head is gone, within
# Ray's GCS reconnect timeout, 60 s by default), so the group is recreated. Every call is bounded;
# a join that fails at once is retried within the bound.
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}"
address="${LWS_LEADER_ADDRESS}:${LWSGEN_RAY_PORT}"
needs_ray
ray_head_answers() {
  leader_resolves || return 1
  status="the Ray head at ${address} does not answer yet"
  # A TCP connect first: `ray health-check` against a port nobody listens on waits ~40 s.
  answers "$LWS_LEADER_ADDRESS" "$LWSGEN_RAY_PORT" && bounded ray health-check --address "$address" >/dev/null 2>&1
}
wait_until ray_head_answers
# A worker no controller recreates with its head (KServe's InferenceService: two Deployments) watches
# the head's port: a head lost without a word (its node gone) leaves Ray retrying it for minutes.
ray_head_alive() {
  status="the Ray head at ${address} does not accept connections"
  watched_answers "$LWS_LEADER_ADDRESS" "$LWSGEN_RAY_PORT"
}
# `ray start --block` that fails at once (the head went away between the check and the join) is
# retried within the rendezvous bound; one that ran for a while ended because this node's Ray
# processes died, and its status is final (the group is recreated).
deadline=$((LWSGEN_STARTED + LWSGEN_RENDEZVOUS_TIMEOUT))
while :; do
  log "joining the Ray head at ${address}"
  joined=$SECONDS
  ray start --address="$address" --block &
  engine=$!
  code=0
  if [ -n "${LWSGEN_WATCH_EACH_OTHER:-}" ]; then
    watch_engine ray_head_alive || code=$?
  else
    wait "$engine" || code=$?
  fi
  engine=""
  if (( code == 0 || SECONDS - joined >= ${LWSGEN_JOIN_SETTLE_SECONDS:-30} || SECONDS >= deadline )); then
    log "ray start exited with status ${code}"
    exit "$code"
  fi
  log "waiting: ray start exited with status ${code} after $((SECONDS - joined))s; retrying"
  bounded ray stop --force >/dev/null 2>&1 || true
  nap "${LWSGEN_POLL_SECONDS:-5}"
done
