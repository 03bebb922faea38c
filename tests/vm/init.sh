#!/bin/busybox sh
# PID 1 of the VM stage's guest (tests/vm/run.sh packs it as /init): loads the kernel's own
# virtio and 9p modules, mounts the host's root read-only, the results directory read-write
# at its host path and a scratch directory at /var/tmp, and runs tests/vm/guest.sh there.
# Powers off when it ends.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /vm.env

for m in $(cat /modules/order); do
  insmod "/modules/$m" || echo "vm: insmod $m failed"
done
ip link set lo up

finish() {
  sync
  poweroff -f
}

opts=trans=virtio,version=9p2000.L,msize=262144,cache=loose
if ! mount -t 9p -o "ro,$opts" hostroot /host; then
  echo "vm: cannot mount the host root over 9p"
  finish
fi
# The source and build trees stay visible where the guest mounts its own /tmp, /run and
# /var/tmp over the host's (a clone under /tmp, as CI may make): held aside, put back after.
kept=""
for tree in "$SOURCE" "$BUILD"; do
  case "$tree" in /tmp/* | /run/* | /var/tmp/*) ;; *) continue ;; esac
  hold=/kept/$(echo "$tree" | md5sum | cut -c1-12)
  mkdir -p "$hold" && mount -o bind "/host$tree" "$hold" && kept="$kept $hold=$tree"
done
# The guest's own kernel filesystems and scratch space over the read-only host tree.
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm 2>/dev/null
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
# A disk-backed directory (not tmpfs) for the tests that fault file pages in from a device.
mount -t 9p -o "$opts" scratch /host/var/tmp
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /host/sys/fs/cgroup
mount -t bpf bpf /host/sys/fs/bpf
mount -t tracefs tracefs /host/sys/kernel/tracing
mount -t debugfs debugfs /host/sys/kernel/debug
for pair in $kept; do
  mkdir -p "/host${pair#*=}" && mount -o bind "${pair%%=*}" "/host${pair#*=}"
done
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "/host$RESULTS"; then
  echo "vm: cannot mount the results directory over 9p"
  finish
fi

chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp LANG=C.UTF-8 \
  /bin/bash "$SOURCE/tests/vm/guest.sh" "$BUILD" "$RESULTS" "$PLAN"
finish
