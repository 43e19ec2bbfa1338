# lwsgen: shell functions shared by the launch scripts (sourced, never run on its own).
# Every wait is bounded by LWSGEN_RENDEZVOUS_TIMEOUT seconds and logs why it is waiting.

log() { printf 'lwsgen %s: %s\n' "${LWSGEN_ROLE:-pod}" "$*"; }

# wait_until CHECK: run the function CHECK every LWSGEN_POLL_SECONDS (default 5) until it succeeds.
# CHECK sets $status to a sentence saying what it is waiting for; give up with that sentence.
wait_until() {
  local check=$1 deadline=$((SECONDS + ${LWSGEN_RENDEZVOUS_TIMEOUT:?}))
  status="starting"
  until "$check"; do
    if (( SECONDS >= deadline )); then
      log "gave up after ${LWSGEN_RENDEZVOUS_TIMEOUT}s: ${status}"
      exit 1
    fi
    log "waiting: ${status}"
    sleep "${LWSGEN_POLL_SECONDS:-5}"
  done
}

# resolves HOST: whether DNS has HOST yet (a new pod's name takes a while to appear, LWS issue 746).
resolves() { getent hosts "$1" >/dev/null 2>&1; }

# LeaderWorkerSet names worker i of a group <leader pod>-<i>; its address is the leader's with that name.
worker_address() {
  local leader=${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}
  printf '%s-%s.%s' "${leader%%.*}" "$1" "${leader#*.}"
}
