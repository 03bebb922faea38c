#!/usr/bin/env bash
# The agent at scale: for each SIZE (CGROUPS/STAGES, default 1000/50 and 10000/500, measured in
# the same run), that many live cgroups in that many discovered stages, one sleeping process
# each, made after the agent starts, so it sees each born and records it as a discovered run.
# Per size, on a fresh agent: idle CPU (scraped every 15 s, as Prometheus would), the median
# /metrics time, the agent's CPU per scrape, its RSS while CHURN more cgroups are made and
# removed (a process exiting in each, every OOM_EVERY-th one OOM-killed: build/bench/cgroup_churn)
# and whether the agent counted every exit and kill, and, removing every cgroup at once, how
# long until every run is closed in the ledger and every stage forgotten
# (discovery.forget_after: 5s). Each figure also per 1,000 cgroups.
# Needs root and a built agent; AGENT_BIN picks the binary (to compare two builds).
# With IDLE_AFTER=SECONDS, the idle CPU is measured that long after every discovered run had its
# first sample (the steady state), not at once.
# With TASK_STATES_PASSES=N, first times N passes of task-state reads over the tree
# (build/bench/task_states_cost: /proc against the task_states iterator) before the agent.
# With SMAPS_OUT=DIR, the agent's /proc/<pid>/smaps before the churn and once settled after it
# are copied there, to find which mappings grew.
# With CPU_MIRRORS=1 on a v1 or hybrid host, each cgroup is also made at the same path in the
# v1 cpu and cpuacct hierarchies, its sleeper moved there too, as Kubernetes, Docker and Slurm
# lay out a job: the agent then reads each stage's CPU time as well.
# Usage: [AGENT_BIN=build/stagewatch] [OOM_EVERY=1000] bench/cgroup_scale.sh [idle-seconds] [churn-cgroups] [SIZE...]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
idle_seconds=${1:-60}
churn=${2:-20000}
oom_every=${OOM_EVERY:-1000}  # every this many churned cgroups, a process the kernel OOM-kills
shift $(( $# < 2 ? $# : 2 ))
sizes=(1000/50 10000/500)
[ $# -gt 0 ] && sizes=("$@")
forget_after=5
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
# The same path in the v1 cpu and cpuacct hierarchies (CPU_MIRRORS=1), where they are mounted.
mirrors=()
if [ "${CPU_MIRRORS:-0}" = 1 ] && [ "$root" != /sys/fs/cgroup ]; then
  for h in cpu cpuacct; do
    [ -d "/sys/fs/cgroup/$h" ] && mirrors+=("/sys/fs/cgroup/$h${own%/}/sw-bench-scale-$$")
  done
fi
sleepers=()

kill_sleepers() {
  for pid in "${sleepers[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${sleepers[@]}"; do wait "$pid" 2>/dev/null || true; done
  sleepers=()
}
remove_tree() {
  kill_sleepers
  local t
  for t in "$top" "${mirrors[@]}"; do
    [ -d "$t" ] && find "$t" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

config=$(mktemp /tmp/stagewatch-bench-scale-XXXXXX.yaml)
ledger_dir=$(mktemp -d /tmp/stagewatch-bench-ledger-XXXXXX)
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
open_runs() { sqlite3 "$ledger_dir/ledger.db" 'SELECT count(*) FROM runs WHERE end_time IS NULL'; }
stage_series() { curl -s "$url" | grep -c 'pipeline_stage="stage_' || true; }
# "exits kills": the stages' processes exited and kernel OOM kills, summed over the stages.
stage_exits_and_kills() {
  curl -s "$url" | awk '/pipeline_stage="stage_/ && /^stagewatch_processes_exited_total\{/ {e += $NF}
    /pipeline_stage="stage_/ && /^stagewatch_oom_kills_total\{/ && /kind="kernel"/ {k += $NF}
    END {printf "%d %d\n", e, k}'
}

# Where an uncounted exit may have gone, "unattributed-exits unknown-events slot-overflows
# pair-overflows lost-lifecycle-events": exits counted under no stage, events of cgroups that
# died unnamed, switches and exits refused for want of a sched slot, preemption pairs refused
# (no exit lost with them), lifecycle events the ring buffer dropped.
loss_counters() {
  curl -s "$url" | awk '/^stagewatch_processes_exited_total\{/ && /pipeline_stage="unattributed"/ {u += $NF}
    /^stagewatch_unknown_cgroup_events_total/ {e += $NF}
    /^stagewatch_sched_map_overflows_total\{/ && /map="stats"/ {o += $NF}
    /^stagewatch_sched_map_overflows_total\{/ && /map="preemptions"/ {p += $NF}
    /^stagewatch_probe_lost_events_total\{/ && /probe="lifecycle"/ {l += $NF}
    END {printf "%d %d %d %d %d\n", u, e, o, p, l}'
}

measure() {  # measure CGROUPS STAGES
  local cgroups=$1 stages=$2
  local per_stage=$(( cgroups / stages ))
  rm -f "$ledger_dir"/ledger.db*
  # Room for every stage (the default discovery.max_stages is 32), and a ledger of the bench's
  # own; keys both builds know.
  printf 'discovery:\n  max_stages: %d\n  forget_after: %ds\nruns:\n  ledger_path: %s/ledger.db\n' \
    $(( stages + 16 )) "$forget_after" "$ledger_dir" >"$config"
  start_agent --config.file="$config"
  url="http://127.0.0.1:$(agent_port)/metrics"
  sleep 5  # past start-up: probes loaded, first walk done

  mkdir -p "$top/stagewatch"
  local s r dir
  for ((s = 0; s < stages; s++)); do
    for ((r = 0; r < per_stage; r++)); do
      dir="$top/stagewatch/stage_$s/run_$r"
      mkdir -p "$dir"
      sleep 100000 &
      sleepers+=($!)
      echo $! >"$dir/cgroup.procs"
      for m in "${mirrors[@]}"; do
        mkdir -p "$m/stagewatch/stage_$s/run_$r"
        echo $! >"$m/stagewatch/stage_$s/run_$r/cgroup.procs"
      done
    done
  done

  if [ -n "${TASK_STATES_PASSES:-}" ]; then
    build/bench/task_states_cost "$top" "$TASK_STATES_PASSES"
  fi

  # Every run recorded (1 s after its cgroup appears), one ledger row each.
  local runs=0
  for ((t = 0; t < 300; t++)); do
    runs=$(grep -c 'msg="run started"' "$AGENT_LOG" || true)
    (( runs >= cgroups && t >= 15 )) && break
    sleep 1
  done
  curl -s "$url" >/dev/null  # the first scrape names every stage
  sleep 15
  # With IDLE_AFTER, the steady state: past every discovered run's first sample (a new run's
  # first reads all its files: 10,000 take the runs' sampler about 12 minutes at its 100 reads
  # a second; the idle ones after it read one or two), then IDLE_AFTER seconds more.
  local first_sampled="" sampled=0
  if [ -n "${IDLE_AFTER:-}" ]; then
    for ((t = 15; t < 3600; t += 15)); do
      sampled=$(sqlite3 "$ledger_dir/ledger.db" "SELECT count(DISTINCT run_id) FROM run_samples" 2>/dev/null || echo 0)
      (( sampled >= cgroups )) && { first_sampled=$t; break; }
      sleep 15
      curl -s "$url" >/dev/null
    done
    [ -n "$first_sampled" ] || echo "warning: only $sampled of $cgroups runs sampled after an hour" >&2
  fi
  for ((t = 0; t < ${IDLE_AFTER:-0}; t += 15)); do
    sleep 15
    curl -s "$url" >/dev/null
  done

  local before threads_before idle_ticks by_thread
  before=$(cpu_ticks)
  threads_before=$(thread_ticks)
  # Also by minute: a spike in one minute (a pass every 10 minutes, the host's own doings) shows.
  local minute_start=$before minutes=""
  for ((t = 15; t <= idle_seconds; t += 15)); do
    sleep 15
    curl -s "$url" >/dev/null
    if (( t % 60 == 0 )); then
      minutes+="$(awk -v d=$(( $(cpu_ticks) - minute_start )) -v hz="$hz" 'BEGIN {printf "%.2f ", 100 * d / hz / 60}')"
      minute_start=$(cpu_ticks)
    fi
  done
  idle_ticks=$(( $(cpu_ticks) - before ))
  # Idle CPU by thread name (threads of one name summed), largest first.
  by_thread=$(awk -v hz="$hz" -v s="$idle_seconds" 'NR == FNR {b[$1] = $3; next}
    {k = $2 ~ /^sw-/ ? $2 : $2 "/" $1; n[k] += $3 - b[$1]} END {for (k in n) if (n[k] > 0) printf "%s %.3f%%\n", k, 100 * n[k] / hz / s}' \
    <(echo "$threads_before") <(thread_ticks) | sort -k2 -gr | head -5 | tr '\n' ',' | sed 's/,$//; s/,/, /g')

  local scrapes=50 times scrape_ticks median_ms last series collectors
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
  collectors=$(awk -F'[{}" ]+' '/^stagewatch_scrape_collector_duration_seconds\{/ && $4 > 0.0005 {
    printf "%s %.1f ms, ", $3, $4 * 1000 }' <<<"$last")
  rm -f "$times"
  local rss_live anon_live
  rss_live=$(rss_kib)

  local rss_start anon_start file_start rss_max rss_path="" made n made_out churn_start
  local chunk=$(( churn >= 10 ? churn / 10 : 1 )) exits_made=0 kills_made=0 counted_before
  local losses_before losses
  rss_start=$rss_live
  read -r anon_start file_start <<<"$(rss_parts_kib)"
  [[ -n "${SMAPS_OUT:-}" ]] && cp "/proc/$AGENT_PID/smaps" "$SMAPS_OUT/before-churn.$cgroups.smaps"
  rss_max=$rss_start
  counted_before=$(stage_exits_and_kills)
  losses_before=$(loss_counters)
  churn_start=$(date +%s.%N)
  # A tenth at a time, a scrape and an RSS reading after each.
  for ((made = 0; made < churn; made += chunk)); do
    n=$(( churn - made < chunk ? churn - made : chunk ))
    made_out=$(build/bench/cgroup_churn "$top/stagewatch" "$stages" "$made" "$n" "$oom_every")
    exits_made=$(( exits_made + $(awk '{print $4}' <<<"$made_out") ))
    kills_made=$(( kills_made + $(awk '{print $6}' <<<"$made_out") ))
    curl -s "$url" >/dev/null
    rss=$(rss_kib)
    (( rss > rss_max )) && rss_max=$rss
    rss_path+="$(awk -v r="$rss" 'BEGIN {printf "%.1f ", r / 1024}')"
  done
  local churn_seconds rss_end rss_settled anon_settled file_settled churn_open
  churn_seconds=$(awk -v a="$churn_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  sleep 3
  curl -s "$url" >/dev/null
  rss_end=$(rss_kib)
  (( rss_end > rss_max )) && rss_max=$rss_end
  # Past the 10 s a removed cgroup's path is kept for its late events, the two scrapes its name
  # is kept for (the bench scrapes every 15 s here too), and the heap trims after them.
  for ((t = 0; t < 30; t += 15)); do sleep 15; curl -s "$url" >/dev/null; done
  sleep 2
  curl -s "$url" >/dev/null
  rss_settled=$(rss_kib)
  read -r anon_settled file_settled <<<"$(rss_parts_kib)"
  [[ -n "${SMAPS_OUT:-}" ]] && cp "/proc/$AGENT_PID/smaps" "$SMAPS_OUT/settled.$cgroups.smaps"
  # What the agent counted of the churn's exits and OOM kills, against what it made.
  local exits_counted kills_counted
  read -r exits_counted kills_counted <<<"$(paste -d' ' <(echo "$counted_before") \
    <(stage_exits_and_kills) | awk '{print $3 - $1, $4 - $2}')"
  losses=$(paste -d' ' <(echo "$losses_before") <(loss_counters) |
    awk '{printf "unattributed exits %d, unknown-cgroup events %d, sched slot overflows %d (preemption pairs %d), lifecycle events lost %d", $6 - $1, $7 - $2, $8 - $3, $9 - $4, $10 - $5}')
  # Runs of the churn still open (each churned cgroup is a run, closed at its rmdir).
  churn_open=$(sqlite3 "$ledger_dir/ledger.db" \
    "SELECT count(*) FROM runs WHERE end_time IS NULL AND cgroup_path LIKE '%/churn_%'")
  local churn_rows
  churn_rows=$(sqlite3 "$ledger_dir/ledger.db" "SELECT count(*) FROM runs WHERE cgroup_path LIKE '%/churn_%'")

  # Every cgroup removed at once: its tasks killed, then every directory.
  local removed_at closed_s="" forgotten_s="" now open left
  kill_sleepers
  find "$top/stagewatch" -mindepth 1 -depth -type d -exec rmdir {} +
  removed_at=$(date +%s.%N)
  for m in "${mirrors[@]}"; do find "$m/stagewatch" -mindepth 1 -depth -type d -exec rmdir {} +; done
  while :; do
    now=$(awk -v a="$removed_at" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    if [ -z "$closed_s" ]; then
      open=$(open_runs)
      (( open == 0 )) && closed_s=$now
    fi
    if [ -z "$forgotten_s" ]; then
      left=$(stage_series)
      (( left == 0 )) && forgotten_s=$now
    fi
    [ -n "$closed_s" ] && [ -n "$forgotten_s" ] && break
    if awk -v n="$now" -v f="$forget_after" 'BEGIN {exit !(n > f + 120)}'; then
      closed_s=${closed_s:-"> $now ($open open)"}; forgotten_s=${forgotten_s:-"> $now ($left series)"}
      break
    fi
    sleep 0.5
  done
  stop_agent

  awk -v bin="$AGENT_BIN" -v it="$idle_ticks" -v hz="$hz" -v s="$idle_seconds" -v med="$median_ms" \
      -v st="$scrape_ticks" -v coll="$collectors" -v n="$scrapes" -v series="$series" -v churn="$churn" \
      -v cs="$churn_seconds" -v r0="$rss_start" -v r1="$rss_end" -v rmax="$rss_max" -v runs="$runs" -v threads="$by_thread" \
      -v r2="$rss_settled" -v path="$rss_path" -v a0="$anon_start" -v a2="$anon_settled" \
      -v f0="$file_start" -v f2="$file_settled" -v cg="$cgroups" -v stg="$stages" \
      -v closed="$closed_s" -v forgot="$forgotten_s" -v fa="$forget_after" \
      -v copen="$churn_open" -v crows="$churn_rows" -v em="$exits_made" -v km="$kills_made" \
      -v ec="$exits_counted" -v kc="$kills_counted" -v losses="$losses" -v after="${IDLE_AFTER:-0}" -v sampled="$first_sampled" -v minutes="$minutes" 'BEGIN {
    k = cg / 1000
    printf "%s: %d cgroups in %d stages, %d stage series, %d runs recorded\n", bin, cg, stg, series, runs
    when = ""
    if (sampled != "") when = sprintf(", from %d s after every run had its first sample (%d s after every run was recorded)", after, sampled)
    printf "  idle CPU over %d s%s (scraped every 15 s): %.3f%% of one core (%.4f%% per 1,000 cgroups)\n",
           s, when, 100 * it / hz / s, 100 * it / hz / s / k
    printf "  idle CPU by thread: %s\n", threads
    if (minutes != "") printf "  idle CPU by minute, %% of one core: %s\n", minutes
    printf "  /metrics median of %d: %.1f ms (%.2f ms per 1,000 cgroups); agent CPU per scrape: %.1f ms\n",
           n, med, med / k, 1000 * st / hz / n
    printf "  one scrape by collector (over 0.5 ms): %s\n", coll
    printf "  RSS with them live: %.1f MiB (%.2f MiB per 1,000 cgroups)\n", r0 / 1024, r0 / 1024 / k
    printf "  RSS over %d cgroups made and removed in %.0f s: %.1f -> %.1f MiB (max %.1f, %+.1f%%)\n",
           churn, cs, r0 / 1024, r1 / 1024, rmax / 1024, 100 * (r1 - r0) / r0
    printf "  RSS along the churn (MiB): %s\n", path
    printf "  RSS 35 s after the churn: %.1f MiB (%+.1f%%)\n", r2 / 1024, 100 * (r2 - r0) / r0
    printf "    anonymous %.1f -> %.1f MiB (%+.1f%%), files %.1f -> %.1f MiB (%+.1f%%)\n",
           a0 / 1024, a2 / 1024, 100 * (a2 - a0) / a0, f0 / 1024, f2 / 1024, 100 * (f2 - f0) / f0
    printf "  churned runs in the ledger: %d of %d, %d left open\n", crows, churn, copen
    printf "  the churn'"'"'s exits counted: %d of %d; its OOM kills counted: %d of %d\n", ec, em, kc, km
    printf "  over the churn: %s\n", losses
    printf "  all %d removed at once: every run closed after %s s, every stage forgotten after %s s (forget_after %d s)\n",
           cg, closed, forgot, fa }'
}

for size in "${sizes[@]}"; do
  measure "${size%/*}" "${size#*/}"
  remove_tree
done
