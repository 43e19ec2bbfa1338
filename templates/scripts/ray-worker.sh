#!/bin/bash
# lwsgen: worker of a Ray group (vllm, aphrodite). Retries (bounded, from this script's start)
# until the leader's address resolves and its Ray head answers, then joins and blocks; `ray start
# --block` exits non-zero when this node's Ray processes die (after the head is gone, within
# Ray's GCS reconnect timeout, 60 s by default), so the group is recreated.
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}"
address="${LWS_LEADER_ADDRESS}:${LWSGEN_RAY_PORT}"
ray_head_answers() {
  if ! resolves "$LWS_LEADER_ADDRESS"; then
    status="the leader address ${LWS_LEADER_ADDRESS} does not resolve yet"
    return 1
  fi
  status="the Ray head at ${address} does not answer yet"
  # A TCP connect first: `ray health-check` against a port nobody listens on waits ~40 s.
  answers "$LWS_LEADER_ADDRESS" "$LWSGEN_RAY_PORT" && bounded ray health-check --address "$address" >/dev/null 2>&1
}
wait_until ray_head_answers
log "joining the Ray head at ${address}"
exec ray start --address="$address" --block
