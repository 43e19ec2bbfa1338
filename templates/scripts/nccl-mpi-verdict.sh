#!/bin/bash
# lwsgen: run nccl-tests' all_reduce_perf under mpirun (the arguments), keep its output in the log,
# then print one verdict line: the out-of-place bus bandwidth at the largest message size against
# LWSGEN_MIN_BUS_BW_GBPS (0: no bar). Exit 1 when it is below the bar or no result was printed.
set -uo pipefail

: "${LWSGEN_MIN_BUS_BW_GBPS:?}"
(( $# > 0 )) || { echo "lwsgen nccl-test: FAIL: no mpirun command given"; exit 2; }
output=$(mktemp)
# nccl-tests result rows: size count type redop root time algbw busbw #wrong (out of place), then in place.
# mpirun --tag-output prefixes every line with "[job,rank]<stdout>:" (OpenMPI's iof_base_output.c).
result() {
  awk '{ sub(/^\[[0-9]+,[0-9]+\]<stdout>: ?/, "") }
    $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 8 { row = $1 " " $8 } END { print row }' "$output"
}
# A run that printed no result is retried a few times (LWSGEN_LAUNCH_ATTEMPTS, default 3): early on a
# worker's sshd or DNS name may not be there yet. A run with a result is final, passing or not.
attempts=${LWSGEN_LAUNCH_ATTEMPTS:-3}
for ((attempt = 1; ; attempt++)); do
  "$@" 2>&1 | tee "$output"
  status=${PIPESTATUS[0]}
  last=$(result)
  [ -n "$last" ] && break
  if (( attempt >= attempts )); then
    echo "lwsgen nccl-test: FAIL: all_reduce_perf printed no result in ${attempts} attempts (mpirun exit status ${status})"
    exit 1
  fi
  echo "lwsgen nccl-test: mpirun printed no result (exit status ${status}); retrying in ${LWSGEN_RETRY_SECONDS:-10} s (attempt ${attempt} of ${attempts})"
  sleep "${LWSGEN_RETRY_SECONDS:-10}"
done
read -r size busbw <<<"$last"
verdict=$(awk -v bw="$busbw" -v bar="$LWSGEN_MIN_BUS_BW_GBPS" 'BEGIN { if (bar > 0 && bw + 0 < bar + 0) print "FAIL"; else print "PASS" }')
echo "lwsgen nccl-test: ${verdict}: bus bandwidth ${busbw} GB/s at ${size} bytes, required ${LWSGEN_MIN_BUS_BW_GBPS} GB/s"
[ "$verdict" = PASS ] && [ "$status" -eq 0 ]
