#!/bin/bash
# The ZooKeeper container's health check: the server answers `ruok` with `imok` on its client port.
exec 3<>/dev/tcp/127.0.0.1/2181 || exit 1
printf ruok >&3
read -r -t 3 answer <&3 || true
[ "$answer" = imok ]
