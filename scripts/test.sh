#!/usr/bin/env bash
# Installs, builds and runs every test: unit (no root), privileged (root + BPF: real programs
# in the running kernel, real OOM kills) and end to end (the built binary, scraped over HTTP).
# Run as root, or the privileged and e2e tests skip and say so. Extra arguments go to ctest
# (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The whole suite as root: the deploy and VM tests' downloads (a Debian root, a packaged
# kernel) go on while the build runs; a test fetches whatever is still missing itself.
fetches=()
if [ "$(id -u)" = 0 ] && [ $# = 0 ]; then
  mkdir -p build
  tests/vm/fetch-kernel.sh build > build/fetch-kernel.log 2>&1 & fetches+=($!)
  /usr/bin/python3 tests/deploy/debian_root.py > build/fetch-debian-root.log 2>&1 & fetches+=($!)
  trap 'kill "${fetches[@]}" 2>/dev/null' EXIT
fi
scripts/build.sh
for pid in "${fetches[@]}"; do
  wait "$pid" || echo "test: a download failed (build/fetch-*.log); its tests will try again" >&2
done
trap - EXIT
# Serial: privileged tests cause real OOM kills and must not share the machine with others.
ctest --test-dir build --output-on-failure --output-junit test-results.xml "$@"
