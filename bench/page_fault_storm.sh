#!/usr/bin/env bash
# Overhead of counting page faults: a pinned page-fault storm (bench/fault_storm.c) timed
# twice without (A, A') and once with the probe loaded (B) each round, in the order A A' B on
# odd rounds and B A' A on even ones, so drift on a shared machine falls on both sides. Prints
# each run, the medians, the median of the rounds' paired ratios B/A, and beside it A'/A: the
# noise of the measure itself. The ratio is of the storm's own CPU time (user + system), which
# leaves out time spent waiting for a CPU that other work holds; wall seconds are printed
# alongside.
#
#   sudo bench/page_fault_storm.sh                      # the whole agent, all probes on
#   sudo MODE=cow bench/page_fault_storm.sh             # copy-on-write of a cached file's pages
#   sudo AGENT="build/bench/load_memory_probe --faults=exceptions" READY=^ready \
#     bench/page_fault_storm.sh                         # the memory probe alone
#
# Environment: BUILD (build dir, default build), AGENT (what to run beside the storm; default
# the agent), READY (what AGENT prints once attached, an extended regex; default the agent's
# listening line), SETTLE (seconds to let AGENT finish starting, 1), ROUNDS (20), ITERATIONS (4), MIB (64 MiB mapped per iteration), MODE (anon:
# fresh anonymous pages; cow: copies of a cached file's pages, see bench/fault_storm.c), CPU (0, the
# CPU the storm is pinned to). Needs root; build the two programs first.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
AGENT=${AGENT:-$BUILD/stagewatch --web.listen-address=127.0.0.1:0}
READY=${READY:-'msg="listening"'}
STORM=${STORM:-$BUILD/bench/fault_storm}
ROUNDS=${ROUNDS:-20}
SETTLE=${SETTLE:-1}
ITERATIONS=${ITERATIONS:-4}
MIB=${MIB:-64}
CPU=${CPU:-0}
MODE=${MODE:-anon}

for bin in "$STORM" "${AGENT%% *}"; do
  if [[ ! -x $bin ]]; then
    echo "missing $bin: build it first (cmake --build $BUILD)" >&2
    exit 1
  fi
done
[[ $(id -u) == 0 ]] || { echo "run as root: the probe loads BPF programs" >&2; exit 1; }

source bench/lib.sh
# $AGENT is a command line: split into words on purpose.
# shellcheck disable=SC2086
start_agent() { start_command "$READY" $AGENT || exit 1; sleep "$SETTLE"; }

# One storm; prints "<wall seconds> <CPU seconds> <minor faults>".
storm() { taskset -c "$CPU" "$STORM" "$ITERATIONS" "$MIB" "$MODE"; }

without=()
counted=()
again=()
with=()
run() {  # run without|again|with
  local wall cpu faults
  if [[ $1 == with ]]; then
    start_agent
    read -r wall cpu faults < <(storm)
    stop_agent
    with+=("$cpu")
  else
    read -r wall cpu faults < <(storm)
    counted+=("$faults")
    if [[ $1 == again ]]; then again+=("$cpu"); else without+=("$cpu"); fi
  fi
  printf 'round %d %-8s cpu %s s  wall %s s  %s faults\n' "$round" "$1" "$cpu" "$wall" "$faults"
}

echo "storm: $ITERATIONS x $MIB MiB ($MODE) on CPU $CPU; agent: $AGENT"
storm >/dev/null  # warm up
for round in $(seq "$ROUNDS"); do
  if ((round % 2)); then run without; run again; run with; else run with; run again; run without; fi
done

median() {
  printf '%s\n' "$@" | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
ratios=()
noise=()
for i in "${!with[@]}"; do
  ratios+=("$(awk -v a="${without[$i]}" -v b="${with[$i]}" 'BEGIN {print b / a}')")
  noise+=("$(awk -v a="${without[$i]}" -v b="${again[$i]}" 'BEGIN {print b / a}')")
done
faults=$(median "${counted[@]}")
awk -v a="$(median "${without[@]}")" -v b="$(median "${with[@]}")" \
    -v r="$(median "${ratios[@]}")" -v q="$(median "${noise[@]}")" -v n="$faults" \
    -v lo="$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)" \
    -v hi="$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)" 'BEGIN {
  printf "median CPU time without %.4f s, with %.4f s (%+.0f ns per fault)\n",
         a, b, (b - a) * 1e9 / n
  printf "ratio with/without: %.3f; median of the rounds\047 paired ratios: %.3f (range %.3f-%.3f)\n",
         b / a, r, lo, hi
  printf "A/A (without again / without), median of paired ratios: %.3f\n", q
}'
