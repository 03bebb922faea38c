#!/usr/bin/env bash
# Installs every build, test and run-time dependency of stagewatch from Debian packages.
# Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  # build
  cmake make g++ pkg-config clang llvm
  # kernel side
  libbpf-dev bpftool libelf-dev zlib1g-dev
  # user side
  prometheus-cpp-dev libcli11-dev libabsl-dev libyaml-cpp-dev libcpp-httplib-dev libssl-dev
  libsqlite3-dev nlohmann-json3-dev
  # tests
  libgtest-dev libgmock-dev prometheus prometheus-alertmanager python3 procps util-linux
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root (or with sudo)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
