#!/usr/bin/env bash
# The benchmarks' own tools (not needed to build or test): perf, libbpf-tools, stress-ng.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends linux-perf libbpf-tools stress-ng
