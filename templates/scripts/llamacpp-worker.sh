#!/bin/bash
# lwsgen: worker of a llama.cpp RPC group: an rpc-server offering this pod's GPUs to the leader,
# once (bounded) the leader's address resolves: a worker whose leader never comes gives up.
# The binary is rpc-server in older llama.cpp builds and ggml-rpc-server in newer ones.
set -euo pipefail
LWSGEN_ROLE=worker
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${LWSGEN_RPC_PORT:?}"
export PATH="$PATH:/app"
server=$(command -v rpc-server || command -v ggml-rpc-server) || {
  log "neither rpc-server nor ggml-rpc-server is in this image; build llama.cpp with -DGGML_RPC=ON"
  exit 1
}
wait_until leader_resolves
log "starting ${server} on port ${LWSGEN_RPC_PORT}"
# Not exec: as PID 1, a program without a SIGTERM handler ignores SIGTERM (the kernel's rule for a
# namespace's init) and the pod takes its whole grace period to stop; as this script's child it is
# stopped on SIGTERM whatever rpc-server does, and the leader's name is watched.
supervise leader_resolves "$server" --host 0.0.0.0 --port "$LWSGEN_RPC_PORT" "$@"
