#!/usr/bin/env bash
# The data path of `make demo`: create a topic, produce, kill the leader's broker,
# watch the controller move leadership, produce again, consume everything.
# Expects REPLOG_GATEWAY and a running local cluster (demo.sh does both); its arguments are the replog
# CLI's TLS flags for that cluster (--tls-ca-file ... or --insecure), which every replog call here passes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=.venv/bin
TOPIC=demo-orders
REPLOG=("$BIN/replog" "$@")
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# described EXPR: EXPR over the topic's partitions `p` (partition -> row of `replog topics describe`):
# a True/False result is the exit status, anything else is printed.
described() {
  "${REPLOG[@]}" topics describe "$TOPIC" -o json | $BIN/python -c "
import json, sys
found = json.load(sys.stdin)
topic = found['topics'][0] if isinstance(found, dict) else found[0]
p = {row['partition']: row for row in topic['partitions']}
result = $1
sys.exit(0 if result else 1) if isinstance(result, bool) else print(result)"
}

# wait_until SECONDS WHAT COMMAND...: run COMMAND until it succeeds; give up after SECONDS, saying on what.
wait_until() {
  local seconds=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out after $seconds s waiting for $what" >&2; return 1; fi
    sleep 0.2
  done
}

every_partition_led() { described "len(p) == 3 and all(row['leader'] >= 0 for row in p.values())"; }

if ! "${REPLOG[@]}" topics list -o json | grep -q "\"$TOPIC\""; then
  step "replog topics create $TOPIC --partitions 3 --replication-factor 3 --config min.insync.replicas=2"
  "${REPLOG[@]}" topics create "$TOPIC" --partitions 3 --replication-factor 3 --config min.insync.replicas=2
fi
wait_until 30 "a leader for every partition of $TOPIC" every_partition_led
step "replog topics describe $TOPIC"
"${REPLOG[@]}" topics describe "$TOPIC"

step "Producing 5 records with acks=all (idempotent producer)"
for i in 1 2 3 4 5; do echo "order-$i:before the failover"; done \
  | "${REPLOG[@]}" produce --topic "$TOPIC" --partition 0 --key-separator :

LEADER=$(described "p[0]['leader']")
step "kill -9 broker-$LEADER, the leader of partition 0"
$BIN/replog-local kill "broker-$LEADER"

step "Waiting for the controller to notice (ZooKeeper session timeout) and elect a new leader"
moved() { NEW=$(described "p[0]['leader']"); [ "$NEW" != "$LEADER" ] && [ "$NEW" != "-1" ]; }
wait_until 60 "a new leader of partition 0" moved
"${REPLOG[@]}" topics describe "$TOPIC"
echo "partition 0: leader moved from broker $LEADER to broker $NEW"

step "Producing 5 more records to the new leader"
for i in 6 7 8 9 10; do echo "order-$i:after the failover"; done \
  | "${REPLOG[@]}" produce --topic "$TOPIC" --partition 0 --key-separator :

step "Consuming everything from the beginning"
"${REPLOG[@]}" consume --topic "$TOPIC" --partition 0 --from-beginning --print-offset --print-key --timeout-ms 3000

step "Bringing broker-$LEADER back: it rejoins as a follower and catches up"
$BIN/replog-local start "broker-$LEADER"
back_in_isr() { described "$LEADER in p[0]['isr']"; }
wait_until 60 "broker-$LEADER back in the ISR of partition 0" back_in_isr
"${REPLOG[@]}" topics describe "$TOPIC"
