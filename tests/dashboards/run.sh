#!/usr/bin/env bash
# Checks the Grafana dashboards in dashboards/: generated JSON up to date, the linter's own
# self-test, the lint of every dashboard (committed, and generated with site-config.yaml), and
# every panel and annotation query of both sets against a live agent and Prometheus
# (tests/dashboards/live_test.py; needs root).
#
#   tests/dashboards/run.sh [path/to/stagewatch]
#
# The binary: $1, else $STAGEWATCH_BINARY, else build/stagewatch. Exit status: 0 passed,
# 77 the live test was skipped (not root), anything else failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
binary=${1:-${STAGEWATCH_BINARY:-$root/build/stagewatch}}
case "$binary" in /*) ;; *) binary=$PWD/$binary ;; esac

python3 "$root/dashboards/generate.py" --check
python3 "$here/lint.py" --self-test
python3 "$here/lint.py" "$root"/dashboards/*.json
# The dashboards a site's configuration generates follow the same rules.
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
python3 "$root/dashboards/generate.py" --config "$here/site-config.yaml" --out "$site"
python3 "$here/lint.py" "$site"/dashboards/*.json
python3 "$here/live_test.py" --binary "$binary"
