#!/usr/bin/env bash
# `make demo`: bring the local cluster up and walk through what works.
# Safe to run twice: a running cluster is reused.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=.venv/bin
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting the local cluster (ZooKeeper, 2 controllers, 3 brokers in racks a/b/c, 1 gateway)"
$BIN/replog-local up
GATEWAY=$($BIN/python -c "import json;print('127.0.0.1:%d' % json.load(open('.state/cluster.json'))['processes']['gateway-1']['port'])")
export REPLOG_GATEWAY=$GATEWAY

step "replog cluster status"
$BIN/replog cluster status

# Every process speaks mutual TLS (docs/security.md); replog finds the operator certificate in
# .state/tls by itself, grpcurl is given it. A cluster started with --insecure is plaintext.
if [ -f .state/insecure ]; then
  TLS=(-plaintext)
else
  TLS=(-cacert .state/tls/ca.pem -cert .state/tls/user-admin.pem -key .state/tls/user-admin.key)
fi

step "A non-Python client (grpcurl) discovers the admin API through reflection, with the operator's certificate"
$BIN/grpcurl "${TLS[@]}" "$GATEWAY" list
$BIN/grpcurl "${TLS[@]}" "$GATEWAY" grpc.health.v1.Health/Check

if [ -f deploy/local/scripts/demo-data-path.sh ]; then
  bash deploy/local/scripts/demo-data-path.sh
fi

step "Done. The cluster keeps running: 'make status' shows it, 'make down' stops it."
