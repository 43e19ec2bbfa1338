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
# A pod counts once its containers run and are ready: a pod whose container died keeps phase Running.
listing='{range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[*].ready}{"\n"}{end}'
group_running() {
  local listed
  if ! listed=$(bounded kubectl get pods --namespace "$POD_NAMESPACE" \
      --selector "leaderworkerset.sigs.k8s.io/group-key=$GROUP_KEY" \
      --field-selector status.phase=Running \
      --output "jsonpath=${listing}" 2>"$errors"); then
    log "listing the pods of this group failed: $(tr '\n' ' ' <"$errors")"
    listed=""
  fi
  local ready=() name flags
  while read -r name flags; do
    [ -n "$name" ] && [[ " $flags " == *" true "* && " $flags " != *" false "* ]] && ready+=("$name")
  done <<<"$listed"
  status="${#ready[@]} of ${LWS_GROUP_SIZE} pods of group ${GROUP_KEY} run ready (${ready[*]:-none})"
  (( ${#ready[@]} >= LWS_GROUP_SIZE ))
}
wait_until group_running
rm -f "$errors"

# Rank 0 must run on this pod (the Service sends clients here), so the leader comes first;
# LeaderWorkerSet names the workers of this group <leader pod>-1 ... <leader pod>-(size-1), and
# their DNS names are the leader's address with that name (kubectl-rsh takes the pod name from it).
hosts="${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}:${LWSGEN_GPUS_PER_POD}"
for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
  hosts+=",$(worker_address "$i"):${LWSGEN_GPUS_PER_POD}"
done
log "all ${LWS_GROUP_SIZE} pods are running; starting ${LWSGEN_WORLD_SIZE} ranks on ${hosts}: $*"
# An absolute mpirun path makes OpenMPI use the same installation prefix on the workers.
exec "$LWSGEN_MPIRUN" --allow-run-as-root --report-bindings --bind-to none \
  --mca plm_rsh_agent /lwsgen/scripts/kubectl-rsh \
  -np "$LWSGEN_WORLD_SIZE" --host "$hosts" \
  "$@"
