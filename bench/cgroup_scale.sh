#!/usr/bin/env bash
# The agent at scale: 1,000 live cgroups in 50 discovered stages, one sleeping process each,
# made after the agent starts, so it sees each born and records it as a discovered run.
# Reports idle CPU (scraped every 15 s, as Prometheus would), the median /metrics time, the
# agent's CPU per scrape, and its RSS while 20,000 more cgroups are made and removed.
# Needs root and a built agent; AGENT_BIN picks the binary (to compare two builds).
# With TASK_STATES_PASSES=N, first times N passes of task-state reads over the tree
# (build/bench/task_states_cost: /proc against the task_states iterator) before the agent.
# Usage: [AGENT_BIN=build/stagewatch] bench/cgroup_scale.sh [idle-seconds] [churn-cgroups]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
idle_seconds=${1:-60}
churn=${2:-20000}
stages=50
per_stage=20
hz=$(getconf CLK_TCK)

# Beneath this script's own v1 memory cgroup (or its cgroup2 one), never at a root.
if [ -d /sys/fs/cgroup/memory ]; then
  root=/sys/fs/cgroup/memory
  own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
else
  root=/sys/fs/cgroup
  own=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup)
fi
top="$root${own%/}/sw-bench-scale-$$"
sleepers=()

remove_tree() {
  for pid in "${sleepers[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${sleepers[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -d "$top" ] && find "$top" -depth -type d -exec rmdir {} + 2>/dev/null || true
}

