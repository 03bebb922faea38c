#!/usr/bin/env bash
# Run lists over a big ledger: build/bench/runs_filter_cost makes a ledger of N runs (one
# interrupted run older than 90% of them) and times the /runs handler in process; then an agent
# serves that ledger and /runs, /runs?verdict=interrupted and its JSON are timed over HTTP
# beside /-/healthy, as bench/runs_pages.sh does for the run page.
# Needs root and build/ built. Usage: bench/runs_filter.sh [runs] [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-1000000}
n=${2:-30}
dir=$(mktemp -d /tmp/stagewatch-bench-filter-XXXXXX)
trap 'stop_agent; rm -rf "$dir" "$AGENT_LOG"' EXIT

build/bench/runs_filter_cost "$runs" 21 "$dir"
start_agent agent --ledger.path "$dir/ledger.db"
port=$(agent_port)

base=$(http_median_ms "$port" /-/healthy "$n")
for path in /runs '/runs?verdict=interrupted' '/api/v1/runs?verdict=interrupted'; do
  t=$(http_median_ms "$port" "$path" "$n")
  size=$(curl -s "http://127.0.0.1:$port$path" | wc -c)
  awk -v p="$path" -v t="$t" -v b="$base" -v s="$size" 'BEGIN {
    printf "%-36s median %6.2f ms (%.1fx /-/healthy at %.2f ms), %d bytes\n", p, t, t / b, b, s }'
done
