#!/usr/bin/env bash
# The run page's cost: time to serve /runs/<id> and /api/v1/runs/<id> for a run holding the
# full 4096 points, beside /-/healthy on the same agent as the baseline, and the page's size.
# Needs root and build/ built. Usage: bench/runs_pages.sh [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
n=${1:-50}
dir=$(mktemp -d /tmp/stagewatch-bench-pages-XXXXXX)
trap 'stop_agent; rm -rf "$dir"' EXIT
ledger=$dir/ledger.db

# A real run makes the ledger and its row; its series is then filled to the bound.
"$AGENT_BIN" run --stage bench --run-id bench-1 --ledger.path "$ledger" -- true 2>/dev/null
python3 - "$ledger" <<'PY'
import datetime, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
start = db.execute("SELECT start_time FROM runs WHERE id = 'bench-1'").fetchone()[0]
t0 = int(datetime.datetime.fromisoformat(start.replace('Z', '+00:00')).timestamp() * 1000)
end = datetime.datetime.fromtimestamp((t0 + 4096 * 1000) / 1000, datetime.timezone.utc)
db.execute("UPDATE runs SET end_time = ? WHERE id = 'bench-1'",
           (end.strftime('%Y-%m-%dT%H:%M:%S.000Z'),))
db.executemany("INSERT INTO run_samples VALUES ('bench-1', ?, ?, 419430400, ?, ?, ?)",
               [(t0 + (i + 1) * 1000, (i % 500) << 20, (i % 7) / 7, (i % 11) / 110, (i % 13) / 130)
                for i in range(4096)])
db.commit()
PY
start_agent agent --ledger.path "$ledger"
port=$(agent_port)
median_ms() { http_median_ms "$port" "$1" "$n"; }
bytes() { curl -s "http://127.0.0.1:$port$1" | wc -c; }

base=$(median_ms /-/healthy)
for path in /runs/bench-1 /api/v1/runs/bench-1 /runs; do
  t=$(median_ms "$path")
  awk -v p="$path" -v t="$t" -v b="$base" -v s="$(bytes "$path")" 'BEGIN {
    printf "%-22s median %6.2f ms (%.1fx /-/healthy at %.2f ms), %d bytes\n", p, t, t / b, b, s }'
done
