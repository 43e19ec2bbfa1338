# lwsgen: copy the model from the claim to node-local storage before the engine starts (an init
# container; storage.localCache), bounded and logged. A copy left by an earlier start of the pod on
# the same volume is kept when complete (its marker), else started over. Environment:
# LWSGEN_MODEL_FROM, LWSGEN_MODEL_TO (directories), LWSGEN_COPY_SECONDS (the bound).
set -u
trap 'exit 143' TERM INT
done_marker="$LWSGEN_MODEL_TO/.lwsgen-cached"
if [ -f "$done_marker" ]; then
  printf 'lwsgen cache-model: %s is already cached\n' "$LWSGEN_MODEL_TO"
  exit 0
fi
total=$(du -sk "$LWSGEN_MODEL_FROM" | cut -f1)
partial="$LWSGEN_MODEL_TO.partial"
rm -rf "$partial" && mkdir -p "$partial" "$(dirname "$LWSGEN_MODEL_TO")" || exit 1
started=$SECONDS
# -L: files, not links (older huggingface_hub clients linked large files); no ownership: a claim
# squashing root (NFS root_squash) would refuse it, and the copy is this pod's alone
cp -rL --preserve=mode,timestamps "$LWSGEN_MODEL_FROM/." "$partial/" &
copier=$!
trap 'kill "$copier" 2>/dev/null; exit 143' TERM INT
while kill -0 "$copier" 2>/dev/null; do
  if [ $((SECONDS - started)) -ge "$LWSGEN_COPY_SECONDS" ]; then
    kill "$copier" 2>/dev/null
    printf 'lwsgen cache-model: copying %s did not finish within %s s; set storage.readGBps to the rate the claim really reads at (a lower rate gives a longer bound), or leave the cache off\n' \
      "$LWSGEN_MODEL_FROM" "$LWSGEN_COPY_SECONDS"
    exit 1
  fi
  copied=$(du -sk "$partial" | cut -f1)
  printf 'lwsgen cache-model: %s of %s MB copied in %s s\n' $((copied / 1024)) $((total / 1024)) $((SECONDS - started))
  sleep "${LWSGEN_POLL_SECONDS:-10}" & wait $!
done
wait "$copier" || { printf 'lwsgen cache-model: copying %s failed\n' "$LWSGEN_MODEL_FROM"; exit 1; }
rm -rf "$LWSGEN_MODEL_TO" && mv "$partial" "$LWSGEN_MODEL_TO" && : > "$done_marker" || exit 1
printf 'lwsgen cache-model: %s MB cached in %s s\n' $((total / 1024)) $((SECONDS - started))
