#!/bin/bash
# lwsgen: leader of a Ray group (vllm, aphrodite).
# Starts the Ray head, waits (bounded, from this script's start) until every pod of the group
# joined as a Ray node, then runs the serve command given as arguments, unchanged, and watches the
# group: when a Ray node is gone, it stops the engine and exits 1 so LeaderWorkerSet recreates the
# group (vLLM would keep serving on fewer nodes, or hang).
set -euo pipefail
LWSGEN_ROLE=leader
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}"
(( $# > 0 )) || { log "no serve command given"; exit 2; }
needs_ray

LWSGEN_CHECK_SECONDS=${LWSGEN_RENDEZVOUS_TIMEOUT:?} bounded \
  ray start --head --port="$LWSGEN_RAY_PORT" --disable-usage-stats
# Alive nodes as the GCS lists them: no driver is attached (ray.init per poll would add a job
# each time); ray.nodes() where the image's Ray has no GcsClient.
count_nodes='
import sys
try:
    from ray._raylet import GcsClient
    nodes = GcsClient(address=sys.argv[1]).get_all_node_info(timeout=5).values()
    print(sum(1 for node in nodes if node.state == 0))  # GcsNodeInfo.ALIVE
except ImportError:
    import ray
    ray.init(address=sys.argv[1], logging_level="ERROR")
    print(sum(1 for node in ray.nodes() if node["Alive"]))
'
# alive_nodes: the count, or nothing when the GCS did not answer within the check's bound.
alive_nodes() {
  local nodes
  nodes=$(bounded python3 -c "$count_nodes" "127.0.0.1:${LWSGEN_RAY_PORT}" 2>/dev/null | tail -n 1) || nodes=""
  [[ "$nodes" =~ ^[0-9]+$ ]] && echo "$nodes"
}
ray_nodes_joined() {
  local nodes
  nodes=$(alive_nodes) || nodes=0
  status="${nodes} of ${LWS_GROUP_SIZE} Ray nodes joined"
  (( nodes >= LWS_GROUP_SIZE ))
}
# While serving, a poll the GCS does not answer within the check's bound is a failed poll, as one
# that lists fewer alive nodes is: a GCS that cannot say the group is whole must not keep a group
# with a dead node serving. supervise ends the group after LWSGEN_WATCH_FAILURES such polls in a
# row, saying which.
ray_group_intact() {
  local nodes
  if ! nodes=$(alive_nodes); then
    status="the Ray GCS did not answer within ${LWSGEN_CHECK_SECONDS:-10}s"
    return 1
  fi
  status="${nodes} of ${LWS_GROUP_SIZE} Ray nodes alive"
  (( nodes >= LWS_GROUP_SIZE ))
}
wait_until ray_nodes_joined
log "all ${LWS_GROUP_SIZE} Ray nodes joined; starting: $*"
supervise ray_group_intact "$@"
