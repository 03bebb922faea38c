#!/usr/bin/env bash
# The VM stage: boots Debian's packaged Linux 6.1 (the newest linux-image-6.1.0-*-amd64-unsigned
# in the archive, unpacked, not installed) under qemu with software emulation, pure cgroup v2,
# with this host's root read-only over 9p, and runs the privileged and e2e test binaries there
# (tests/vm/guest.sh). Results land in BUILD_DIR/vm-results for the vm.* ctest entries.
#
# Usage: tests/vm/run.sh BUILD_DIR
# Exit: 0 when the guest ran its test plan, 77 when this host cannot run a VM (no qemu, no
# kernel in the archive) and STAGEWATCH_REQUIRE_PRIVILEGED is not 1, else 1.
# Environment: STAGEWATCH_VM_CACHE and STAGEWATCH_VM_KERNEL (tests/vm/fetch-kernel.sh),
# STAGEWATCH_VM_TIMEOUT (seconds for all boots together, default 3300, inside ctest's 3600),
# STAGEWATCH_VM_TCG_THREAD (multi to emulate each guest CPU on its own host thread),
# STAGEWATCH_VM_PLAN (another plan file, for a quick manual run of a few tests; ctest's vm.*
# entries always follow tests/vm/plan.txt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: tests/vm/run.sh BUILD_DIR}" && pwd)
results=$build/vm-results

cannot_run() {
  echo "vm: $*" >&2
  mkdir -p "$results"
  echo "skipped: $*" > "$results/status"
  if [ "${STAGEWATCH_REQUIRE_PRIVILEGED:-}" = 1 ]; then exit 1; fi
  exit 77
}

command -v qemu-system-x86_64 >/dev/null || cannot_run "qemu-system-x86_64 is missing; run scripts/install-deps.sh as root"
command -v busybox >/dev/null || cannot_run "busybox is missing; run scripts/install-deps.sh as root"
command -v cpio >/dev/null || cannot_run "cpio is missing; run scripts/install-deps.sh as root"

kdir=$("$here/fetch-kernel.sh" "$build") || cannot_run "no kernel to boot (see above)"
pkg=$(basename "$kdir")

# ---- the initramfs: busybox, the modules, and an init that mounts the host root ------------
rm -rf "$results" && mkdir -p "$results"
initrd=$build/vm-initramfs
rm -rf "$initrd" && mkdir -p "$initrd"/{bin,dev,proc,sys,host,modules}
cp "$(command -v busybox)" "$initrd/bin/busybox"
cp "$kdir"/modules/* "$initrd/modules/"
install -m 755 "$here/init.sh" "$initrd/init"
plan=$(realpath "${STAGEWATCH_VM_PLAN:-$here/plan.txt}")
printf 'SOURCE=%q\nBUILD=%q\nRESULTS=%q\nPLAN=%q\n' "$source_dir" "$build" "$results" "$plan" \
  > "$initrd/vm.env"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1) > "$build/vm-initramfs.cpio.gz"

# ---- boot ---------------------------------------------------------------------------------
# tsc=reliable: qemu derives the emulated TSC from the host clock, so it is stable; without it
# the guest falls back to the HPET, an emulated device access on every clock read.
# Single-threaded TCG: with a host thread per guest CPU (thread=multi), a guest CPU wedges now
# and then (its timers stop; the IPIs that patch a tracepoint at a BPF link's attach or release
# never return), about once every 300 s of guest time (tests/vm/README.md, Stalls).
# softlockup_panic, panic_on_rcu_stall: a guest with one CPU wedged all the same panics and
# powers off. When every CPU wedges nothing is left to panic: the guest writes a heartbeat file
# every 10 s (tests/vm/guest.sh), and one silent for kSilence seconds is stopped here. Either
# way the guest is booted again, up to kBoots times within the time budget, and each boot skips
# the plan lines an earlier one finished, so a stall costs one line's run.
kBoots=7
tcg_threads=${STAGEWATCH_VM_TCG_THREAD:-single}
kSilence=300
deadline=$(( $(date +%s) + ${STAGEWATCH_VM_TIMEOUT:-3300} ))
rm -rf "$results"/*
qemu=""
trap '[ -n "$qemu" ] && kill "$qemu" 2>/dev/null' EXIT
# Returns 0 when the guest finished its plan, 2 when it stalled, 1 otherwise.
boot() {
  rm -rf "$results/status" "$results/console.log" "$results/heartbeat" "$build/vm-scratch"
  mkdir -p "$build/vm-scratch"
  echo "vm: booting $pkg under qemu (software emulation, ${tcg_threads}-threaded), results in $results"
  local start=$(date +%s) rc stalled="" now last
  qemu-system-x86_64 \
    -accel tcg,thread=$tcg_threads -cpu max -smp 2 -m 2048 \
    -object memory-backend-ram,id=node0,size=1024M -numa node,nodeid=0,cpus=0,memdev=node0 \
    -object memory-backend-ram,id=node1,size=1024M -numa node,nodeid=1,cpus=1,memdev=node1 \
    -kernel "$kdir/vmlinuz" -initrd "$build/vm-initramfs.cpio.gz" \
    -append "console=ttyS0 cgroup_no_v1=all tsc=reliable numa_balancing=disable panic=-1 softlockup_panic=1 sysctl.kernel.panic_on_rcu_stall=1 quiet loglevel=4" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$results,mount_tag=results,security_model=none,multidevs=remap" \
    -virtfs "local,path=$build/vm-scratch,mount_tag=scratch,security_model=none,multidevs=remap" \
    -nic none -display none -serial stdio -monitor none -no-reboot \
    </dev/null > >(tee "$results/console.log") 2>&1 &
  qemu=$!
  while kill -0 "$qemu" 2>/dev/null; do
    sleep 5
    now=$(date +%s)
    last=$(stat -c %Y "$results/heartbeat" 2>/dev/null || echo "$start")
    if (( now - last > kSilence )); then
      stalled="no heartbeat from the guest for $(( now - last )) s"
    elif (( now > deadline )); then
      stalled="out of time (STAGEWATCH_VM_TIMEOUT)"
    fi
    if [ -n "$stalled" ]; then
      echo "vm: $stalled; stopping qemu" >&2
      kill "$qemu" 2>/dev/null
      break
    fi
  done
  set +e
  wait "$qemu"
  rc=$?
  qemu=""
  set -e
  sleep 1  # tee's last lines
  echo "vm: qemu exited with $rc after $(( $(date +%s) - start )) s"
  rm -rf "$build/vm-scratch"
  if [ -f "$results/status" ] && grep -q '^done' "$results/status"; then return 0; fi
  if [[ $stalled == "no heartbeat"* ]] ||
     grep -q 'Kernel panic - not syncing: \(softlockup\|RCU Stall\)' "$results/console.log"; then
    return 2
  fi
  return 1
}
for attempt in $(seq 1 $kBoots); do
  rc=0
  boot || rc=$?
  [ $rc = 0 ] && break
  if [ $rc = 2 ] && [ "$attempt" -lt $kBoots ] && (( $(date +%s) + kSilence < deadline )); then
    echo "vm: the guest stalled under emulation (console above); booting it again" >&2
    cp "$results/console.log" "$build/vm-stalled-console.$attempt.log"
  else
    echo "vm: the guest did not finish its test plan (see $results/console.log)" >&2
    exit 1
  fi
done
