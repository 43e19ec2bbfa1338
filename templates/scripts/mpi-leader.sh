#!/bin/bash
# lwsgen: leader of an MPI group (triton-trtllm, trtllm-serve).
# Waits (bounded) until every worker of this group runs ready, then starts one rank per GPU across
# the group with mpirun, reaching the workers through kubectl exec (no sshd, no custom image).
# This pod is not waited for: it runs (this script is in it), and its readiness probe asks the
# server that rank 0 starts only after this wait. While mpirun runs, the workers' beacons
# (LWSGEN_BEACON_PORT) are watched: OpenMPI does not notice a node that vanished without closing
# its sockets, so the leader stops mpirun and exits 1 and LeaderWorkerSet recreates the group.
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
# A worker counts once its containers run and are ready: a pod whose container died keeps phase
# Running. This pod (POD_NAME) counts as it is: it is running this script.
listing='{range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[*].ready}{"\n"}{end}'
workers_running() {
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
    [ -n "$name" ] && [ "$name" != "$POD_NAME" ] || continue
    [[ " $flags " == *" true "* && " $flags " != *" false "* ]] && ready+=("$name")
  done <<<"$listed"
  status="${#ready[@]} of $((LWS_GROUP_SIZE - 1)) workers of group ${GROUP_KEY} run ready (${ready[*]:-none})"
  (( ${#ready[@]} >= LWS_GROUP_SIZE - 1 ))
}
wait_until workers_running
[ -z "${LWSGEN_BEACON_PORT:-}" ] || wait_until beacons_answer
rm -f "$errors"

# Rank 0 must run on this pod (the Service sends clients here), so the leader comes first;
# LeaderWorkerSet names the workers of this group <leader pod>-1 ... <leader pod>-(size-1), and
# their DNS names are the leader's address with that name (kubectl-rsh takes the pod name from it).
hosts="${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}:${LWSGEN_GPUS_PER_POD}"
for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
  hosts+=",$(worker_address "$i"):${LWSGEN_GPUS_PER_POD}"
done
log "all $((LWS_GROUP_SIZE - 1)) workers run ready; starting ${LWSGEN_WORLD_SIZE} ranks on ${hosts}: $*"
# An absolute mpirun path makes OpenMPI use the same installation prefix on the workers.
set -- "$LWSGEN_MPIRUN" --allow-run-as-root --report-bindings --bind-to none \
  --mca plm_rsh_agent /lwsgen/scripts/kubectl-rsh \
  -np "$LWSGEN_WORLD_SIZE" --host "$hosts" \
  "$@"
if [ -n "${LWSGEN_BEACON_PORT:-}" ] && (( LWS_GROUP_SIZE > 1 )); then
  supervise beacons_answer "$@"
fi
exec "$@"
