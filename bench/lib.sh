# Shared by the bench scripts: start and stop the agent by pid, and take medians.
# Source it; it expects to run from the repository root with build/ built.

AGENT_BIN=${AGENT_BIN:-build/stagewatch}
AGENT_LOG=$(mktemp /tmp/stagewatch-bench-XXXXXX.log)
AGENT_PID=

# start_command READY CMD [ARGS...]: runs CMD in the background, its output in $AGENT_LOG,
# and waits until that output matches the extended regex READY.
start_command() {
  local ready=$1
  shift
  : >"$AGENT_LOG"
  ( exec "$@" >"$AGENT_LOG" 2>&1 ) &
  AGENT_PID=$!
  for _ in $(seq 100); do
    grep -Eq "$ready" "$AGENT_LOG" && return 0
    kill -0 "$AGENT_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench: $1 did not start:" >&2
  cat "$AGENT_LOG" >&2
  return 1
}

# start_agent [extra agent args...]: the agent on a free loopback port, once it listens.
start_agent() {
  start_command 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0 "$@"
}

stop_agent() {
  [ -n "$AGENT_PID" ] || return 0
  kill -TERM "$AGENT_PID" 2>/dev/null
  wait "$AGENT_PID" 2>/dev/null || true  # its exit status on SIGTERM is not the benchmark's
  AGENT_PID=
}

# A background tool other than the agent (e.g. runqlat), stopped by its pid.
OTHER_PID=
start_other() {
  ( exec "$@" >/dev/null 2>&1 ) &
  OTHER_PID=$!
  sleep 2  # let it load its BPF programs
}
stop_other() {
  [ -n "$OTHER_PID" ] || return 0
  kill -INT "$OTHER_PID" 2>/dev/null
  wait "$OTHER_PID" 2>/dev/null
  OTHER_PID=
}

cleanup() { stop_agent; stop_other; rm -f "$AGENT_LOG"; }
trap cleanup EXIT

# http_median_ms PORT PATH N: the median of N sequential GETs' total time, in milliseconds.
http_median_ms() {
  for _ in $(seq "$3"); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$1$2"
  done | sort -n | awk '{a[NR] = $1} END {printf "%.2f", 1000 * a[int((NR + 1) / 2)]}'
}

# agent_port: the port the agent started by start_agent listens on.
agent_port() { grep -o 'address=127.0.0.1:[0-9]*' "$AGENT_LOG" | head -1 | cut -d: -f2; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a/b}'; }
