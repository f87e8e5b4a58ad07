#!/usr/bin/env bash
# Installs what `make image` and `make test-deploy` need from Debian's packages: podman with runc
# (crun fails on some hosts' cgroups), netavark with iptables and aardvark-dns (containers reach each other by name),
# and debootstrap for the base image, built locally because no image registry is assumed. Every podman
# call of this project runs with deploy/image/containers.conf. Safe to run again.
set -euo pipefail
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
[ -x /usr/sbin/runc ] || need+=(runc)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
[ -x /usr/lib/podman/netavark ] || need+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || need+=(aardvark-dns)
[ -x /usr/sbin/iptables ] || need+=(iptables)  # netavark sets up its bridges' NAT and firewall with it
command -v catatonit >/dev/null 2>&1 || need+=(catatonit)  # the pause process of `podman kube play`'s pods
/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)  # make test-deploy's client venv
if [ ${#need[@]} -gt 0 ]; then
  echo "image: installing ${need[*]} from Debian's packages"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "image: need ${need[*]} but this user is not root and has no sudo; install them with apt-get and run again" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "image: need ${need[*]}, and this machine has no apt-get; install podman, runc, netavark, aardvark-dns and debootstrap by hand" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  echo "image: installed ${need[*]}"
fi
