#!/bin/bash
# lwsgen: worker of a Ray group (vllm, aphrodite). Retries (bounded) until the leader's address
# resolves and its Ray head answers, then joins and blocks.
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
  ray health-check --address "$address" >/dev/null 2>&1
}
wait_until ray_head_answers
log "joining the Ray head at ${address}"
exec ray start --address="$address" --block
