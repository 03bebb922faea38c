#!/usr/bin/env bash
# A wrong-password flood against the agent's TLS + basic auth endpoint: how long a scraper that
# logged in before the flood waits for /metrics while 0, 8, 32, 60 and 150 clients send wrong
# passwords in a loop (bench/auth_flood.cc). The 0-client round is the baseline of the same run.
# Needs root (the agent loads its probes) and build/ built with the auth_flood target.
# Usage: bench/auth_flood.sh [seconds per round] [agent binary]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
AGENT_BIN=${2:-build/stagewatch}
source bench/lib.sh

dir=$(mktemp -d /tmp/stagewatch-auth-flood-XXXXXX)
trap 'stop_agent; rm -rf "$dir"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=stagewatch-bench -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
hash=$(/usr/bin/python3 -W ignore -c 'import crypt; print(crypt.crypt("right", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' 2>/dev/null)
cat >"$dir/web.yml" <<YAML
tls_server_config:
  cert_file: $dir/cert.pem
  key_file: $dir/key.pem
basic_auth_users:
  scraper: '$hash'
YAML

start_agent --web.config.file "$dir/web.yml" --ledger.path "$dir/ledger.db"
port=$(grep -o 'address=127.0.0.1:[0-9]*' "$AGENT_LOG" | head -1 | cut -d: -f2)
echo "agent $("$AGENT_BIN" --version 2>&1 | head -1), $seconds s per round"
for flooders in 0 8 32 60 150; do
  build/bench/auth_flood "$port" scraper right "$flooders" "$seconds"
  sleep 2  # the flood's connections close, its throttled answers drain
done
