#!/usr/bin/env bash
# Installs, builds and runs the agent with its embedded default configuration, serving
# metrics on :9617. Extra arguments go to `stagewatch` (try --help). Needs root for BPF.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/stagewatch "$@"
