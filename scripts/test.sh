#!/usr/bin/env bash
# Installs, builds and runs every test: unit (no root), privileged (root + BPF: real programs
# in the running kernel, real OOM kills) and end to end (the built binary, scraped over HTTP).
# Run as root, or the privileged and e2e tests skip and say so. Extra arguments go to ctest
# (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
# Serial: privileged tests cause real OOM kills and must not share the machine with others.
ctest --test-dir build --output-on-failure --output-junit test-results.xml "$@"
