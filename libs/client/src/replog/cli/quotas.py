"""`replog quotas alter|describe`: client quotas per user (kafka-configs' --entity-type users, in replog's words).

    replog quotas alter --user alice --producer-byte-rate 1048576 --consumer-byte-rate 2097152
    replog quotas alter --default --producer-byte-rate 10485760     # every user without its own
    replog quotas alter --user alice --delete-config producer_byte_rate
    replog quotas describe                                          # every quota stored
    replog quotas describe --user alice                             # alice's, and what applies to her

A rate is bytes per second on each broker. `--user` takes a user name (`alice`) or its principal
(`User:alice`). The gateway checks the request and refuses it whole, naming the bad value.
"""

from __future__ import annotations

import grpc

from replog.cli.output import emit
from replog.common.channels import ADMIN_RPC_TIMEOUT_S
from replog.v1 import admin_pb2, admin_pb2_grpc

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
TYPES = {PRODUCER_BYTE_RATE: admin_pb2.CLIENT_QUOTA_TYPE_PRODUCER_BYTE_RATE,
         CONSUMER_BYTE_RATE: admin_pb2.CLIENT_QUOTA_TYPE_CONSUMER_BYTE_RATE}
DEFAULT = "default"
COLUMNS = ["ENTITY", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE"]


def add_parser(sub) -> None:
    quotas = sub.add_parser("quotas", help="alter and describe client quotas: bytes per second a user may "
                                           "produce and fetch on each broker")
    verbs = quotas.add_subparsers(dest="verb", required=True, metavar="VERB")

    alter = verbs.add_parser("alter", help="set or remove quotas of a user or of the default for every user")
    _entity_options(alter, required=True)
    alter.add_argument("--producer-byte-rate", type=int, metavar="BYTES_PER_S",
                       help="bytes per second the user may produce to each broker")
    alter.add_argument("--consumer-byte-rate", type=int, metavar="BYTES_PER_S",
                       help="bytes per second the user may fetch from each broker")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY[,KEY]",
                       help=f"remove a quota ({PRODUCER_BYTE_RATE} or {CONSUMER_BYTE_RATE}; repeatable or "
                            "comma-separated): a user falls back to the default's")
    alter.set_defaults(run=run_alter, parser=alter)

    describe = verbs.add_parser("describe", help="the quotas stored; with --user also those that apply to it")
    _entity_options(describe, required=False)
    describe.set_defaults(run=run_describe, parser=describe)


def _entity_options(parser, *, required: bool) -> None:
    entity = parser.add_mutually_exclusive_group(required=required)
    entity.add_argument("--user", metavar="NAME", help="a user: its name, or its principal User:<name>")
    entity.add_argument("--default", action="store_true", help="the default of every user without its own quota")


def _entity(args) -> admin_pb2.ClientQuotaEntity:
    if args.default:
        return admin_pb2.ClientQuotaEntity(default_user=True)
    principal = args.user if args.user.startswith("User:") else f"User:{args.user}"
    return admin_pb2.ClientQuotaEntity(principal=principal)


def _stub(channel: grpc.Channel) -> admin_pb2_grpc.AdminServiceStub:
    return admin_pb2_grpc.AdminServiceStub(channel)


def entry_dict(entry: admin_pb2.ClientQuotaEntry) -> dict:
    return {"entity": DEFAULT if entry.entity.default_user else entry.entity.principal,
            PRODUCER_BYTE_RATE: entry.producer_byte_rate or None,
            CONSUMER_BYTE_RATE: entry.consumer_byte_rate or None}


def _table(entries: list[dict]):
    if not entries:
        return None
    return "", COLUMNS, [[e["entity"], e[PRODUCER_BYTE_RATE], e[CONSUMER_BYTE_RATE]] for e in entries]


def run_alter(args, channel) -> int:
    ops = []
    if args.producer_byte_rate is not None:
        ops.append(admin_pb2.ClientQuotaOp(type=TYPES[PRODUCER_BYTE_RATE], value=args.producer_byte_rate))
    if args.consumer_byte_rate is not None:
        ops.append(admin_pb2.ClientQuotaOp(type=TYPES[CONSUMER_BYTE_RATE], value=args.consumer_byte_rate))
    for key in (k.strip() for given in args.delete_config for k in given.split(",")):
        if key not in TYPES:
            args.parser.error(f"--delete-config takes {PRODUCER_BYTE_RATE} or {CONSUMER_BYTE_RATE}, not {key!r}")
        ops.append(admin_pb2.ClientQuotaOp(type=TYPES[key], remove=True))
    if not ops:
        args.parser.error("give --producer-byte-rate, --consumer-byte-rate or --delete-config")
    request = admin_pb2.AlterClientQuotasRequest(alterations=[admin_pb2.ClientQuotaAlteration(entity=_entity(args),
                                                                                               ops=ops)])
    reply = _stub(channel).AlterClientQuotas(request, timeout=ADMIN_RPC_TIMEOUT_S)
    entries = [entry_dict(e) for e in reply.entries]
    emit(args.output, {"quotas": entries}, _table(entries),
         lines=[f"Altered the quotas of {', '.join(e['entity'] for e in entries)}; now:"])
    return 0


def run_describe(args, channel) -> int:
    named = args.default or args.user is not None
    request = admin_pb2.DescribeClientQuotasRequest(entity=_entity(args) if named else None)
    reply = _stub(channel).DescribeClientQuotas(request, timeout=ADMIN_RPC_TIMEOUT_S)
    entries = [entry_dict(e) for e in reply.entries]
    data: dict = {"quotas": entries}
    lines = [f"{len(entries)} entit{'y' if len(entries) == 1 else 'ies'} with quotas:" if entries
             else "No quotas match."]
    if reply.HasField("effective"):
        effective = entry_dict(reply.effective)
        data["effective"] = effective
        applied = [f"{key} {effective[key]} bytes/s" for key in (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)
                   if effective[key] is not None]
        lines.insert(0, f"{effective['entity']} is held on each broker to: {', '.join(applied) or 'no quota'}"
                     + (" (its own quotas, else the default's)." if applied else "."))
    emit(args.output, data, _table(entries), lines=lines)
    return 0
