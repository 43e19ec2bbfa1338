# lwsgen: shell functions shared by the launch scripts (sourced, never run on its own).
# Every wait is bounded by LWSGEN_RENDEZVOUS_TIMEOUT seconds from the script's start and logs why
# it is waiting at every poll; SIGTERM ends a waiting script at once (it runs as PID 1, where a
# signal without a handler is ignored and the pod would take its whole grace period to stop).

log() { printf 'lwsgen %s: %s\n' "${LWSGEN_ROLE:-pod}" "$*"; }

LWSGEN_STARTED=$SECONDS
# needs_ray: a Ray launch on an image without Ray fails at once with what to do, not at the bound.
needs_ray() {
  command -v ray >/dev/null 2>&1 && return 0
  log "this image has no Ray (no 'ray' on PATH), which the Ray launch needs: use an image with Ray" \
    "(Aphrodite: pip install 'aphrodite-engine[ray]'), or for vLLM 0.11.1 and newer launch.mode native"
  exit 1
}
child=""   # the check or sleep a script waits on
engine=""  # the engine supervise runs; SIGTERM is passed to it and its status is the script's
on_stop() {
  local code=143 jobs
  log "stopping (SIGTERM)"
  # every background job, not only $child: a SIGTERM between `sleep &` and `child=$!` finds it unset
  jobs=$(jobs -p)
  [ -z "$jobs" ] || kill -TERM $jobs 2>/dev/null || true
  if [ -n "$engine" ]; then
    kill -TERM "$engine" 2>/dev/null || true
    code=0
    wait "$engine" 2>/dev/null || code=$?
  fi
  exit "$code"
}
trap on_stop TERM INT

# nap SECONDS: sleep, but end at once on SIGTERM (bash runs a trap only between commands).
nap() {
  sleep "$1" &
  child=$!
  wait "$child" || true
  child=""
}

# bounded CMD...: run CMD for at most LWSGEN_CHECK_SECONDS (default 10) seconds, interruptibly.
bounded() {
  timeout --kill-after=2 "${LWSGEN_CHECK_SECONDS:-10}" "$@" &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=""
  return "$status"
}

# wait_until CHECK: run the function CHECK every LWSGEN_POLL_SECONDS (default 5) until it succeeds.
# CHECK sets $status to a sentence saying what it is waiting for; give up with that sentence.
wait_until() {
  local check=$1 deadline=$((LWSGEN_STARTED + ${LWSGEN_RENDEZVOUS_TIMEOUT:?}))
  status="starting"
  until "$check"; do
    if (( SECONDS >= deadline )); then
      log "gave up after ${LWSGEN_RENDEZVOUS_TIMEOUT}s: ${status}"
      exit 1
    fi
    log "waiting: ${status}"
    nap "${LWSGEN_POLL_SECONDS:-5}"
  done
}

# supervise CHECK CMD...: run CMD (the engine) and watch the group with CHECK (watch_engine); the
# engine's own exit status is passed on; SIGTERM is passed to the engine.
supervise() {
  local check=$1 code=0
  shift
  "$@" &
  engine=$!
  watch_engine "$check" || code=$?
  log "the engine exited with status ${code}"
  exit "$code"
}

# watch_engine CHECK: poll CHECK every LWSGEN_POLL_SECONDS while the engine ($engine) runs, and
# return the engine's status when it ends. When CHECK fails LWSGEN_WATCH_FAILURES (default 3) polls
# in a row, a member of the group is gone: stop the engine and exit 1, so that LeaderWorkerSet
# (RecreateGroupOnPodRestart) recreates the group instead of leaving it serving on fewer pods (a
# Deployment's pod, KServe's, restarts and joins the next group).
watch_engine() {
  local check=$1 failures=0 code=0
  while :; do
    nap "${LWSGEN_POLL_SECONDS:-5}"
    if ! kill -0 "$engine" 2>/dev/null; then
      wait "$engine" || code=$?
      engine=""
      return "$code"
    fi
    if "$check"; then
      failures=0
      continue
    fi
    failures=$((failures + 1))
    log "watch: ${status} (${failures} of ${LWSGEN_WATCH_FAILURES:-3})"
    if (( failures >= ${LWSGEN_WATCH_FAILURES:-3} )); then
      log "the group lost a member (${status}); stopping the engine so the group forms anew"
      kill -TERM "$engine" 2>/dev/null || true
      # an engine blocked on the lost member (mpirun ending its remote daemons) gets LWSGEN_STOP_SECONDS
      timeout "${LWSGEN_STOP_SECONDS:-30}" tail --pid="$engine" -f /dev/null 2>/dev/null || kill -KILL "$engine" 2>/dev/null || true
      exit 1
    fi
  done
}

# resolves HOST: whether DNS has HOST yet (a new pod's name takes a while to appear, LWS issue 746).
resolves() { bounded getent hosts "$1" >/dev/null 2>&1; }

# leader_resolves: whether the leader's name resolves yet (a wait_until check).
leader_resolves() {
  status="the leader address ${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet} does not resolve yet"
  resolves "$LWS_LEADER_ADDRESS"
}

