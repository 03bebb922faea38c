#!/usr/bin/env bash
# Type-checks the generated dashboards against @grafana/schema from npm (tests/dashboards/schema/).
#
#   tests/dashboards/schema.sh [DASHBOARD.json...]
#
# Default: dashboards/*.json, and the dashboards generated with tests/dashboards/site-config.yaml.
#
# Installs the pinned @grafana/schema and TypeScript (schema/package-lock.json) with `npm ci`
# into $STAGEWATCH_NPM_DIR (default build/grafana-schema), once per lock file. Needs Node.js
# and npm (scripts/install-deps.sh) and the npm registry.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${STAGEWATCH_NPM_DIR:-$root/build/grafana-schema}

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "schema.sh: '$tool' not found: install the Debian packages nodejs and npm" \
         "(scripts/install-deps.sh)" >&2
    exit 1
  fi
done

mkdir -p "$work"
if ! cmp -s "$here/schema/package-lock.json" "$work/package-lock.json" ||
   [ ! -x "$work/node_modules/.bin/tsc" ]; then
  cp "$here/schema/package.json" "$here/schema/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ "$#" -eq 0 ]; then
  # The committed dashboards, and those a site's configuration generates.
  rm -rf "$work/site"
  python3 "$root/dashboards/generate.py" --config "$here/site-config.yaml" --out "$work/site"
  set -- "$root"/dashboards/*.json "$work"/site/dashboards/*.json
fi
exec python3 "$here/schema/check.py" --work "$work" "$@"
