#!/usr/bin/env bash
# Fetches Debian's packaged Linux 6.1 (the newest linux-image-6.1.0-*-amd64-unsigned in the
# archive, unpacked, not installed) into a cache once, and prints its directory: vmlinuz, and in
# modules/ the modules a guest needs to mount its root over 9p, with modules/order (dependencies
# first). The VM stage (tests/vm/run.sh) and the systemd deploy test boot it; scripts/test.sh
# fetches it while the build runs.
#
# Usage: tests/vm/fetch-kernel.sh BUILD_DIR
# Exit: 0, or 77 with the reason on stderr.
# Environment: STAGEWATCH_VM_CACHE (default /var/cache/stagewatch-vm, else BUILD_DIR/vm-cache
# where that is not writable), STAGEWATCH_VM_KERNEL (a package name instead of the newest).
set -euo pipefail
build=${1:?usage: tests/vm/fetch-kernel.sh BUILD_DIR}
cannot() { echo "vm: $*" >&2; exit 77; }

cache=${STAGEWATCH_VM_CACHE:-/var/cache/stagewatch-vm}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=$build/vm-cache
mkdir -p "$cache"

# One fetch at a time: a second caller waits for the first one's cache.
exec 9>"$cache/.fetch.lock"
flock 9
pkg=${STAGEWATCH_VM_KERNEL:-$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' 2>/dev/null |
                                awk '{print $1}' | sort -V | tail -1)}
if [ -z "$pkg" ]; then
  # No package lists (apt-get update never ran): the newest kernel already cached will do.
  pkg=$(ls "$cache" 2>/dev/null | grep '^linux-image-6\.1\.0-' | sort -V | tail -1 || true)
fi
[ -n "$pkg" ] || cannot "no linux-image-6.1.0-*-amd64-unsigned in the package lists; run apt-get update"
kdir=$cache/$pkg
if [ ! -f "$kdir/ready" ]; then
  echo "vm: fetching $pkg into $cache" >&2
  tmp=$(mktemp -d "$cache/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null) ||
    cannot "apt-get download $pkg failed"
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  rm -rf "$kdir" && mkdir -p "$kdir/modules"
  cp "$tmp"/root/boot/vmlinuz-* "$kdir/vmlinuz"
  # Only the modules the guest needs to mount 9p (virtio, 9p and what they depend on), in
  # load order: dependencies first, read from each module's own modinfo.
  moddir=$(echo "$tmp"/root/lib/modules/*/kernel)
  declare -A seen=()
  add_module() {
    local name=$1 ko dep
    [ -n "${seen[$name]:-}" ] && return
    seen[$name]=1
    ko=$(find "$moddir" \( -name "$name.ko" -o -name "${name//_/-}.ko" \) | head -1)
    [ -n "$ko" ] || { echo "vm: module $name is not in $pkg" >&2; exit 1; }
    for dep in $(tr '\0' '\n' < "$ko" | sed -n 's/^depends=//p' | tr ',' ' '); do add_module "$dep"; done
    cp "$ko" "$kdir/modules/"
    basename "$ko" >> "$kdir/modules/order"
  }
  for m in virtio_pci 9pnet_virtio 9p; do add_module "$m"; done
  echo "$pkg" > "$kdir/ready"
  rm -rf "$tmp"
  trap - EXIT
fi

echo "$kdir"
