#!/bin/bash
# lwsgen: leader of an MPI group (triton-trtllm, trtllm-serve).
# Waits (bounded) until every pod of this group runs, then starts one rank per GPU across the
# group with mpirun, reaching the workers through kubectl exec (no sshd, no custom image).
# Arguments: the command every rank runs.
set -euo pipefail
LWSGEN_ROLE=leader
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GROUP_KEY:?from the leaderworkerset.sigs.k8s.io/group-key label}"
: "${POD_NAME:?}" "${POD_NAMESPACE:?}" "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}"
: "${LWSGEN_WORLD_SIZE:?}" "${LWSGEN_GPUS_PER_POD:?}" "${LWSGEN_MPIRUN:?}"
(( $# > 0 )) || { log "no rank command given"; exit 2; }

export PATH="/lwsgen/bin:$PATH"
errors=$(mktemp)
group_running() {
  local running
  if ! running=$(kubectl get pods --namespace "$POD_NAMESPACE" \
      --selector "leaderworkerset.sigs.k8s.io/group-key=$GROUP_KEY" \
      --field-selector status.phase=Running \
      --output 'jsonpath={.items[*].metadata.name}' 2>"$errors"); then
    log "listing the pods of this group failed: $(tr '\n' ' ' <"$errors")"
    running=""
  fi
  local pods
  read -r -a pods <<<"$running"
  status="${#pods[@]} of ${LWS_GROUP_SIZE} pods of group ${GROUP_KEY} are running (${running:-none})"
  (( ${#pods[@]} >= LWS_GROUP_SIZE ))
}
wait_until group_running
rm -f "$errors"

# Rank 0 must run on this pod (the Service sends clients here), so the leader comes first;
# LeaderWorkerSet names the workers of this group <leader pod>-1 ... <leader pod>-(size-1).
hosts="${POD_NAME}:${LWSGEN_GPUS_PER_POD}"
for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
  hosts+=",${POD_NAME}-${i}:${LWSGEN_GPUS_PER_POD}"
done
log "all ${LWS_GROUP_SIZE} pods are running; starting ${LWSGEN_WORLD_SIZE} ranks on ${hosts}: $*"
# An absolute mpirun path makes OpenMPI use the same installation prefix on the workers.
exec "$LWSGEN_MPIRUN" --allow-run-as-root --report-bindings --bind-to none \
  --mca plm_rsh_agent /lwsgen/scripts/kubectl-rsh \
  -np "$LWSGEN_WORLD_SIZE" --host "$hosts" \
  "$@"
