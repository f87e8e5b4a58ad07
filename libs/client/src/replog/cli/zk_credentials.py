"""`replog zk-credentials`: every ZooKeeper credentials file of a cluster, for real hosts (offline).

Writes into one directory (mode 0700) the files replog.common.zk.credentials_files describes:
`controller` (for every controller), `gateway` (every gateway), `broker-<id>` (one per broker), `super`
(operators and tools) and `passwords`, the source they come from, kept across runs: running it again
with one more broker adds that broker's file and changes no other password. It prints the JVM option
that tells ZooKeeper its super user. Copy each process's file to its host, mode 0600, and name it in the
process's `zookeeper_credentials_file` key (docs/deploy.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from replog.cli.output import emit
from replog.common.zk import credentials_files


def broker_ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"'{text}': expected distinct broker ids, comma-separated (1,2,3)")
    return ids


def add_parser(sub) -> None:
    parser = sub.add_parser("zk-credentials", help="ZooKeeper credentials files for every process (offline)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the files (made if missing)")
    parser.add_argument("--brokers", required=True, type=broker_ids, metavar="IDS",
                        help="every broker id of the cluster, comma-separated (1,2,3); add one later by running "
                             "again with it")
    parser.set_defaults(run=run, offline=True)


def run(args) -> int:
    out = Path(args.out)
    super_digest = credentials_files.write_all(out, args.brokers)
    files = sorted(p.name for p in out.iterdir() if p.name != credentials_files.PASSWORDS_FILE)
    flag = credentials_files.zookeeper_jvm_flag(super_digest)
    emit(args.output, {"directory": str(out), "files": files, "zookeeper_jvm_flag": flag},
         lines=[f"wrote {', '.join(files)} in {out} (each 0600; {credentials_files.PASSWORDS_FILE} is their source: "
                "keep it private)",
                f"start every ZooKeeper server with {flag}",
                "  (for example SERVER_JVMFLAGS, or JVMFLAGS in zookeeper-env.sh)"])
    return 0
