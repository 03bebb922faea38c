#!/usr/bin/env bash
# BPF cost per event, by the kernel's own per-program counters (kernel.bpf_stats_enabled=1:
# run_time_ns and run_cnt in /proc/<pid>/fdinfo of each program fd), in one run:
#
#   context switches: a pinned `perf bench sched pipe` storm; ns per switch = BPF run time of
#     every program the tool loaded / the context switches /proc/stat counted meanwhile;
#   page faults: a pinned bench/fault_storm; ns per fault = BPF run time / the faults
#     /proc/vmstat counted meanwhile (pgfault).
#
# Against, in the same rounds: an empty raw_tp program (the floor), a per-CPU hash increment
# keyed by the current cgroup id, libbpf-tools runqlat, and the agent (all probes, default
# configuration). Prints the median of the rounds and the range. Restores
# kernel.bpf_stats_enabled on exit. Needs root and a build (cmake --build build).
#
#   sudo bench/bpf_cost.sh [rounds]          (default 5)
# Environment: BUILD (build dir, default build), AGENT_BIN (default $BUILD/stagewatch),
# RUNQLAT (default /usr/sbin/runqlat, from Debian libbpf-tools), LOOPS (pipe round trips, 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
BUILD=${BUILD:-build}
AGENT_BIN=${AGENT_BIN:-$BUILD/stagewatch}
RUNQLAT=${RUNQLAT:-/usr/sbin/runqlat}
LOOPS=${LOOPS:-100000}
REF=$BUILD/bench/load_reference
STORM=$BUILD/bench/fault_storm
MEMPROBE=$BUILD/bench/load_memory_probe

[[ $(id -u) == 0 ]] || { echo "run as root: it loads BPF programs and sets a sysctl" >&2; exit 1; }
for bin in "$AGENT_BIN" "$REF" "$STORM" "$MEMPROBE" "$RUNQLAT"; do
  [[ -x $bin ]] || { echo "missing $bin: build it (cmake --build $BUILD), or apt-get install libbpf-tools linux-perf" >&2; exit 1; }
done
source bench/lib.sh

stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
restore_stats() { echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled; cleanup; }
trap restore_stats EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# Sum of run_time_ns and of run_cnt over the BPF programs the process holds open.
prog_totals() {
  cat /proc/"$1"/fdinfo/* 2>/dev/null |
    awk '/^run_time_ns:/ {t += $2} /^run_cnt:/ {n += $2} END {printf "%d %d\n", t, n}'
}
switches() { awk '/^ctxt/ {print $2}' /proc/stat; }
faults() { awk '/^pgfault / {print $2}' /proc/vmstat; }

pipe_storm() { taskset -c 0 perf bench sched pipe -l "$LOOPS" >/dev/null 2>&1; }
fault_storm() { taskset -c 0 "$STORM" 4 64 >/dev/null; }

# measure EVENTS STORM: ns of BPF per event for the running tool ($AGENT_PID) over one storm.
measure() {
  local events=$1 storm=$2 t0 n0 e0 t1 n1 e1
  read -r t0 n0 < <(prog_totals "$AGENT_PID")
  e0=$($events)
  $storm
  read -r t1 n1 < <(prog_totals "$AGENT_PID")
  e1=$($events)
  awk -v t=$((t1 - t0)) -v e=$((e1 - e0)) 'BEGIN {printf "%.1f\n", t / e}'
}

declare -A results
# run LABEL EVENTS STORM READY CMD...: one round of one tool.
run() {
  local label=$1 events=$2 storm=$3 ready=$4
  shift 4
  start_command "$ready" "$@" || exit 1
  sleep 1  # let the agent's start-up walk and first sample pass
  results[$label]+="$(measure "$events" "$storm") "
  stop_agent
}

switch_tools=(floor hash runqlat agent)
fault_tools=(fault_floor memory_probe agent_faults)
for r in $(seq "$rounds"); do
  run floor switches pipe_storm '^ready' "$REF" empty_switch
  run hash switches pipe_storm '^ready' "$REF" hash_switch
  run runqlat switches pipe_storm 'Tracing' stdbuf -oL "$RUNQLAT"
  run agent switches pipe_storm 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0
  run fault_floor faults fault_storm '^ready' "$REF" empty_fault
  run memory_probe faults fault_storm '^ready' "$MEMPROBE"
  run agent_faults faults fault_storm 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0
  line="round $r:"
  for t in "${switch_tools[@]}" "${fault_tools[@]}"; do line+=" $t $(echo ${results[$t]} | awk '{print $NF}')"; done
  echo "$line" >&2
done

med() { tr ' ' '\n' <<<"${results[$1]}" | grep . | median; }
range() { tr ' ' '\n' <<<"${results[$1]}" | grep . | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s-%s", lo, hi}'; }
floor=$(med floor)
runq=$(med runqlat)
fault_floor=$(med fault_floor)
row() {  # row LABEL KEY BASE [RUNQLAT]
  local m
  m=$(med "$2")
  if [[ -n ${4:-} ]]; then
    printf '| %s | %s | %s | %s | %s |\n' "$1" "$m" "$(range "$2")" "$(ratio "$m" "$3")" "$(ratio "$m" "$4")"
  else
    printf '| %s | %s | %s | %s |\n' "$1" "$m" "$(range "$2")" "$(ratio "$m" "$3")"
  fi
}
echo "Context switches: taskset -c 0 perf bench sched pipe -l $LOOPS; median of $rounds rounds"
echo "| what runs | ns of BPF per switch | range | × floor | × runqlat |"
echo "|---|---|---|---|---|"
row "empty raw_tp on sched_switch (the floor)" floor "$floor" "$runq"
row "per-CPU hash increment keyed by cgroup id" hash "$floor" "$runq"
row "libbpf-tools runqlat (switch + wakeup)" runqlat "$floor" "$runq"
row "stagewatch, all probes" agent "$floor" "$runq"
echo
echo "Page faults: taskset -c 0 fault_storm 4 64 (65,536 faults); median of $rounds rounds"
echo "| what runs | ns of BPF per fault | range | × floor |"
echo "|---|---|---|---|"
row "empty raw_tp on page_fault_user (the floor)" fault_floor "$fault_floor"
row "stagewatch memory probe alone" memory_probe "$fault_floor"
row "stagewatch, all probes" agent_faults "$fault_floor"
