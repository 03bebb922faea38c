#!/usr/bin/env bash
# How the agent's cost grows with the number of stage cgroups: at each size, N empty cgroups
# in 10 discovered stages (<own cgroup>/stagewatch-scale/stagewatch/s<k>/c<i>, mirrored in the
# cpu, cpuacct and cgroup2 hierarchies as systemd lays them out), then
#   - /metrics: wall time of one scrape (median of SCRAPES back-to-back scrapes, curl), and
#     the agent's CPU time per scrape (all its threads, /proc/<pid>/task/*/schedstat, less
#     its idle rate over the same time);
#   - the sampler: the agent's CPU time per sample while idle (one cgroupfs read of every
#     stage cgroup per memory.sample_interval, 1 s), over IDLE seconds.
# Needs root and a build. Removes every cgroup it made, on failure too.
#
#   sudo bench/scale.sh [sizes...]       (default 10 100 1000)
# Environment: BUILD (build), AGENT_BIN ($BUILD/stagewatch), SCRAPES (20), IDLE (10).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
AGENT_BIN=${AGENT_BIN:-$BUILD/stagewatch}
SCRAPES=${SCRAPES:-20}
IDLE=${IDLE:-10}
sizes=("${@:-10 100 1000}")
read -ra sizes <<<"${sizes[*]}"
[[ $(id -u) == 0 ]] || { echo "run as root: it loads BPF programs and makes cgroups" >&2; exit 1; }
[[ -x $AGENT_BIN ]] || { echo "missing $AGENT_BIN: build it (cmake --build $BUILD)" >&2; exit 1; }
source bench/lib.sh

# Beneath this shell's own cgroup in each hierarchy (hybrid: v1 controllers + cgroup2).
own() { awk -F: -v c="$1" '$2 == c {print $3}' /proc/self/cgroup; }
parents=()
for h in memory cpu cpuacct; do
  [[ -d /sys/fs/cgroup/$h ]] && parents+=("/sys/fs/cgroup/$h$(own "$h")/stagewatch-scale-$$")
done
[[ -d /sys/fs/cgroup/unified ]] && parents+=("/sys/fs/cgroup/unified$(own "")/stagewatch-scale-$$")
remove_cgroups() {
  local p
  for p in "${parents[@]}"; do
    [[ -d $p ]] && find "$p" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}
trap 'cleanup; remove_cgroups' EXIT
make_cgroups() {  # make_cgroups N: N cgroups in 10 stages
  local n=$1 p i
  remove_cgroups
  for p in "${parents[@]}"; do
    for i in $(seq 0 $((n - 1))); do
      mkdir -p "$p/stagewatch/s$((i % 10))/c$i"
    done
  done
}

agent_cpu_ns() {  # every thread of the agent
  cat /proc/"$AGENT_PID"/task/*/schedstat 2>/dev/null | awk '{t += $1} END {printf "%d\n", t}'
}
now_ns() { date +%s%N; }

echo "| stage cgroups | /metrics bytes | /metrics time (median) | agent CPU per scrape | agent CPU per sample (idle) |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  make_cgroups "$n"
  start_agent || exit 1
  port=$(grep -Eo 'address="?[^ "]*' "$AGENT_LOG" | head -1 | grep -Eo '[0-9]+$')
  url="http://127.0.0.1:$port/metrics"
  sleep 3  # the start-up walk, the first samples
  # Idle: the sampler alone.
  c0=$(agent_cpu_ns); t0=$(now_ns)
  sleep "$IDLE"
  c1=$(agent_cpu_ns); t1=$(now_ns)
  idle_rate=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN {print c / t}')
  per_sample=$(awk -v c=$((c1 - c0)) -v s="$IDLE" 'BEGIN {printf "%.2f ms", c / s / 1e6}')
  # Scrapes, back to back.
  bytes=$(curl -s "$url" | wc -c)
  times=()
  c0=$(agent_cpu_ns); t0=$(now_ns)
  for _ in $(seq "$SCRAPES"); do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' "$url")")
  done
  c1=$(agent_cpu_ns); t1=$(now_ns)
  per_scrape=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v r="$idle_rate" -v n="$SCRAPES" \
    'BEGIN {printf "%.2f ms", (c - r * t) / n / 1e6}')
  median_time=$(printf '%s\n' "${times[@]}" | median | awk '{printf "%.1f ms", $1 * 1000}')
  stop_agent
  echo "| $n | $bytes | $median_time | $per_scrape | $per_sample |"
done
