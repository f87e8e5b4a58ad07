#!/usr/bin/env bash
# The whole suite, in tiers: pure unit tests, scenario tests of the cores, then
# integration and fault tests with real ZooKeeper and real processes, then a round of the RPC fuzz.
# pytest exits 5 when a tier collects nothing; that is not a failure. Each tier ends with
# its 15 slowest tests, so the suite's time budget stays in view.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
status=0
run_tier() {
  local name=$1; shift
  local paths=() opts=()
  for arg in "$@"; do
    case "$arg" in
      tests/*) [ -d "$arg" ] && paths+=("$arg") ;;
      *) opts+=("$arg") ;;
    esac
  done
  echo "=== tests: $name ==="
  if [ ${#paths[@]} -eq 0 ]; then echo "(no tests in this tier yet)"; return; fi
  "$PY" -m pytest "${paths[@]}" "${opts[@]}"
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi
}
# A run started in the background beside the tiers: wait for it, print its output, count its failure.
finish_beside() {
  local name=$1 pid=$2 log=$3
  echo "=== tests: $name ==="
  wait "$pid"
  local rc=$?
  cat "$log"
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi
}
# The simulation's fresh schedules (10,000) are CPU alone and need no timing: they run beside the other
# tiers at the lowest priority, on the cycles the clusters' tests leave idle, and report after them.
SIM_TEST=tests/scenario/broker/test_replication_simulation.py::test_random_schedules_keep_the_invariants
sim_log=$(mktemp)
setsid nice -n 19 "$PY" -m pytest "$SIM_TEST" -q -s -p no:cacheprovider --durations=1 > "$sim_log" 2>&1 &
sim_pid=$!
# One seeded round of the RPC fuzz (`make fuzz` runs it for longer; -s prints its counts per method) runs
# beside the unit tier, whose single process leaves the second core to it, instead of after every tier.
fuzz_log=$(mktemp)
setsid "$PY" -m pytest tests/fuzz -q -s -p no:cacheprovider --durations=5 > "$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill -- -"$sim_pid" -"$fuzz_pid" 2>/dev/null; rm -f "$sim_log" "$fuzz_log"' EXIT
run_tier "unit and scenario" tests/unit tests/scenario -q -p no:cacheprovider --durations=15 "--deselect=$SIM_TEST"
finish_beside "fuzz (one round, beside the unit tier)" "$fuzz_pid" "$fuzz_log"
# A standalone Spark cluster (a master and two workers, each a JVM) runs behind `make test-spark-cluster`.
run_tier "integration and fault" tests/integration tests/fault -q -p no:cacheprovider --durations=15 \
  --ignore=tests/integration/spark/test_spark_standalone.py
finish_beside "simulation (beside the tiers above)" "$sim_pid" "$sim_log"
exit $status
