# lwsgen: wait, bounded, for the model the download Job puts on the claim (an init container of
# the pods that read it). Environment: LWSGEN_MODEL_MARKER (the file the Job writes last),
# LWSGEN_MODEL_JOB (its name, for the message), LWSGEN_NAMESPACE, LWSGEN_MODEL_WAIT_SECONDS (the bound).
set -u
started=$SECONDS
trap 'exit 143' TERM INT
until [ -f "$LWSGEN_MODEL_MARKER" ]; do
  waited=$((SECONDS - started))
  if [ "$waited" -ge "$LWSGEN_MODEL_WAIT_SECONDS" ]; then
    printf 'lwsgen await-model: %s did not appear within %s s: the model is not on the claim yet; see kubectl logs -n %s job/%s (the download Job writes it when every file is there)\n' \
      "$LWSGEN_MODEL_MARKER" "$LWSGEN_MODEL_WAIT_SECONDS" "${LWSGEN_NAMESPACE:-default}" "$LWSGEN_MODEL_JOB"
    exit 1
  fi
  printf 'lwsgen await-model: waiting for job/%s to finish the model (%s), %s s of %s s\n' \
    "$LWSGEN_MODEL_JOB" "$LWSGEN_MODEL_MARKER" "$waited" "$LWSGEN_MODEL_WAIT_SECONDS"
  sleep "${LWSGEN_POLL_SECONDS:-10}" & wait $!
done
printf 'lwsgen await-model: the model is complete: %s\n' "$(cat "$LWSGEN_MODEL_MARKER")"
