#!/usr/bin/env bash
# BPF cost per event, by the kernel's own per-program counters (kernel.bpf_stats_enabled=1:
# run_time_ns and run_cnt in /proc/<pid>/fdinfo of each program fd), in one run:
#
#   context switches: a pinned `perf bench sched pipe` storm; ns per switch = BPF run time of
#     the tool's programs on the scheduler path / the context switches /proc/stat counted
#     meanwhile;
#   page faults: a pinned bench/fault_storm; ns per fault = BPF run time of its programs on
#     the fault path / the faults /proc/vmstat counted meanwhile (pgfault);
#   CPU migrations: bench/migrate_storm (a task moving itself between CPUs 0 and 1); ns per
#     run of the programs on sched_migrate_task = their run time / their runs (no counter
#     outside counts migrations host-wide).
# Only the agent has programs on both paths: its sched_* programs are counted for switches and
# its memory_* ones for faults (the other work on the machine faults during a switch storm
# too). The references and runqlat are counted whole.
#
# Against, in the same rounds: an empty raw_tp program (the floor), a per-CPU hash increment
# keyed by the current cgroup id, libbpf-tools runqlat, and the agent (all probes, default
# configuration, whose memory.stat counts minor faults where the memory controller is: its
# memory_* programs then run on major faults only; and again with memory.fault_source: bpf).
# Prints the median of the rounds and the range. Restores
# kernel.bpf_stats_enabled on exit. Needs root and a build (cmake --build build).
#
#   sudo bench/bpf_cost.sh [rounds]          (default 5)
# Environment: BUILD (build dir, default build), AGENT_BIN (default $BUILD/stagewatch),
# RUNQLAT (default /usr/sbin/runqlat, from Debian libbpf-tools), LOOPS (pipe round trips, 100000),
# MOVES (migrations of the migration storm, 20000),
# BEFORE_BIN (another build's stagewatch, e.g. the landed main's: measured in the same rounds,
# its own rows).
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
MIGRATE=$BUILD/bench/migrate_storm
MOVES=${MOVES:-20000}

[[ $(id -u) == 0 ]] || { echo "run as root: it loads BPF programs and sets a sysctl" >&2; exit 1; }
BEFORE_BIN=${BEFORE_BIN:-}
for bin in "$AGENT_BIN" "$REF" "$STORM" "$MEMPROBE" "$MIGRATE" "$RUNQLAT" ${BEFORE_BIN:+"$BEFORE_BIN"}; do
  [[ -x $bin ]] || { echo "missing $bin: build it (cmake --build $BUILD), or apt-get install libbpf-tools linux-perf" >&2; exit 1; }
done
source bench/lib.sh

stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
restore_stats() { echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled; cleanup; }
trap restore_stats EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# prog_totals PID NAME_REGEX: sum of run_time_ns and of run_cnt over the BPF programs the
# process holds open whose names match.
declare -A prog_names
prog_totals() {
  local fd id name t=0 n=0 info
  for fd in /proc/"$1"/fdinfo/*; do
    info=$(cat "$fd" 2>/dev/null) || continue
    [[ $info == *run_time_ns:* ]] || continue  # a program, not a link to one
    id=$(awk '/^prog_id:/ {print $2}' <<<"$info")
    if [[ -z ${prog_names[$id]:-} ]]; then
      prog_names[$id]=$(bpftool prog show id "$id" 2>/dev/null | awk 'NR == 1 {for (i = 1; i < NF; i++) if ($i == "name") print $(i + 1)}')
    fi
    name=${prog_names[$id]}
    [[ $name =~ $2 ]] || continue
    t=$((t + $(awk '/^run_time_ns:/ {print $2}' <<<"$info")))
    n=$((n + $(awk '/^run_cnt:/ {print $2}' <<<"$info")))
  done
  echo "$t $n"
}
switches() { awk '/^ctxt/ {print $2}' /proc/stat; }
faults() { awk '/^pgfault / {print $2}' /proc/vmstat; }

pipe_storm() { taskset -c 0 perf bench sched pipe -l "$LOOPS" >/dev/null 2>&1; }
fault_storm() { taskset -c 0 "$STORM" 4 64 >/dev/null; }
migrate_storm() { "$MIGRATE" "$MOVES" 0 1; }
# The programs' own runs, for an event no host-wide counter counts.
runs() { echo runs; }

# measure EVENTS STORM NAMES: ns of BPF per event for the running tool ($AGENT_PID) over one
# storm, of its programs whose names match NAMES.
measure() {
  local events=$1 storm=$2 names=$3 t0 n0 e0 t1 n1 e1
  read -r t0 n0 < <(prog_totals "$AGENT_PID" "$names")
  e0=$($events)
  $storm
  read -r t1 n1 < <(prog_totals "$AGENT_PID" "$names")
  e1=$($events)
  [[ $e0 == runs ]] && e0=$n0 && e1=$n1
  awk -v t=$((t1 - t0)) -v e=$((e1 - e0)) 'BEGIN {printf "%.1f\n", t / e}'
}

declare -A results
# run LABEL EVENTS STORM NAMES READY CMD...: one round of one tool.
run() {
  local label=$1 events=$2 storm=$3 names=$4 ready=$5
  shift 5
  start_command "$ready" "$@" || exit 1
  prog_names=()  # ids are reused once a tool exits
  sleep 1  # let the agent's start-up walk and first sample pass
  results[$label]+="$(measure "$events" "$storm" "$names") "
  stop_agent
}

switch_tools=(floor hash runqlat agent)
fault_tools=(fault_floor memory_probe agent_faults agent_faults_bpf)
migrate_tools=(migrate_floor agent_migrate)
[[ -n $BEFORE_BIN ]] && switch_tools+=(before) && fault_tools+=(before_faults)
BPF_FAULTS_CONFIG=$BUILD/bench/fault_source_bpf.yaml
printf 'memory:\n  fault_source: bpf\n' >"$BPF_FAULTS_CONFIG"
for r in $(seq "$rounds"); do
  run floor switches pipe_storm . '^ready' "$REF" empty_switch
  run hash switches pipe_storm . '^ready' "$REF" hash_switch
  run runqlat switches pipe_storm . 'Tracing' stdbuf -oL "$RUNQLAT"
  run agent switches pipe_storm '^sched_' 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0
  if [[ -n $BEFORE_BIN ]]; then
    run before switches pipe_storm '^sched_' 'msg="listening"' "$BEFORE_BIN" --web.listen-address=127.0.0.1:0
  fi
  run fault_floor faults fault_storm . '^ready' "$REF" empty_fault
  run memory_probe faults fault_storm . '^ready' "$MEMPROBE"
  run agent_faults faults fault_storm '^memory_' 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0
  run agent_faults_bpf faults fault_storm '^memory_' 'msg="listening"' "$AGENT_BIN" \
    --web.listen-address=127.0.0.1:0 --config.file="$BPF_FAULTS_CONFIG"
  if [[ -n $BEFORE_BIN ]]; then
    run before_faults faults fault_storm '^memory_' 'msg="listening"' "$BEFORE_BIN" --web.listen-address=127.0.0.1:0
  fi
  run migrate_floor runs migrate_storm . '^ready' "$REF" empty_migrate
  run agent_migrate runs migrate_storm '^placement_' 'msg="listening"' "$AGENT_BIN" --web.listen-address=127.0.0.1:0
  line="round $r:"
  for t in "${switch_tools[@]}" "${fault_tools[@]}" "${migrate_tools[@]}"; do line+=" $t $(echo ${results[$t]} | awk '{print $NF}')"; done
  echo "$line" >&2
done

med() { tr ' ' '\n' <<<"${results[$1]}" | grep . | median; }
range() { tr ' ' '\n' <<<"${results[$1]}" | grep . | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s-%s", lo, hi}'; }
floor=$(med floor)
runq=$(med runqlat)
fault_floor=$(med fault_floor)
row() {  # row LABEL KEY BASE [RUNQLAT HASH]
  local m
  m=$(med "$2")
  if [[ -n ${4:-} ]]; then
    printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$m" "$(range "$2")" "$(ratio "$m" "$3")" \
      "$(ratio "$m" "$4")" "$(ratio "$m" "$5")"
  else
    printf '| %s | %s | %s | %s |\n' "$1" "$m" "$(range "$2")" "$(ratio "$m" "$3")"
  fi
}
echo "Context switches: taskset -c 0 perf bench sched pipe -l $LOOPS; median of $rounds rounds"
hash=$(med hash)
echo "| what runs | ns of BPF per switch | range | × floor | × runqlat | × hash increment |"
echo "|---|---|---|---|---|---|"
row "empty raw_tp on sched_switch (the floor)" floor "$floor" "$runq" "$hash"
row "per-CPU hash increment keyed by cgroup id" hash "$floor" "$runq" "$hash"
row "libbpf-tools runqlat (switch + wakeup)" runqlat "$floor" "$runq" "$hash"
row "stagewatch (all probes on; its sched_* programs)" agent "$floor" "$runq" "$hash"
[[ -n $BEFORE_BIN ]] && row "$BEFORE_BIN (its sched_* programs)" before "$floor" "$runq" "$hash"
echo
echo "Page faults: taskset -c 0 fault_storm 4 64 (65,536 faults); median of $rounds rounds"
echo "| what runs | ns of BPF per fault | range | × floor |"
echo "|---|---|---|---|"
row "empty raw_tp on page_fault_user (the floor)" fault_floor "$fault_floor"
row "stagewatch memory probe alone" memory_probe "$fault_floor"
row "stagewatch (all probes on, default: memory.stat counts; its memory_* programs)" agent_faults "$fault_floor"
row "stagewatch (all probes on, memory.fault_source: bpf; its memory_* programs)" agent_faults_bpf "$fault_floor"
[[ -n $BEFORE_BIN ]] && row "$BEFORE_BIN (its memory_* programs)" before_faults "$fault_floor"
echo
echo "CPU migrations: migrate_storm $MOVES 0 1; ns per run of the programs on sched_migrate_task; median of $rounds rounds"
echo "| what runs | ns of BPF per run | range | × floor |"
echo "|---|---|---|---|"
migrate_floor=$(med migrate_floor)
row "empty raw_tp on sched_migrate_task (the floor)" migrate_floor "$migrate_floor"
row "stagewatch (all probes on; its placement_* program)" agent_migrate "$migrate_floor"
exit 0
