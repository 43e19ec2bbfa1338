#!/bin/bash
# lwsgen: leader of a llama.cpp RPC group. Waits (bounded) until every worker of its own group
# answers on its beacon and each of its rpc-servers accepts connections, then runs llama-server
# (the arguments) with --rpc listing them (LWSGEN_RPC_SERVERS per worker, on consecutive ports
# from LWSGEN_RPC_PORT); llama.cpp spreads the layers over the leader's GPUs and the workers'.
# Once llama-server runs, no connection is ever opened to an rpc-server port again: rpc-server
# serves one client at a time with a listen backlog of 1 (ggml/src/ggml-rpc, transport.cpp
# listen(sockfd, 1), rpc_serve_client inline in the accept loop), so a probe would queue behind
# llama-server's connection and fail. The workers' beacons (LWSGEN_BEACON_PORT) are watched
# instead: when one is gone for 3 polls llama-server is stopped and this exits 1 (the group is
# recreated), as llama-server would otherwise wait on a vanished worker's socket.
set -euo pipefail
LWSGEN_ROLE=leader
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWS_GROUP_SIZE:?set by LeaderWorkerSet}" "${LWSGEN_RPC_PORT:?}"
(( $# > 0 )) || { log "no llama-server command given"; exit 2; }
export PATH="$PATH:/app"  # where the llama.cpp images keep their binaries

workers=()  # host:port of every rpc-server of the group
for ((i = 1; i < LWS_GROUP_SIZE; i++)); do
  for ((j = 0; j < ${LWSGEN_RPC_SERVERS:-1}; j++)); do
    workers+=("$(worker_address "$i"):$((LWSGEN_RPC_PORT + j))")
  done
done
rpc_servers_answer() {
  local endpoint missing=()
  for endpoint in "${workers[@]}"; do
    if ! answers "${endpoint%:*}" "${endpoint##*:}"; then
      missing+=("$endpoint")
    fi
  done
  status="${#missing[@]} of ${#workers[@]} rpc-servers not reachable yet (${missing[*]:-})"
  (( ${#missing[@]} == 0 ))
}
wait_until beacons_answer
wait_until rpc_servers_answer  # before llama-server: nothing holds the rpc-servers yet
rpc=""
for endpoint in "${workers[@]}"; do
  rpc+="${rpc:+,}${endpoint}"
done
if [ -n "$rpc" ]; then
  set -- "$@" --rpc "$rpc"
fi
log "all ${#workers[@]} rpc-servers answer; starting: $*"
if (( ${#workers[@]} == 0 )); then
  exec "$@"
fi
supervise beacons_answer "$@"
