#!/usr/bin/env bash
# Builds the configuration fuzzer with clang and runs it: first every file in corpus/ (the
# malformed inputs found so far, as regression cases), then new inputs for a bounded time.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
seconds="${2:-30}"
cxx="$(command -v clang++-14 || command -v clang++)"
cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j2 >/dev/null
fuzzer="$build/config_fuzzer"

# Regression cases: each must run clean on its own.
"$fuzzer" -runs=0 "$here"/corpus/* 2>&1 | tail -n 3

# New inputs, from a scratch copy of the corpus so the tree is not written to.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here"/corpus/* "$work"/
"$fuzzer" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 -max_len=4096 \
  -dict="$here/yaml.dict" -artifact_prefix="$build/" "$work" 2>&1 | tail -n 5
