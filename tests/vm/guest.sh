#!/usr/bin/env bash
# Runs inside the VM stage's guest (from tests/vm/init.sh, chrooted into the host's read-only
# root): delegates the memory, cpu, pids and cpuset controllers down a cgroup v2 tree, prints what
# `stagewatch features` finds on this kernel, and runs each line of tests/vm/plan.txt with
# gtest XML results written to the shared results directory.
set -u
build=$1
results=$2
plan=$3
cg=/sys/fs/cgroup

echo "vm: kernel $(uname -r), $(nproc) CPUs, clocksource" \
  "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
  "cgroup2 controllers: $(cat $cg/cgroup.controllers)"
# The root may hold processes and still delegate; every cgroup beneath it holds either
# processes or children with controllers, never both (the no-internal-processes rule).
delegate="+memory +cpu +pids +cpuset"
echo "$delegate" > $cg/cgroup.subtree_control
mkdir -p $cg/vm-tests
echo "$delegate" > $cg/vm-tests/cgroup.subtree_control

# Debian's kernels default to kernel.perf_event_paranoid=3, under which perf_event_open needs
# CAP_SYS_ADMIN whatever CAP_PERFMON; set 2, as docs/deploy.md tells users of such nodes.
echo 2 > /proc/sys/kernel/perf_event_paranoid

# Proof of life for tests/vm/run.sh, which stops a guest whose CPUs all stalled.
(while :; do date +%s > "$results/heartbeat"; sleep 10; done) &
heartbeat=$!

export STAGEWATCH_REQUIRE_PRIVILEGED=1
# Software emulation runs the guest several times slower than the host, and unevenly (one host
# thread takes turns between the guest CPUs): the tests' deadlines stretch 3-fold here.
export STAGEWATCH_TEST_DEADLINE_SCALE=3
declare -A featured=()
while read -r run kind filter environment attach; do
  case "$run" in '' | '#'*) continue ;; esac
  [ "$environment" = - ] && environment=
  if [ -z "${featured[$run]:-}" ]; then
    featured[$run]=1
    echo "vm: ---- stagewatch features (run $run${environment:+, $environment}) ----"
    env $environment "$build/stagewatch" features 2>&1 | tee "$results/features.$run.txt"
    env $environment "$build/stagewatch" features --json > "$results/features.$run.json" 2>&1
  fi
  # A line an earlier boot finished (gtest writes its XML at the end) is not run again.
  if [ -s "$results/$run.$kind.xml" ]; then
    echo "vm: run $run, $kind tests: finished in an earlier boot"
    continue
  fi
  # Each binary alone in its own cgroup: its TestCgroups go beneath it (tests/test_support.cc).
  dir=$cg/vm-tests/$run-$kind
  mkdir -p "$dir"
  start=$(date +%s)
  timeout -k 10 1200 env $environment sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" --gtest_filter="$3" --gtest_output=xml:"$4"' \
    _ "$dir" "$build/tests/${kind}_tests" "$filter" "$results/$run.$kind.xml" > "$results/$run.$kind.log" 2>&1
  rc=$?
  echo "vm: run $run, $kind tests ($filter): exit $rc," \
    "$(grep -c '^\[       OK \]' "$results/$run.$kind.log") passed," \
    "$(grep -c '^\[  FAILED  \] .* ms)$' "$results/$run.$kind.log") failed, $(( $(date +%s) - start )) s"
  grep '^\[  FAILED  \] .* ms)$' "$results/$run.$kind.log"
  # Whatever a crashed binary left behind, deepest first.
  find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null
done < "$plan"
kill "$heartbeat"
sync
echo done > "$results/status"
