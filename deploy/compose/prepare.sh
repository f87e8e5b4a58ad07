#!/usr/bin/env bash
# Makes what compose.yaml mounts, in secrets/ beside it (or the directory given): a CA of the cluster's
# own, each process's certificate and key (identity replog://<kind>/<id>; SANs its host name, localhost and
# 127.0.0.1, the last two for the container's health check), its ZooKeeper credentials file, ZooKeeper's
# super digest, and the operator's certificate (secrets/operator/, identity replog://user/admin, the
# default super user). Uses `replog certs` and `replog zk-credentials` (the client's wheel; $REPLOG names
# another replog program). Keeps what is there: run it again after adding a process to compose.yaml.
# As root it gives each directory to the uid its container runs as (10001 replog, 10002 ZooKeeper).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/secrets}
replog=${REPLOG:-replog}
processes=(controller/1 controller/2 broker/1 broker/2 broker/3 gateway/1)
brokers=1,2,3

mkdir -p "$out"
chmod 700 "$out"
[ -f "$out/ca/ca.pem" ] || "$replog" certs create-ca --out "$out/ca" --name "replog compose CA" >/dev/null
"$replog" zk-credentials --out "$out/zookeeper-credentials" --brokers "$brokers" >/dev/null

place() {  # place NAME IDENTITY [HOSTS...]: the process's directory, as compose.yaml mounts it
  local name=$1 identity=$2 stem=${2/\//-}
  shift 2
  local dir=$out/$name
  if [ ! -f "$dir/tls.pem" ]; then
    local hosts=()
    for host in "$@"; do hosts+=(--host "$host"); done
    "$replog" certs issue "$identity" --ca-dir "$out/ca" --out "$dir" "${hosts[@]}" >/dev/null
    mv "$dir/$stem.pem" "$dir/tls.pem"
    mv "$dir/$stem.key" "$dir/tls.key"
  fi
  cp "$out/ca/ca.pem" "$dir/ca.pem"
}

for identity in "${processes[@]}"; do
  name=${identity/\//-}
  role=${identity%/*}
  place "$name" "$identity" "$name" localhost 127.0.0.1
  credentials=$role
  [ "$role" = broker ] && credentials=$name
  install -m 600 "$out/zookeeper-credentials/$credentials" "$out/$name/zookeeper-credentials"
  chmod 700 "$out/$name"
  [ "$(id -u)" -eq 0 ] && chown -R 10001:10001 "$out/$name"
done
place operator user/admin
mkdir -p "$out/zookeeper"
install -m 600 "$out/zookeeper-credentials/super.digest" "$out/zookeeper/super.digest"
[ "$(id -u)" -eq 0 ] && chown -R 10002:10002 "$out/zookeeper"
echo "$out"
