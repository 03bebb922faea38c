#!/usr/bin/env bash
# Overhead of the sched probes, in one run, alternating A/B/C each round:
#   A: nothing traced   B: the agent, all probes on   C: libbpf-tools runqlat
# on `taskset -c 0 perf bench sched pipe` (a pure context-switch storm), then a realistic
# mixed workload (stress-ng --cpu) with and without the agent. Needs root, build/ built, and
# the Debian packages linux-perf, libbpf-tools and stress-ng (bench/install-deps.sh).
# Usage: bench/sched_overhead.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-7}
loops=200000

pipe_seconds() {
  taskset -c 0 perf bench sched pipe -l "$loops" 2>&1 | awk '/Total time/ {print $3}'
}
stress_ops() {  # bogo ops per second of the cpu stressor, 2 workers, 10 s
  stress-ng --cpu 2 --cpu-method matrixprod -t 10 --metrics-brief 2>&1 |
    awk '$0 ~ /cpu / && $5 ~ /^[0-9.]+$/ {print $(NF-1)}' | tail -1
}

declare -a base agent runqlat
for r in $(seq "$rounds"); do
  base+=("$(pipe_seconds)")
  start_agent; agent+=("$(pipe_seconds)"); stop_agent
  start_other /usr/sbin/runqlat; runqlat+=("$(pipe_seconds)"); stop_other
  echo "round $r: none ${base[-1]} s, agent ${agent[-1]} s, runqlat ${runqlat[-1]} s" >&2
done
b=$(printf '%s\n' "${base[@]}" | median)
a=$(printf '%s\n' "${agent[@]}" | median)
q=$(printf '%s\n' "${runqlat[@]}" | median)

declare -a sbase sagent
for r in $(seq 3); do
  sbase+=("$(stress_ops)")
  start_agent; sagent+=("$(stress_ops)"); stop_agent
  echo "stress round $r: none ${sbase[-1]} ops/s, agent ${sagent[-1]} ops/s" >&2
done
sb=$(printf '%s\n' "${sbase[@]}" | median)
sa=$(printf '%s\n' "${sagent[@]}" | median)

echo "pinned pipe benchmark, median of $rounds rounds of $loops round trips:"
echo "  no tracing         $b s"
echo "  agent (all probes) $a s   ratio $(ratio "$a" "$b")"
echo "  runqlat            $q s   ratio $(ratio "$q" "$b")"
echo "stress-ng --cpu 2 (matrixprod, 10 s), median of 3 rounds:"
echo "  no tracing $sb bogo ops/s, agent $sa bogo ops/s: throughput ratio $(ratio "$sa" "$sb")"
