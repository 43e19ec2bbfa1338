#!/bin/bash
# lwsgen: leader of a Ray group (vllm, aphrodite).
# Starts the Ray head, waits (bounded) until every pod of the group joined as a Ray node, then
# execs the serve command given as arguments, unchanged.
set -euo pipefail
LWSGEN_ROLE=leader
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}" "${LWSGEN_RAY_PORT:?}"
(( $# > 0 )) || { log "no serve command given"; exit 2; }

ray start --head --port="$LWSGEN_RAY_PORT" --disable-usage-stats
count_nodes='import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))'
ray_nodes_joined() {
  local nodes
  nodes=$(python3 -c "$count_nodes" 2>/dev/null | tail -n 1) || nodes=0
  [[ "$nodes" =~ ^[0-9]+$ ]] || nodes=0
  status="${nodes} of ${LWS_GROUP_SIZE} Ray nodes joined"
  (( nodes >= LWS_GROUP_SIZE ))
}
wait_until ray_nodes_joined
log "all ${LWS_GROUP_SIZE} Ray nodes joined; starting: $*"
exec "$@"
