#!/usr/bin/env bash
# Checks and tests the shipped alerting files:
#   alerts/stagewatch.rules.yml   what dashboards/generate.py writes from alerts/config.yaml
#   generated rules               for the defaults and for a site's configuration
#                                 (tests/dashboards/site-config.yaml): promtool lint, house
#                                 rules (labels, annotations, runbooks, a firing and a silent
#                                 unit test per alert), and the promtool unit tests
#                                 (alerts/tests/*.yml, rendered for each configuration)
#   deploy/prometheus.yml         promtool check config
#   deploy/alertmanager.yml       amtool check-config, routing, and its inhibit rule against a
#                                 real Alertmanager on a loopback port
# Runs from any directory. Exits non-zero if anything fails; a missing tool is a failure that
# names the Debian package to install, never a skip.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1

readonly RULES=alerts/stagewatch.rules.yml
readonly TESTS_DIR=alerts/tests
readonly RUNBOOKS=docs/runbooks
readonly SITE_CONFIG=tests/dashboards/site-config.yaml
readonly PROM_CONFIG=deploy/prometheus.yml
readonly AM_CONFIG=deploy/alertmanager.yml

failed=()
tmp=$(mktemp -d)
am_pid=""
cleanup() {
  if [ -n "$am_pid" ]; then
    kill "$am_pid" 2>/dev/null
    wait "$am_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# step NAME COMMAND...: runs one check, prints its output only when it fails.
step() {
  local name=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then
    echo "ok    $name"
  else
    echo "FAIL  $name"
    sed 's/^/      /' "$tmp/out"
    failed+=("$name")
  fi
}

# --- Tools ------------------------------------------------------------------------------
missing=0
need() {  # need TOOL DEBIAN_PACKAGE
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "FAIL  '$1' not found: install the Debian package '$2' (apt-get install -y $2)"
    missing=1
  fi
}
need promtool prometheus
need amtool prometheus-alertmanager
need prometheus-alertmanager prometheus-alertmanager
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "FAIL  python3 cannot import yaml: install the Debian package 'python3-yaml'"
  missing=1
fi
if [ "$missing" -ne 0 ]; then
  echo "alerts/test.sh: FAILED: missing tools (scripts/install-deps.sh installs them)"
  exit 1
fi

# --- The rule files ------------------------------------------------------------------------
step "dashboards/generate.py --check (the committed rules and dashboards are the defaults)" \
  python3 dashboards/generate.py --check

# runbook_base CONFIG: the runbook_url_base the generator uses with CONFIG ("" = defaults).
runbook_base() {
  python3 -c 'import sys; sys.path.insert(0, "dashboards"); from mixin import config
print(config.load(sys.argv[1] or None).runbook_url_base)' "$1"
}

# Every alerting rule: severity critical|warning|info, source prometheus, a Stagewatch*
# CamelCase name, summary + description + runbook_url pointing at its own runbook, which
# exists. (awk over the file's fixed layout: one "- alert:" per rule, keys on their own lines.)
check_alert_conventions() {  # check_alert_conventions RULES RUNBOOK_BASE
  awk -v base="$2" -v dir="$RUNBOOKS" '
    function finish() {
      if (name == "") return
      if (name !~ /^Stagewatch[A-Z][A-Za-z0-9]*$/) err(name ": not a CamelCase Stagewatch* name")
      if (sev !~ /^(critical|warning|info)$/) err(name ": severity \"" sev "\" is not critical|warning|info")
      if (src != "prometheus") err(name ": label source is \"" src "\", not prometheus")
      if (!summary) err(name ": no summary annotation")
      if (!description) err(name ": no description annotation")
      if (runbook != base "/" name ".md") err(name ": runbook_url \"" runbook "\" is not " base "/" name ".md")
      if ((getline line < (dir "/" name ".md")) <= 0) err(name ": no runbook " dir "/" name ".md")
      close(dir "/" name ".md")
      name = ""
    }
    function err(msg) { print msg; bad = 1 }
    /^ *- (alert|record|name):/ { finish() }
    /^ *- alert:/ { name = $3; sev = ""; src = ""; summary = 0; description = 0; runbook = "" }
    name != "" && /^ +severity:/ { sev = $2 }
    name != "" && /^ +source:/ { src = $2 }
    name != "" && /^ +summary:/ { summary = 1 }
    name != "" && /^ +description:/ { description = 1 }
    name != "" && /^ +runbook_url:/ { runbook = $2 }
    END { finish(); exit bad }
  ' "$1"
}

# Every alert has a unit test where it fires (exp_alerts with entries) and one where it
# must stay silent (exp_alerts: []).
check_test_coverage() {
  local alerts
  alerts=$(awk '/^ *- alert:/ { print $3 }' "$RULES" | sort -u)
  awk -v alerts="$alerts" '
    BEGIN { n = split(alerts, a, "\n") }
    /^ *alertname:/ { cur = $2 }
    /^ *exp_alerts: *\[\] *$/ { silent[cur] = 1; next }
    /^ *exp_alerts: *$/ { fires[cur] = 1 }
    END {
      for (i = 1; i <= n; i++) {
        if (!(a[i] in fires)) { print a[i] ": no unit test where it fires"; bad = 1 }
        if (!(a[i] in silent)) { print a[i] ": no unit test where it stays silent"; bad = 1 }
      }
      exit bad
    }
  ' "$TESTS_DIR"/*.yml
}
step "a firing and a silent unit test per alert" check_test_coverage

# The same checks and tests for the defaults and for a site's configuration, each generated
# into its own directory with its rendered promtool tests.
for site in "" "$SITE_CONFIG"; do
  name=${site:-defaults}
  out="$tmp/generated-$(basename "${site:-defaults}" .yaml)"
  step "[$name] dashboards/generate.py --out" \
    python3 dashboards/generate.py ${site:+--config "$site"} --out "$out"
  step "[$name] promtool check rules --lint=all --lint-fatal" \
    promtool check rules --lint=all --lint-fatal "$out/stagewatch.rules.yml"
  step "[$name] alert labels, annotations and runbooks" \
    check_alert_conventions "$out/stagewatch.rules.yml" "$(runbook_base "$site")"
  step "[$name] promtool test rules (alerts/tests/*.yml rendered)" \
    promtool test rules "$out"/tests/*.yml
done

# --- The example configurations ---------------------------------------------------------
step "promtool check config $PROM_CONFIG" promtool check config "$PROM_CONFIG"
step "amtool check-config $AM_CONFIG" amtool check-config "$AM_CONFIG"

check_routes() {
  local labels receiver
  while IFS='|' read -r receiver labels; do
    # shellcheck disable=SC2086  # labels are separate words
    amtool config routes test --config.file="$AM_CONFIG" --verify.receivers="$receiver" \
      $labels || { echo "labels { $labels } do not route to $receiver"; return 1; }
  done <<'EOF'
stagewatch-critical|alertname=StagewatchOOMKill severity=critical source=prometheus pipeline_stage=train
stagewatch-critical|alertname=StagewatchMemoryLimitETAShort severity=critical source=agent pipeline_stage=train
stagewatch-warning|alertname=StagewatchMemoryClimb severity=warning source=prometheus pipeline_stage=train
stagewatch-info|alertname=StagewatchCrossStagePreemption severity=info source=prometheus pipeline_stage=train
default|alertname=NodeFilesystemAlmostOutOfSpace severity=critical
EOF
}
step "alertmanager routes by severity ($AM_CONFIG)" check_routes

# Start a real Alertmanager with the example configuration on a free loopback port, post
# both copies of one alert and check that the Prometheus copy, and only it, is inhibited.
start_alertmanager() {
  local port
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    prometheus-alertmanager --config.file="$AM_CONFIG" --storage.path="$tmp/am-data" \
      --web.listen-address="127.0.0.1:$port" --cluster.listen-address= \
      --log.level=warn >"$tmp/am.log" 2>&1 &
    am_pid=$!
    am_url="http://127.0.0.1:$port"
    for _ in $(seq 50); do
      if ! kill -0 "$am_pid" 2>/dev/null; then break; fi  # exited: port taken, try another
      if amtool --alertmanager.url="$am_url" config show >/dev/null 2>&1; then return 0; fi
      sleep 0.2
    done
    kill "$am_pid" 2>/dev/null
    wait "$am_pid" 2>/dev/null
    am_pid=""
  done
  echo "Alertmanager did not start; its log:"
  cat "$tmp/am.log"
  return 1
}

check_inhibition() {
  start_alertmanager || return 1
  local am=(--alertmanager.url="$am_url")
  local common=(alertname=StagewatchOOMKill severity=critical instance=node1:9617)
  amtool "${am[@]}" alert add "${common[@]}" pipeline_stage=train source=agent || return 1
  amtool "${am[@]}" alert add "${common[@]}" pipeline_stage=train source=prometheus kind=kernel || return 1
  amtool "${am[@]}" alert add "${common[@]}" pipeline_stage=validate source=prometheus || return 1

  # The inhibitor learns of new alerts asynchronously: poll briefly.
  local inhibited active
  for _ in $(seq 25); do
    inhibited=$(amtool "${am[@]}" alert query --inhibited -o extended)
    active=$(amtool "${am[@]}" alert query --active -o extended)
    if [ "$(grep -c StagewatchOOMKill <<<"$inhibited")" -eq 1 ]; then break; fi
    sleep 0.2
  done
  local ok=0
  grep -q 'pipeline_stage="train".*source="prometheus"' <<<"$inhibited" ||
    { echo "the Prometheus copy of the train alert is not inhibited by the agent's"; ok=1; }
  [ "$(grep -c StagewatchOOMKill <<<"$inhibited")" -eq 1 ] ||
    { echo "expected exactly one inhibited alert"; ok=1; }
  grep -q 'pipeline_stage="train".*source="agent"' <<<"$active" ||
    { echo "the agent's train alert is not active"; ok=1; }
  grep -q 'pipeline_stage="validate".*source="prometheus"' <<<"$active" ||
    { echo "the Prometheus validate alert (no agent copy) is not active"; ok=1; }
  if [ "$ok" -ne 0 ]; then
    printf 'inhibited:\n%s\nactive:\n%s\n' "$inhibited" "$active"
  fi
  return "$ok"
}
step "alertmanager inhibits source=prometheus by source=agent (real Alertmanager)" check_inhibition

echo
if [ "${#failed[@]}" -ne 0 ]; then
  echo "alerts/test.sh: FAILED (${#failed[@]}):"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "alerts/test.sh: all checks passed"
