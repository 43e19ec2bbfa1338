#!/bin/bash
# lwsgen: one tritonserver rank, started by mpirun for every GPU of the group.
# Rank 0 runs on the leader and serves HTTP, gRPC and metrics; the other ranks only compute.
# Arguments: the model repository, the models that run the TensorRT-LLM engine (comma-separated;
# the ranks but 0 load only those), then extra tritonserver arguments.
set -euo pipefail

repository=${1:?model repository}
engine_models=${2:?engine models}
shift 2
rank=${OMPI_COMM_WORLD_RANK:?this script is started by mpirun}
common=(
  --disable-auto-complete-config
  --allow-cpu-metrics=false
  --allow-gpu-metrics=false
  --model-load-thread-count=2
  "--model-repository=${repository}"
  "--id=rank${rank}"
  # Every rank's Python backend gets its own shared-memory regions: the ranks of one pod share
  # /dev/shm (as the upstream launcher does, tensorrtllm_backend scripts/launch_triton_server.py).
  "--backend-config=python,shm-region-prefix-name=prefix${rank}_"
)
if [ "$rank" -eq 0 ]; then
  exec tritonserver "${common[@]}" \
    "--http-port=${LWSGEN_HTTP_PORT:?}" "--grpc-port=${LWSGEN_GRPC_PORT:?}" \
    "--metrics-port=${LWSGEN_METRICS_PORT:?}" --allow-metrics=true --metrics-interval-ms=1000 \
    "$@"
fi
load=()
IFS=, read -ra names <<<"$engine_models"
for name in "${names[@]}"; do load+=("--load-model=${name}"); done
exec tritonserver "${common[@]}" \
  --allow-http=false --allow-grpc=false --allow-metrics=false \
  --model-control-mode=explicit "${load[@]}" \
  --log-info=false --log-warning=false \
  "$@"
