#!/bin/bash
# lwsgen: worker of an MPI group (triton-trtllm, trtllm-serve). The leader's mpirun starts this
# pod's ranks through kubectl exec; this process only keeps the pod alive until it is stopped.
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

sleeper=""
stop() {
  log "stopping"
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true
  exit 0
}
trap stop TERM INT
log "waiting for the leader to start MPI ranks in this pod"
while :; do
  sleep 3600 &
  sleeper=$!
  wait "$sleeper" || true
done
