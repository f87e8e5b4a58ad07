#!/usr/bin/env bash
# `make image`: the replog image (localhost/replog:<version>) and Debian's ZooKeeper image
# (localhost/replog-zookeeper:3.8), with podman, from a Debian base built here with debootstrap
# (localhost/replog-base:bookworm: minbase, Python 3.11), since no image registry is assumed. The base is
# built once and kept (REPLOG_REBUILD_BASE=1 builds it again). The replog image installs the wheels of
# `make dist` and their dependencies, downloaded on this host with the pinned constraints, without any
# package index inside the build. Safe to run again; prints the images' names.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/deploy/image
export CONTAINERS_CONF=$here/containers.conf
python=$repo/.venv/bin/python
version=$("$python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
  "$repo/libs/common/pyproject.toml")
base=localhost/replog-base:bookworm
image=localhost/replog:$version
zookeeper_image=localhost/replog-zookeeper:3.8

# The Debian mirror this host's apt uses (deb822 sources or the classic list), else Debian's own.
mirror() {
  local uri
  uri=$(grep -hoE '^URIs: *[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | awk '{print $2}')
  [ -n "$uri" ] || uri=$(grep -hoE '^deb +(\[[^]]*\] +)?https?://[^ ]+' /etc/apt/sources.list 2>/dev/null \
    | grep -v security | head -1 | awk '{print $NF}')
  echo "${uri:-http://deb.debian.org/debian}"
}

scratch=$(mktemp -d /var/tmp/replog-image.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

if [ "${REPLOG_REBUILD_BASE:-0}" = 1 ] || ! podman image exists "$base"; then
  echo "image: building $base with debootstrap from $(mirror) (a few minutes, once)"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$scratch/rootfs" "$(mirror)" \
    > "$scratch/debootstrap.log" 2>&1 || { tail -20 "$scratch/debootstrap.log" >&2; exit 1; }
  tar -C "$scratch/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$base" >/dev/null
  rm -rf "$scratch/rootfs"
fi

echo "image: collecting the wheels"
wheels=$scratch/context/wheels
mkdir -p "$wheels"
services=(replog-broker replog-controller replog-gateway)
cp "$repo"/dist/replog_{client,common,broker,controller,gateway}-"$version"-*.whl "$wheels"/
cp "$repo/deploy/packaging/constraints.txt" "$wheels"/
"$python" -m pip download --quiet --only-binary=:all: --dest "$wheels" --find-links "$wheels" \
  --constraint "$wheels/constraints.txt" "${services[@]}" 2>&1 | grep -v "^WARNING: Location" >&2 || true
for service in "${services[@]}"; do
  ls "$wheels"/"${service//-/_}"-*.whl >/dev/null  # pip download failed loudly above if one is missing
done

echo "image: building $image"
podman build --quiet --format docker --build-arg "REPLOG_VERSION=$version" -f "$here/Containerfile" \
  -t "$image" "$scratch/context" >/dev/null
echo "image: building $zookeeper_image"
podman build --quiet --format docker -f "$here/zookeeper.Containerfile" -t "$zookeeper_image" "$here" >/dev/null
echo "$image"
echo "$zookeeper_image"
