#!/bin/bash
# lwsgen: worker of a Triton + TensorRT-LLM group. The leader's mpirun starts this pod's
# tritonserver ranks through kubectl exec; this process only keeps the pod alive until stopped.
set -euo pipefail

sleeper=""
stop() {
  printf 'lwsgen worker: stopping\n'
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true
  exit 0
}
trap stop TERM INT
printf 'lwsgen worker: waiting for the leader to start tritonserver ranks in this pod\n'
while :; do
  sleep 3600 &
  sleeper=$!
  wait "$sleeper" || true
done
