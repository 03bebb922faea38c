#!/usr/bin/env bash
# The mutation gate: plants each curated bug of tests/mutations/*.patch in a scratch copy of
# the tree, rebuilds incrementally, runs only the tests its header names, and reports whether
# they caught it. Exits 1 when fewer than 90% are caught, 2 when a patch did not apply or
# build (a broken mutation, not a surviving one). See tests/mutations/README.md.
#
#   scripts/mutation-test.sh                    every mutation
#   scripts/mutation-test.sh --only 'ledger|am' those whose file name matches the regex
#   scripts/mutation-test.sh tests/mutations/bits_log2_floor.patch ...
# Options: --scratch DIR (default /tmp/stagewatch-mutations, kept between runs so the next
# run rebuilds only what changed), --prepare (only copy and build the scratch tree), --no-baseline
# (skip running the named tests unmutated first), --jobs N (build parallelism, default 2),
# --min-rate PERCENT (default 90).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
scratch=/tmp/stagewatch-mutations
only=""
baseline=1
prepare=0
jobs=2
min_rate=90
mutations=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    --prepare) prepare=1; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --min-rate) min_rate="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "mutation-test: unknown option $1 (see --help)" >&2; exit 64 ;;
    *) mutations+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
  esac
done
if [ ${#mutations[@]} -eq 0 ]; then
  for m in "$src"/tests/mutations/*.patch; do
    if [ -z "$only" ] || [[ "$(basename "$m")" =~ $only ]]; then mutations+=("$m"); fi
  done
fi
if [ ${#mutations[@]} -eq 0 ]; then
  echo "mutation-test: no mutation matches '${only}' in tests/mutations/" >&2
  exit 64
fi

catch_regex() { sed -n 's/^# catch: *//p' "$1" | head -1; }
for m in "${mutations[@]}"; do
  if [ -z "$(catch_regex "$m")" ]; then
    echo "mutation-test: $m has no '# catch: <ctest regex>' header line" >&2
    exit 64
  fi
done

# One scratch copy, synced by content: a file is rewritten (and so rebuilt) only when it
# differs, including one a previous run left reverted but built mutated.
mkdir -p "$scratch"
(cd "$src" && git ls-files -co --exclude-standard) | sort >"$scratch/.files"
while IFS= read -r f; do
  [ -f "$src/$f" ] || continue
  if ! cmp -s "$src/$f" "$scratch/tree/$f"; then
    mkdir -p "$scratch/tree/$(dirname "$f")"
    cp -p "$src/$f" "$scratch/tree/$f" && touch "$scratch/tree/$f"
  fi
done <"$scratch/.files"
(cd "$scratch/tree" && find . -path ./build -prune -o -type f -print | sed 's|^\./||' | sort) |
  comm -23 - "$scratch/.files" | while IFS= read -r f; do rm -f "$scratch/tree/$f"; done

tree="$scratch/tree"
build="$tree/build"
log="$scratch/logs"
mkdir -p "$log"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$tree" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "mutation-test: building the scratch copy in $build"
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >"$log/configure.log" 2>&1 ||
  { echo "mutation-test: configure failed, see $log/configure.log" >&2; exit 2; }
build_tree() {  # [regex]: only the test binaries the regex can reach, and the agent for e2e
  local targets=()
  [[ -z "${1:-}" || "$1" == *unit* ]] && targets+=(unit_tests)
  [[ -z "${1:-}" || "$1" == *privileged* ]] && targets+=(privileged_tests)
  [[ -z "${1:-}" || "$1" == *e2e* ]] && targets+=(stagewatch e2e_tests)
  [ ${#targets[@]} -gt 0 ] || targets=(stagewatch unit_tests privileged_tests e2e_tests)
  cmake --build "$build" -j"$jobs" --target "${targets[@]}"
}
build_tree >"$log/build.log" 2>&1 ||
  { echo "mutation-test: the unmutated tree does not build, see $log/build.log" >&2; exit 2; }
[ "$prepare" = 0 ] || { echo "mutation-test: $build is ready"; exit 0; }

run_tests() {  # regex → ctest's status; "No tests were found" is an error, not a pass
  ctest --test-dir "$build" -R "$1" --timeout 300 --no-tests=error --output-on-failure
}

if [ "$baseline" = 1 ]; then
  regexes=()
  for m in "${mutations[@]}"; do regexes+=("$(catch_regex "$m")"); done
  all="$(printf '%s\n' "${regexes[@]}" | sort -u | paste -sd'|')"
  echo "mutation-test: the named tests on the unmutated tree first"
  if ! run_tests "$all" >"$log/baseline.log" 2>&1; then
    echo "mutation-test: the named tests fail without any mutation, see $log/baseline.log" >&2
    exit 2
  fi
fi

caught=0 survived=0 errors=0
rows=()
for m in "${mutations[@]}"; do
  name="$(basename "$m" .patch)"
  regex="$(catch_regex "$m")"
  mlog="$log/$name.log"
  start=$SECONDS
  if ! patch -d "$tree" -p1 --dry-run --silent -r - <"$m" >"$mlog" 2>&1; then
    result="ERROR (does not apply)"
    errors=$((errors + 1))
  else
    patch -d "$tree" -p1 --silent --no-backup-if-mismatch -r - <"$m" >>"$mlog" 2>&1
    if ! build_tree "$regex" >>"$mlog" 2>&1; then
      result="ERROR (does not build)"
      errors=$((errors + 1))
    elif run_tests "$regex" >>"$mlog" 2>&1; then
      result="SURVIVED"
      survived=$((survived + 1))
    elif grep -q "No tests were found" "$mlog"; then
      result="ERROR (no test matches)"
      errors=$((errors + 1))
    else
      result="caught"
      caught=$((caught + 1))
    fi
    patch -d "$tree" -p1 -R --silent --no-backup-if-mismatch -r - <"$m" >>"$mlog" 2>&1
  fi
  rows+=("$(printf '%-44s %-24s %5ss  %s' "$name" "$result" $((SECONDS - start)) "$regex")")
  echo "${rows[-1]}"
done
# Leave the scratch build matching the unmutated tree for the next run.
build_tree >"$log/build.log" 2>&1 || true

echo
printf '%-44s %-24s %6s  %s\n' mutation result time "catch (ctest -R)"
printf '%s\n' "${rows[@]}"
judged=$((caught + survived))
rate=0
[ "$judged" -gt 0 ] && rate=$((100 * caught / judged))
echo
echo "mutations: ${#mutations[@]}, caught: $caught, survived: $survived, errors: $errors"
echo "kill rate: ${rate}% (caught / (caught + survived)); logs in $log"
[ "$errors" -eq 0 ] || exit 2
[ "$rate" -ge "$min_rate" ] || exit 1