# Room for all 50 stages (the default discovery.max_stages is 32), and a ledger of the bench's
# own; keys both builds know.
config=$(mktemp /tmp/stagewatch-bench-scale-XXXXXX.yaml)
ledger_dir=$(mktemp -d /tmp/stagewatch-bench-ledger-XXXXXX)
printf 'discovery:\n  max_stages: 64\nruns:\n  ledger_path: %s/ledger.db\n' "$ledger_dir" >"$config"
trap 'cleanup; remove_tree; rm -f "$config"; rm -rf "$ledger_dir"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$AGENT_PID/status"; }
# RSS in two parts, "anonymous file" (KiB): the heap, and the binary's and libraries' pages,
# which grow as code first runs (a churn runs the code of a run's end, a still agent not).
rss_parts_kib() { awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a, f}' "/proc/$AGENT_PID/status"; }
# One line per thread: "tid name ticks" (name from comm; the agent names its threads sw-*).
thread_ticks() {
  for stat in /proc/"$AGENT_PID"/task/*/stat; do
    sed -E 's/^([0-9]+) \((.*)\) (.*)$/\1 \2 \3/' "$stat" 2>/dev/null |
      awk '{gsub(/ /, "_", $2); print $1, $2, $14 + $15}'
  done
}

start_agent --config.file="$config"
port=$(grep -o 'address=127.0.0.1:[0-9]*' "$AGENT_LOG" | head -1 | cut -d: -f2)
url="http://127.0.0.1:$port/metrics"
sleep 5  # past start-up: probes loaded, first walk done

mkdir -p "$top/stagewatch"
for ((s = 0; s < stages; s++)); do
  for ((r = 0; r < per_stage; r++)); do
    dir="$top/stagewatch/stage_$s/run_$r"
    mkdir -p "$dir"
    sleep 100000 &
    sleepers+=($!)
    echo $! >"$dir/cgroup.procs"
  done
done

if [ -n "${TASK_STATES_PASSES:-}" ]; then
  build/bench/task_states_cost "$top" "$TASK_STATES_PASSES"
fi

sleep 15  # every run recorded (1 s after its cgroup appears), one ledger row each
runs=$(grep -c 'msg="run started"' "$AGENT_LOG" || true)
curl -s "$url" >/dev/null  # the first scrape names every stage

before=$(cpu_ticks)
threads_before=$(thread_ticks)
for ((t = 0; t < idle_seconds; t += 15)); do
  sleep 15
  curl -s "$url" >/dev/null
done
idle_ticks=$(( $(cpu_ticks) - before ))
# Idle CPU by thread name (threads of one name summed), largest first.
by_thread=$(awk -v hz="$hz" -v s="$idle_seconds" 'NR == FNR {b[$1] = $3; next}
  {k = $2 ~ /^sw-/ ? $2 : $2 "/" $1; n[k] += $3 - b[$1]} END {for (k in n) if (n[k] > 0) printf "%s %.3f%%\n", k, 100 * n[k] / hz / s}' \
  <(echo "$threads_before") <(thread_ticks) | sort -k2 -gr | tr '\n' ',' | sed 's/,$//; s/,/, /g')

scrapes=50
times=$(mktemp)
before=$(cpu_ticks)
for ((i = 0; i < scrapes; i++)); do
  curl -s -o /dev/null -w '%{time_total}\n' "$url" >>"$times"
done
scrape_ticks=$(( $(cpu_ticks) - before ))
median_ms=$(awk '{print $1 * 1000}' "$times" | median)
last=$(curl -s "$url")
series=$(grep -c 'pipeline_stage="stage_' <<<"$last" || true)
# Where a scrape's time goes, by collector (the agent's own self-metric).
collectors=$(awk -F'[{}" ]+' '/^stagewatch_scrape_collector_duration_seconds\{/ {
  printf "%s %.1f ms, ", $3, $4 * 1000 }' <<<"$last")
rm -f "$times"

rss_start=$(rss_kib)
read -r anon_start file_start <<<"$(rss_parts_kib)"
rss_max=$rss_start
rss_path=""
batch=200
churn_start=$(date +%s.%N)
for ((made = 0; made < churn; made += batch)); do
  dirs=()
  for ((i = 0; i < batch; i++)); do dirs+=("$top/stagewatch/stage_$(( (made + i) % stages ))/churn_$((made + i))"); done
  mkdir "${dirs[@]}"
  rmdir "${dirs[@]}"
  if (( made % 2000 == 0 )); then
    curl -s "$url" >/dev/null
    rss=$(rss_kib)
    (( rss > rss_max )) && rss_max=$rss
    rss_path+="$(awk -v r="$rss" 'BEGIN {printf "%.1f ", r / 1024}')"
  fi
done
churn_seconds=$(awk -v a="$churn_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
sleep 3
curl -s "$url" >/dev/null
rss_end=$(rss_kib)
(( rss_end > rss_max )) && rss_max=$rss_end
# Past the 10 s a removed cgroup's path is kept for its late events, the two scrapes its name is
# kept for (the bench scrapes every 15 s here too), and the heap trims after them.
for ((t = 0; t < 30; t += 15)); do sleep 15; curl -s "$url" >/dev/null; done
sleep 2
curl -s "$url" >/dev/null
rss_settled=$(rss_kib)
read -r anon_settled file_settled <<<"$(rss_parts_kib)"
stop_agent

awk -v bin="$AGENT_BIN" -v it="$idle_ticks" -v hz="$hz" -v s="$idle_seconds" -v med="$median_ms" \
    -v st="$scrape_ticks" -v coll="$collectors" -v n="$scrapes" -v series="$series" -v churn="$churn" \
    -v cs="$churn_seconds" -v r0="$rss_start" -v r1="$rss_end" -v rmax="$rss_max" -v runs="$runs" -v threads="$by_thread" \
    -v r2="$rss_settled" -v path="$rss_path" -v a0="$anon_start" -v a2="$anon_settled" \
    -v f0="$file_start" -v f2="$file_settled" 'BEGIN {
  printf "%s: %d stages x %d cgroups, %d stage series, %d runs recorded\n", bin, 50, 20, series, runs
  printf "  idle CPU over %d s (scraped every 15 s): %.3f%% of one core\n", s, 100 * it / hz / s
  printf "  idle CPU by thread: %s\n", threads
  printf "  /metrics median of %d: %.1f ms; agent CPU per scrape: %.1f ms\n", n, med, 1000 * st / hz / n
  printf "  one scrape by collector: %s\n", coll
  printf "  RSS over %d cgroups made and removed in %.0f s: %.1f -> %.1f MiB (max %.1f, %+.1f%%)\n",
         churn, cs, r0 / 1024, r1 / 1024, rmax / 1024, 100 * (r1 - r0) / r0
  printf "  RSS every 2000 cgroups (MiB): %s\n", path
  printf "  RSS 35 s after the churn: %.1f MiB (%+.1f%%)\n", r2 / 1024, 100 * (r2 - r0) / r0
  printf "    anonymous %.1f -> %.1f MiB (%+.1f%%), files %.1f -> %.1f MiB (%+.1f%%)\n",
         a0 / 1024, a2 / 1024, 100 * (a2 - a0) / a0, f0 / 1024, f2 / 1024, 100 * (f2 - f0) / f0 }'
