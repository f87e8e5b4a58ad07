#!/usr/bin/env bash
# The data path of `make demo`: create a topic, produce, kill the leader's broker,
# watch the controller move leadership, produce again, consume everything.
# Expects REPLOG_GATEWAY and a running local cluster (demo.sh does both).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=.venv/bin
TOPIC=demo-orders
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if ! $BIN/replog topics list -o json | grep -q "\"$TOPIC\""; then
  step "replog topics create $TOPIC --partitions 3 --replication-factor 3 --config min.insync.replicas=2"
  $BIN/replog topics create "$TOPIC" --partitions 3 --replication-factor 3 --config min.insync.replicas=2
fi
sleep 1
step "replog topics describe $TOPIC"
$BIN/replog topics describe "$TOPIC"

step "Producing 5 records with acks=all (idempotent producer)"
for i in 1 2 3 4 5; do echo "order-$i:before the failover"; done \
  | $BIN/replog produce --topic "$TOPIC" --partition 0 --key-separator :

LEADER=$($BIN/replog topics describe "$TOPIC" -o json \
  | $BIN/python -c "import json,sys; d=json.load(sys.stdin); t=d['topics'][0] if isinstance(d,dict) else d[0]; print([p for p in t['partitions'] if p['partition']==0][0]['leader'])")
step "kill -9 broker-$LEADER, the leader of partition 0"
$BIN/replog-local kill "broker-$LEADER"

step "Waiting for the controller to notice (ZooKeeper session timeout) and elect a new leader"
for _ in $(seq 1 60); do
  NEW=$($BIN/replog topics describe "$TOPIC" -o json \
    | $BIN/python -c "import json,sys; d=json.load(sys.stdin); t=d['topics'][0] if isinstance(d,dict) else d[0]; print([p for p in t['partitions'] if p['partition']==0][0]['leader'])")
  if [ "$NEW" != "$LEADER" ] && [ "$NEW" != "-1" ]; then break; fi
  sleep 0.5
done
$BIN/replog topics describe "$TOPIC"
echo "partition 0: leader moved from broker $LEADER to broker $NEW"

step "Producing 5 more records to the new leader"
for i in 6 7 8 9 10; do echo "order-$i:after the failover"; done \
  | $BIN/replog produce --topic "$TOPIC" --partition 0 --key-separator :

step "Consuming everything from the beginning"
$BIN/replog consume --topic "$TOPIC" --partition 0 --from-beginning --print-offset --print-key --timeout-ms 3000

step "Bringing broker-$LEADER back: it rejoins as a follower and catches up"
$BIN/replog-local start "broker-$LEADER"
sleep 3
$BIN/replog topics describe "$TOPIC"
