#!/usr/bin/env bash
# The agent's own cost on a quiet host: CPU time and resident memory over a minute, scraped
# every 15 s as Prometheus would. Needs root and build/ built.
# Usage: bench/idle_footprint.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
seconds=${1:-60}
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$AGENT_PID/status"; }

start_agent
port=$(grep -o 'address=127.0.0.1:[0-9]*' "$AGENT_LOG" | head -1 | cut -d: -f2)
sleep 5  # past start-up: probes loaded, first walk done
before=$(cpu_ticks)
for ((t = 0; t < seconds; t += 15)); do
  curl -s "http://127.0.0.1:$port/metrics" >/dev/null
  sleep 15
done
after=$(cpu_ticks)
rss=$(rss_kib)
stop_agent
awk -v c=$((after - before)) -v hz="$hz" -v s="$seconds" -v rss="$rss" 'BEGIN {
  printf "idle agent over %d s, scraped every 15 s: CPU %.3f%% of one core (%.2f s), RSS %.1f MiB\n",
         s, 100 * c / hz / s, c / hz, rss / 1024 }'
