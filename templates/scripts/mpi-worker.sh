#!/bin/bash
# lwsgen: worker of an MPI group (triton-trtllm, trtllm-serve). The leader's mpirun starts this
# pod's ranks through kubectl exec, under an OpenMPI daemon (orted, or prted in OpenMPI 5) that
# runs in this container. This process keeps the pod alive and watches for that daemon: none
# within the rendezvous bound means the leader never started the job (exit 1, with the reason);
# the daemon gone after it ran means the leader's mpirun ended, so the ranks here are orphans and
# the group must be recreated (exit 1). It answers the leader's watch on LWSGEN_BEACON_PORT from
# its start (lib.sh beacon).
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

daemon_runs() {
  local comm
  for comm in /proc/[0-9]*/comm; do
    read -r comm <"$comm" 2>/dev/null || continue
    [[ "$comm" == orted || "$comm" == prted ]] && return 0
  done
  return 1
}
ranks_started() {
  status="the leader has not started MPI ranks in this pod yet"
  daemon_runs
}
[ -z "${LWSGEN_BEACON_PORT:-}" ] || beacon
log "waiting for the leader to start MPI ranks in this pod"
wait_until ranks_started
log "the leader started MPI ranks in this pod"
gone=0
while :; do
  nap "${LWSGEN_POLL_SECONDS:-5}"
  if daemon_runs; then
    gone=0
    continue
  fi
  gone=$((gone + 1))
  if (( gone >= ${LWSGEN_WATCH_FAILURES:-3} )); then
    log "the MPI daemon in this pod is gone: the leader's mpirun ended; exiting so LeaderWorkerSet recreates the group"
    exit 1
  fi
done
