#!/usr/bin/env bash
# Installs what the local cluster and the tests need from Debian's packages:
# a Java runtime and ZooKeeper, nftables for the fault tests' network cuts, iproute2 for the
# multi-host layout's network namespaces (replog-local up --hosts, tests/fault/test_netns_*.py),
# libfuse3 with fusermount3 for the fault tests' power-loss filesystem (tests/fault/powerloss/),
# Prometheus with promtool for deploy/prometheus/ (its rule tests, and a real server in
# tests/integration/test_prometheus.py), and Node.js with npm for the Node client example
# (examples/node/, tests/integration/test_node_client.py), and kcat (librdkafka's command-line client)
# for the Kafka listener's tests (tests/integration/kafka/).
# Safe to run again: it does nothing when all are there.
set -euo pipefail

zk_jar=/usr/share/java/zookeeper.jar
need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ -f "$zk_jar" ] || need+=(zookeeper)
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || need+=(nftables)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need+=(iproute2)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
ldconfig -p 2>/dev/null | grep 'libfuse3\.so' >/dev/null || need+=(libfuse3-3)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || need+=(prometheus)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ ${#need[@]} -eq 0 ] && exit 0

echo "setup: installing ${need[*]} from Debian's packages"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "setup: need ${need[*]} but this user is not root and has no sudo; install them with apt-get and run again" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: need ${need[*]} but this machine has no apt-get; install Java 17, ZooKeeper 3.8 (jar at $zk_jar), nftables, iproute2, fuse3, Prometheus 2 (with promtool), Node.js, npm and kcat by hand" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian's packages start nothing by themselves in a container, but stop their services
# if an init system did start them: our clusters and tests run their own ZooKeeper and Prometheus.
command -v systemctl >/dev/null 2>&1 && $SUDO systemctl disable --now zookeeper >/dev/null 2>&1 || true
command -v systemctl >/dev/null 2>&1 && $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
echo "setup: installed ${need[*]}"