# connects IP PORT: whether something accepts TCP connections on IP's PORT (at most 3 s).
connects() { timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

# answers HOST PORT: whether HOST resolves and something accepts TCP connections on its PORT (at most 3 s).
answers() {
  local ip=""
  read -r ip _ < <(timeout 3 getent hosts "$1" 2>/dev/null || true) || true
  [ -n "$ip" ] && connects "$ip" "$2"
}

# LeaderWorkerSet names worker i of a group <leader pod>-<i>; its address is the leader's with that name.
# A group of a head and one worker elsewhere (KServe's InferenceService) names that worker's
# address in LWSGEN_WORKER_ADDRESS.
worker_address() {
  if [ -n "${LWSGEN_WORKER_ADDRESS:-}" ]; then
    printf '%s' "$LWSGEN_WORKER_ADDRESS"
    return
  fi
  local leader=${LWS_LEADER_ADDRESS:?set by LeaderWorkerSet}
  printf '%s-%s.%s' "${leader%%.*}" "$1" "${leader#*.}"
}

# beacon: a listener on LWSGEN_BEACON_PORT that answers each connection with the byte 1 and this
# run's token, as long as this container runs, on a port no engine uses, so the leader can watch this
# pod without touching the engine's own ports (an rpc-server serves one client at a time). A node that
# loses power or its link sends no FIN: the leader's connect or read then times out, which is what the
# watch counts; the byte tells a real answer from a local proxy's accept (a mesh sidecar), the token a
# container restarted in place (same IP) from the one that joined the group. IPv4 and IPv6 both.
# Exits 1, saying why, when the listener does not start (the port taken, on hostNetwork).
beacon() {
  : "${LWSGEN_BEACON_PORT:?}"
  command -v python3 >/dev/null 2>&1 || {
    log "this image has no python3, which answers the leader's watch on port ${LWSGEN_BEACON_PORT}: use an image with python3"
    exit 1
  }
  local ready
  ready=$(mktemp)
  # It ends with this script (in a container its PID namespace ends it anyway).
  python3 -c 'import os, socket, sys, threading, time
port = int(sys.argv[1])
if socket.has_dualstack_ipv6():
    server = socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=64)
else:
    server = socket.create_server(("", port), backlog=64)
print("listening", flush=True)
def orphaned():
    while os.getppid() == int(sys.argv[2]):
        time.sleep(1)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
answer = b"1" + sys.argv[3].encode() + b"\n"
while True:
    client = server.accept()[0]
    try:
        client.sendall(answer)
    except OSError:
        pass
    client.close()' "$LWSGEN_BEACON_PORT" "$$" "${HOSTNAME:-pod}.$$.$(date +%s%N)" >"$ready" &
  local pid=$! i
  for ((i = 0; i < 100; i++)); do
    if grep -q listening "$ready" 2>/dev/null; then
      rm -f "$ready"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$ready"
  log "the beacon could not listen on port ${LWSGEN_BEACON_PORT} (taken by another pod on this node's network?)"
  exit 1
}

# addresses HOST: every address HOST resolves to (at most 3 s), one per line.
addresses() { timeout 3 getent ahosts "$1" 2>/dev/null | awk '!seen[$1]++ {print $1}' || true; }

# watched_answers HOST PORT: whether HOST's PORT accepts a connection within 3 s. HOST is looked up
# once, when one of its addresses first answers, and then watched by that IP: a slow DNS, or a name
# that still lists a pod that is gone beside its replacement, is not a lost member; a replaced pod has
# a new IP, so the one watched stops answering.
declare -A watched_ips=()
watched_answers() {
  local ip=${watched_ips[$1]:-} candidate
  if [ -n "$ip" ]; then
    connects "$ip" "$2"
    return
  fi
  for candidate in $(addresses "$1"); do
    if connects "$candidate" "$2"; then
      watched_ips[$1]=$candidate
      return 0
    fi
  done
  return 1
}

# beacon_answers HOST: whether HOST's beacon answers with its byte within 3 s, and with the token it
# gave first (a container restarted in place gives another). HOST is looked up and watched as by
# watched_answers.
declare -A beacon_ips=() beacon_tokens=()
beacon_answers() {
  local ip=${beacon_ips[$1]:-} candidate said
  local -a candidates=("$ip")
  [ -n "$ip" ] || mapfile -t candidates < <(addresses "$1")
  for candidate in "${candidates[@]}"; do
    [ -n "$candidate" ] || continue
    said=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 1; IFS= read -r -t 3 line <&3; printf %s "$line"' \
      _ "$candidate" "${LWSGEN_BEACON_PORT:?}" 2>/dev/null) || said=""
    [ "${said:0:1}" = 1 ] || continue
    if [ -n "${beacon_tokens[$1]+set}" ] && [ "${beacon_tokens[$1]}" != "${said:1}" ]; then
      status="${1} restarted (its beacon answers for another run)"
      return 1
    fi
    beacon_tokens[$1]=${said:1}
    beacon_ips[$1]=$candidate
    return 0
  done
  return 1
}

# beacons_answer: whether every worker of this group answers on its beacon (wait_until or supervise).
beacons_answer() {
  local i missing=()
  for ((i = 1; i < ${LWS_GROUP_SIZE:?}; i++)); do
    beacon_answers "$(worker_address "$i")" || missing+=("$(worker_address "$i")")
  done
  status="${#missing[@]} of $((LWS_GROUP_SIZE - 1)) workers do not answer on port ${LWSGEN_BEACON_PORT} (${missing[*]:-})"
  (( ${#missing[@]} == 0 ))
}
