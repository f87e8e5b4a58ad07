#!/usr/bin/env bash
# `make demo`: bring the local cluster up and walk through what works.
# Safe to run twice: a running cluster is reused.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=.venv/bin
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The cluster's state directory, as replog-local picks it; exported so that replog-local (here and in
# demo-data-path.sh) and this script agree on it.
STATE_DIR=${REPLOG_STATE_DIR:-.state}
export REPLOG_STATE_DIR=$STATE_DIR

step "Starting the local cluster (ZooKeeper, 2 controllers, 3 brokers in racks a/b/c, 1 gateway)"
$BIN/replog-local up
GATEWAY=$($BIN/python -c "import json, sys; print('127.0.0.1:%d' % json.load(open(sys.argv[1]))['processes']['gateway-1']['port'])" \
  "$STATE_DIR/cluster.json")
export REPLOG_GATEWAY=$GATEWAY

# Every process speaks mutual TLS (docs/security.md). Every replog call here and in demo-data-path.sh
# names the operator certificate this cluster wrote under its state directory (as cluster.client_env()
# does for the benchmarks), so that neither REPLOG_TLS_* left in the shell nor another directory's files
# are used instead; grpcurl is given the same files. A cluster started with --insecure is plaintext.
if [ -f "$STATE_DIR/insecure" ]; then
  CLI_TLS=(--insecure)
  GRPCURL_TLS=(-plaintext)
else
  CA=$STATE_DIR/tls/ca.pem CERT=$STATE_DIR/tls/user-admin.pem KEY=$STATE_DIR/tls/user-admin.key
  CLI_TLS=(--tls-ca-file "$CA" --tls-cert-file "$CERT" --tls-key-file "$KEY")
  GRPCURL_TLS=(-cacert "$CA" -cert "$CERT" -key "$KEY")
fi

step "replog cluster status"
$BIN/replog "${CLI_TLS[@]}" cluster status

step "A non-Python client (grpcurl) discovers the admin API through reflection, with the operator's certificate"
$BIN/grpcurl "${GRPCURL_TLS[@]}" "$GATEWAY" list
$BIN/grpcurl "${GRPCURL_TLS[@]}" "$GATEWAY" grpc.health.v1.Health/Check

if [ -f deploy/local/scripts/demo-data-path.sh ]; then
  bash deploy/local/scripts/demo-data-path.sh "${CLI_TLS[@]}"
fi

step "Done. The cluster keeps running: 'make status' shows it, 'make down' stops it."
