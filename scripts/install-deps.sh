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
  prometheus-cpp-dev libcli11-dev libabsl-dev libyaml-cpp-dev
  # the HTTP front door (event loop, TLS via GnuTLS), bcrypt basic auth, capability dropping
  libmicrohttpd-dev libgnutls28-dev libcrypt-dev libcap-dev
  # the Alertmanager client: libcurl on GnuTLS. Its headers come from libcurl4-openssl-dev
  # (prometheus-cpp-dev needs that one, and it conflicts with libcurl4-gnutls-dev)
  libcurl3-gnutls libcurl4-openssl-dev
  # the run ledger and its JSON
  libsqlite3-dev libsqlitecpp-dev nlohmann-json3-dev
  # tests
  libgtest-dev libgmock-dev prometheus prometheus-alertmanager python3 python3-yaml procps
  util-linux
  # tests: their HTTP client and fake servers (httplib, with OpenSSL for TLS)
  libcpp-httplib-dev libssl-dev
  # the VM stage (tests/vm): Linux 6.1 under software emulation, booted from an initramfs
  qemu-system-x86 busybox-static cpio
  # packaging and deployment tests: .deb, systemd-analyze, a debootstrap root, the unit's
  # sandbox traced, the unit under systemd in a VM, the Kubernetes manifests parsed
  dpkg-dev binutils systemd debootstrap strace
  # tests: TLS certificates made at test time, libFuzzer for clang
  openssl libclang-rt-14-dev
  # tests: the run pages rendered in a real headless browser, its screenshot decoded
  chromium python3-pil
)
# The dashboards' schema check (tests/dashboards/schema/) runs TypeScript from npm: Debian's
# Node.js and npm, unless a Node.js with npm is already installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
