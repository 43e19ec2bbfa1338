#!/bin/bash
# lwsgen: leader of one Triton + TensorRT-LLM group.
# Waits (bounded) until every pod of this group runs, then starts one tritonserver rank per GPU
# across the group with mpirun, reaching the workers through kubectl exec (no sshd needed).
# Arguments: extra tritonserver arguments, passed to every rank unchanged.
set -euo pipefail

log() { printf 'lwsgen leader: %s\n' "$*"; }

: "${GROUP_KEY:?from the leaderworkerset.sigs.k8s.io/group-key label}"
: "${POD_NAME:?}" "${POD_NAMESPACE:?}" "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}"
: "${LWSGEN_WORLD_SIZE:?}" "${LWSGEN_GPUS_PER_POD:?}" "${LWSGEN_MODEL_REPOSITORY:?}"
: "${LWSGEN_MPIRUN:?}" "${LWSGEN_RENDEZVOUS_TIMEOUT:?}"

export PATH="/lwsgen/bin:$PATH"
errors=$(mktemp)
deadline=$((SECONDS + LWSGEN_RENDEZVOUS_TIMEOUT))
while :; do
  if ! running=$(kubectl get pods --namespace "$POD_NAMESPACE" \
      --selector "leaderworkerset.sigs.k8s.io/group-key=$GROUP_KEY" \
      --field-selector status.phase=Running \
      --output 'jsonpath={.items[*].metadata.name}' 2>"$errors"); then
    log "listing the pods of this group failed: $(tr '\n' ' ' <"$errors")"
    running=""
  fi
  read -r -a pods <<<"$running"
  if (( ${#pods[@]} >= LWS_GROUP_SIZE )); then
    break
  fi
  if (( SECONDS >= deadline )); then
    log "gave up after ${LWSGEN_RENDEZVOUS_TIMEOUT}s: ${#pods[@]} of ${LWS_GROUP_SIZE} pods of group ${GROUP_KEY} are running (${running:-none})"
    exit 1
  fi
  log "waiting: ${#pods[@]} of ${LWS_GROUP_SIZE} pods of group ${GROUP_KEY} are running"
  sleep "${LWSGEN_POLL_SECONDS:-5}"
done
rm -f "$errors"

# Rank 0 must run on this pod (the Service sends clients here), so the leader comes first;
# LeaderWorkerSet names the workers of this group <leader pod>-1 ... <leader pod>-(size-1).
hosts="${POD_NAME}:${LWSGEN_GPUS_PER_POD}"
for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
  hosts+=",${POD_NAME}-${i}:${LWSGEN_GPUS_PER_POD}"
done
log "all ${LWS_GROUP_SIZE} pods are running; starting ${LWSGEN_WORLD_SIZE} tritonserver ranks on ${hosts}"
exec "$LWSGEN_MPIRUN" --allow-run-as-root --report-bindings --bind-to none \
  --mca plm_rsh_agent /lwsgen/scripts/kubectl-rsh \
  -np "$LWSGEN_WORLD_SIZE" --host "$hosts" \
  /bin/bash /lwsgen/scripts/triton-rank.sh "$LWSGEN_MODEL_REPOSITORY" "$@"
