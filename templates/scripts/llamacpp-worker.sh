#!/bin/bash
# lwsgen: worker of a llama.cpp RPC group: an rpc-server offering this pod's GPUs to the leader.
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
log "starting ${server} on port ${LWSGEN_RPC_PORT}"
exec "$server" --host 0.0.0.0 --port "$LWSGEN_RPC_PORT" "$@"
