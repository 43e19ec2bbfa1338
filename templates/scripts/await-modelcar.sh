# lwsgen: wait, bounded, for the model KServe's modelcar links into /mnt/models after this container
# has started (it tells the engine so: MODEL_INIT_MODE=async, kserve/kserve@v0.20.0
# pkg/utils/storage.go#L575), then run the launch given as arguments. Environment:
# LWSGEN_MODEL_LINK (the model directory), LWSGEN_MODEL_LINK_SECONDS (the bound: the image is already
# on the node, pulled by the modelcar's init container, so the link comes within seconds).
set -u
started=$SECONDS
trap 'exit 143' TERM INT
# the link resolves, and lists files, only once the modelcar's process runs
until [ -n "$(ls -A "$LWSGEN_MODEL_LINK/" 2>/dev/null)" ]; do
  if [ $((SECONDS - started)) -ge "$LWSGEN_MODEL_LINK_SECONDS" ]; then
    printf 'lwsgen await-modelcar: %s holds no model after %s s: see the log of this pod'"'"'s modelcar container\n' \
      "$LWSGEN_MODEL_LINK" "$LWSGEN_MODEL_LINK_SECONDS"
    exit 1
  fi
  sleep 1 & wait $!
done
exec "$@"
