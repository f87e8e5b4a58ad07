#!/bin/bash
# Starts one ZooKeeper server from its environment:
#   ZOOKEEPER_ID            this server's id (1, 2, 3, ...; default 1)
#   ZOOKEEPER_SERVERS       every server's host name, comma-separated, in id order (default: standalone)
#   ZOOKEEPER_SUPER_DIGEST_FILE  a file holding the super user's digest id (`replog zk-credentials` writes
#                           super.digest); ZooKeeper then knows its super user (docs/zookeeper-security.md)
#   ZOOKEEPER_DATA_DIR      snapshots and transaction log (default /var/lib/zookeeper-data, a volume)
#   ZOOKEEPER_ID_FROM_HOSTNAME  set to 1 in a StatefulSet: the id is the pod's ordinal + 1
set -euo pipefail
data=${ZOOKEEPER_DATA_DIR:-/var/lib/zookeeper-data}
id=${ZOOKEEPER_ID:-1}
if [ "${ZOOKEEPER_ID_FROM_HOSTNAME:-0}" = 1 ]; then
  name=${POD_NAME:-$HOSTNAME}
  ordinal=${name##*-}
  case $ordinal in ''|*[!0-9]*) echo "zookeeper-start: pod name $name ends in no ordinal" >&2; exit 2;; esac
  id=$((ordinal + 1))
fi
conf_dir=$(mktemp -d)
mkdir -p "$data"
# A short tick: ZooKeeper expires sessions in tick-sized buckets, so with the default 2000 ms a dead
# process's session can outlive its timeout by up to 2 s, and every failover waits that much longer.
# 500 ms (as the local cluster uses) allows session timeouts from 1 to 10 s (replog's default is 6 s);
# initLimit and syncLimit keep ZooKeeper's default 20 s and 10 s.
cat > "$conf_dir/zoo.cfg" <<CFG
tickTime=500
initLimit=40
syncLimit=20
dataDir=$data
clientPort=2181
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
quorumListenOnAllIPs=true
CFG
if [ -n "${ZOOKEEPER_SERVERS:-}" ]; then
  i=1
  IFS=, read -ra hosts <<<"$ZOOKEEPER_SERVERS"
  for host in "${hosts[@]}"; do
    echo "server.$i=$host:2888:3888" >> "$conf_dir/zoo.cfg"
    i=$((i + 1))
  done
  echo "$id" > "$data/myid"
fi
flags=()
if [ -n "${ZOOKEEPER_SUPER_DIGEST_FILE:-}" ]; then
  flags+=("-Dzookeeper.DigestAuthenticationProvider.superDigest=$(tr -d '[:space:]' < "$ZOOKEEPER_SUPER_DIGEST_FILE")")
fi
classpath=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar
[ -f /usr/share/java/slf4j-simple.jar ] && classpath=$classpath:/usr/share/java/slf4j-simple.jar
exec java -Xms64m -Xmx${ZOOKEEPER_HEAP:-256m} "${flags[@]}" -cp "$classpath" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf_dir/zoo.cfg"
