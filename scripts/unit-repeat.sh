#!/usr/bin/env bash
# Flakiness check: runs each unit test 20 times in a row (a process each time, as ctest runs
# it) and stops a test at its first failure. A test that depends on timing, on the order of
# tests or on what else is on the machine (inode numbers, free ports, /tmp) shows up here
# long before it fails someone's unrelated change.
#
#   scripts/unit-repeat.sh                 every unit test, 20 times each
#   scripts/unit-repeat.sh -R LimitDomains only those matching (more ctest arguments)
#   REPEAT=200 scripts/unit-repeat.sh -R … more runs
#
# On demand, not in CI: 529 unit tests × 20 took 683 s of test time (11½ minutes) on two cores
# shared with other builds, against 23.5 s for one pass; far over CI's minute. Builds the unit
# tests first.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target unit_tests
ctest --test-dir build -L unit --repeat until-fail:"${REPEAT:-20}" -j"$(nproc)" \
  --output-on-failure "$@"
