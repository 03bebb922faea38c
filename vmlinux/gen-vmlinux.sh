#!/usr/bin/env bash
# Regenerates vmlinux/<arch>/vmlinux.h from a kernel's BTF (default: the running kernel).
# Usage: vmlinux/gen-vmlinux.sh [BTF_FILE]
# CO-RE relocations make the header portable: regenerate only to reach types that a newer
# kernel added, and record the kernel it came from in vmlinux/README.md.
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
case "$(uname -m)" in
  x86_64) arch=x86 ;;
  aarch64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/$arch"
bpftool btf dump file "$btf" format c > "$here/$arch/vmlinux.h.tmp"
mv "$here/$arch/vmlinux.h.tmp" "$here/$arch/vmlinux.h"
echo "wrote $here/$arch/vmlinux.h from $btf ($(uname -r))"
