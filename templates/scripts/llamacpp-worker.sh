#!/bin/bash
# lwsgen: worker of a llama.cpp RPC group: rpc-server offering this pod's GPUs to the leader,
# once (bounded) the leader's address resolves: a worker whose leader never comes gives up.
# The binary is rpc-server in older llama.cpp builds and ggml-rpc-server in newer ones. Builds
# before the multi-device server offer one device per rpc-server: then LWSGEN_RPC_SERVERS (one
# per GPU) run, server i on port LWSGEN_RPC_PORT + i with CUDA_VISIBLE_DEVICES=i. With
# LLAMA_CACHE set, each caches the tensors it receives there (-c). It answers the leader's watch
# on LWSGEN_BEACON_PORT from its start (lib.sh beacon), never through an rpc-server port.
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWSGEN_RPC_PORT:?}"
servers=${LWSGEN_RPC_SERVERS:-1}
export PATH="$PATH:/app"
server=$(command -v rpc-server || command -v ggml-rpc-server) || {
  log "neither rpc-server nor ggml-rpc-server is in this image; build llama.cpp with -DGGML_RPC=ON"
  exit 1
}
cache=()
if [ -n "${LLAMA_CACHE:-}" ]; then
  cache=(-c)
fi
# rpc_servers: one rpc-server per GPU (the i-th of CUDA_VISIBLE_DEVICES when the runtime set it);
# the first to exit stops the others and its status is theirs.
rpc_servers() {
  local i pids=() code=0 visible=()
  IFS=, read -ra visible <<<"${CUDA_VISIBLE_DEVICES:-}"
  trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 143' TERM
  for ((i = 0; i < servers; i++)); do
    CUDA_VISIBLE_DEVICES=${visible[i]:-$i} "$server" --host 0.0.0.0 --port $((LWSGEN_RPC_PORT + i)) "${cache[@]}" "$@" &
    pids+=("$!")
  done
  wait -n || code=$?
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait || true
  exit "$code"
}
beacon
wait_until leader_resolves
# Not exec: as PID 1, a program without a SIGTERM handler ignores SIGTERM (the kernel's rule for a
# namespace's init) and the pod takes its whole grace period to stop; as this script's child it is
# stopped on SIGTERM whatever rpc-server does, and the leader's name is watched.
if (( servers == 1 )); then
  log "starting ${server} on port ${LWSGEN_RPC_PORT}"
  supervise leader_resolves "$server" --host 0.0.0.0 --port "$LWSGEN_RPC_PORT" "${cache[@]}" "$@"
fi
log "starting ${servers} ${server} (one per GPU) on ports ${LWSGEN_RPC_PORT}-$((LWSGEN_RPC_PORT + servers - 1))"
supervise leader_resolves rpc_servers "$@"
