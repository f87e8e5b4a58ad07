"""Requests built from the protos' descriptors, field by field, each from one seed.

Theory of operation. Every message the fuzz sends is a pure function of (descriptor, seed, context):
`build` rebuilds it exactly, so a failure names the seed that reproduces it. Two kinds, chosen by the
seed:

- **random**: every field drawn from a pool of hostile values of its type: strings empty, huge,
  unicode, control characters, paths (`../../fuzz-escape`) and format strings; integers at the
  extremes of their type (negatives, int64 max); bytes empty, random or a damaged record batch;
  enums with values the proto does not define; repeated fields empty, short or past the edge's item
  bound; nested messages a few levels deep; one field of each oneof;
- **mutated**: a plausible request first (topic and group names, broker ids and the live epochs of
  the cluster from `Context`, a valid record batch, small timeouts: what a real caller sends), then
  one field anywhere in it replaced by a random value. These pass the fences and the edge's bounds
  and reach the code behind them.

No I/O: the context (live epochs, the playground topic) comes in from the caller.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf import message_factory

from replog.common.records import encode_batch

ESCAPE_MARK = "fuzz-escape"  # the name a path in a request would leave behind if it reached a disk

_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_U32 = (0, (1 << 32) - 1)
_U64 = (0, (1 << 64) - 1)
_RANGES = {
    FieldDescriptor.TYPE_INT32: _I32, FieldDescriptor.TYPE_SINT32: _I32, FieldDescriptor.TYPE_SFIXED32: _I32,
    FieldDescriptor.TYPE_INT64: _I64, FieldDescriptor.TYPE_SINT64: _I64, FieldDescriptor.TYPE_SFIXED64: _I64,
    FieldDescriptor.TYPE_UINT32: _U32, FieldDescriptor.TYPE_FIXED32: _U32,
    FieldDescriptor.TYPE_UINT64: _U64, FieldDescriptor.TYPE_FIXED64: _U64,
}
DEPTH_MAX = 3
MESSAGE_BYTES_MAX = 4 << 20   # well under the servers' 64 MiB: a bigger request tests gRPC, not replog
LONG_LIST_ITEMS = 10_001      # one past the edge's bound on a repeated field
LONG_NUMBER_ITEMS = 20_000    # repeated numbers are bounded only by the message size

HOSTILE_STRINGS = (
    "", " ", ".", "..", "/", "a", "-", "_", "x" * 249, "x" * 250, "x" * 255, "x" * 256, "x" * 4096, "x" * 4097,
    "y" * 100_000, "../../" + ESCAPE_MARK, "../" + ESCAPE_MARK, "/tmp/" + ESCAPE_MARK, "/" + ESCAPE_MARK,
    "..\\..\\" + ESCAPE_MARK, "a/b", "%s%s%n%x", "{0}{1}", "' OR '1'='1", "\x00", "a\x00b", "\n\r\t",
    "ü€😀\u202eﷺ", "\u0000" * 10, "__consumer_offsets", "User:", "User:*", "*", "replog://user/admin",
    "-1", "9223372036854775808", "NaN", "retention.ms", "cleanup.policy", "min.insync.replicas",
)
HOSTILE_INTS = (0, 1, -1, 2, 3, 7, 255, 256, 65_535, 1 << 20, (1 << 31) - 1, -(1 << 31), 1 << 31, (1 << 32) - 1,
                (1 << 63) - 1, -(1 << 63), (1 << 62), (1 << 64) - 1)
UNKNOWN_ENUM_VALUES = (-1, 99, 1000, (1 << 31) - 1, -(1 << 31))


@dataclass(frozen=True)
class Context:
    """What a plausible request of the moment names: the playground topic, the caller's broker id, the
    cluster's live controller epoch, broker epochs and the playground's leader and partition epochs."""

    play_topic: str = "fuzz-play"
    group_id: str = "fuzz-group"
    own_broker_id: int = 1
    broker_ids: tuple[int, ...] = (1, 2)
    controller_id: int = 1
    controller_epoch: int = 1
    broker_epochs: dict[int, int] = field(default_factory=dict)
    leader: int = 1
    leader_epoch: int = 0
    partition_epoch: int = 0
    now_ms: int = 1_800_000_000_000  # the records' timestamps: the time the batch was built


def seed_of(*parts: object) -> int:
    """A seed from the run's seed and the message's place in it (identity, method, index): stable across
    processes and Python versions, unlike hash()."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def message_class(descriptor: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(descriptor)


def build(descriptor: Descriptor, seed: int, context: Context) -> tuple[str, Message]:
    """(kind, message): the message of `seed`, random or mutated (the seed's lowest bit chooses)."""
    rng = random.Random(seed)
    while True:  # the rare message past the size bound is drawn again (from the same random stream)
        if seed & 1:
            kind, message = "random", random_message(descriptor, rng)
        else:
            kind, message = "mutated", plausible_message(descriptor, rng, context)
            mutate(message, rng)
        if message.ByteSize() <= MESSAGE_BYTES_MAX:
            return kind, message


# --- random values ---------------------------------------------------------------------------------------


def random_message(descriptor: Descriptor, rng: random.Random, depth: int = 0) -> Message:
    message = message_class(descriptor)()
    chosen_oneof = {o.name: rng.choice([*o.fields, None]) for o in descriptor.oneofs}
    for f in descriptor.fields:
        if f.containing_oneof is not None and chosen_oneof[f.containing_oneof.name] is not f:
            continue
        if rng.random() < 0.25:
            continue  # some fields unset: the default is a value too
        _set_random(message, f, rng, depth)
    return message


def _set_random(message: Message, f: FieldDescriptor, rng: random.Random, depth: int) -> None:
    if _is_map(f):
        _fill_map(getattr(message, f.name), f, rng, depth, rng.choice((0, 1, 2, 5)))
    elif f.is_repeated:
        _fill_list(getattr(message, f.name), f, rng, depth)
    elif f.type == FieldDescriptor.TYPE_MESSAGE:
        if depth < DEPTH_MAX:
            getattr(message, f.name).CopyFrom(random_message(f.message_type, rng, depth + 1))
    else:
        setattr(message, f.name, random_scalar(f, rng))


def _fill_list(values, f: FieldDescriptor, rng: random.Random, depth: int) -> None:
    roll = rng.random()
    if roll < 0.05:
        count = LONG_NUMBER_ITEMS if f.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_STRING,
                                                    FieldDescriptor.TYPE_BYTES) else LONG_LIST_ITEMS
        one = _cheap_item(f, rng)  # a long list repeats one cheap item
        for _ in range(count):
            _append(values, f, one)
        return
    for _ in range(rng.choice((0, 1, 1, 2, 3, 8))):
        _append(values, f, _one_item(f, rng, depth + 1))


def _cheap_item(f: FieldDescriptor, rng: random.Random):
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        return message_class(f.message_type)()
    if f.type == FieldDescriptor.TYPE_STRING:
        return rng.choice(("", "a", "../" + ESCAPE_MARK, "ü"))
    return random_scalar(f, rng)


def _one_item(f: FieldDescriptor, rng: random.Random, depth: int):
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        return random_message(f.message_type, rng, depth) if depth <= DEPTH_MAX else message_class(f.message_type)()
    return random_scalar(f, rng)


def _append(values, f: FieldDescriptor, item) -> None:
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        values.add().CopyFrom(item)
    else:
        values.append(item)


def _is_map(f: FieldDescriptor) -> bool:
    return f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def _fill_map(mapping, f: FieldDescriptor, rng: random.Random, depth: int, count: int, key=None, value=None) -> None:
    key_field, value_field = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
    for _ in range(count):
        k = key if key is not None else random_scalar(key_field, rng)
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            mapping[k].CopyFrom(random_message(value_field.message_type, rng, depth + 1))
        else:
            mapping[k] = value if value is not None else random_scalar(value_field, rng)


def random_scalar(f: FieldDescriptor, rng: random.Random):
    kind = f.type
    if kind == FieldDescriptor.TYPE_STRING:
        return random_string(rng)
    if kind == FieldDescriptor.TYPE_BYTES:
        return random_bytes(rng)
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_ENUM:
        if rng.random() < 0.3:
            return rng.choice(UNKNOWN_ENUM_VALUES)
        return rng.choice(list(f.enum_type.values)).number
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.choice((0.0, -1.0, 1e308, float("inf"), float("nan")))
    low, high = _RANGES[kind]
    if rng.random() < 0.7:
        return min(max(rng.choice(HOSTILE_INTS), low), high)
    return rng.randint(low, high)


def random_string(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(HOSTILE_STRINGS)
    if roll < 0.8:  # any code point but the surrogates, which protobuf cannot carry
        return "".join(chr(rng.choice((rng.randint(0x20, 0x7e), rng.randint(0xa0, 0xd7ff),
                                       rng.randint(0xe000, 0x10ffff)))) for _ in range(rng.randint(1, 40)))
    return "".join(rng.choice("abcxyz019._-") for _ in range(rng.randint(1, 300)))


def random_bytes(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.2:
        return b""
    if roll < 0.5:
        return rng.randbytes(rng.choice((1, 7, 61, 62, 100, 4096, 300_000)))
    batch = bytearray(_batch(rng))
    if roll < 0.75:  # a valid batch with a few bytes damaged
        for _ in range(rng.randint(1, 4)):
            batch[rng.randrange(len(batch))] = rng.randrange(256)
        return bytes(batch)
    if roll < 0.9:
        return bytes(batch[: rng.randrange(len(batch))])  # cut short
    return bytes(batch)


def _batch(rng: random.Random, count: int | None = None, now_ms: int = Context.now_ms) -> bytes:
    values = [rng.randbytes(rng.randint(0, 64)) for _ in range(count or rng.randint(1, 5))]
    return encode_batch([(None, v, now_ms) for v in values])


# --- plausible requests and one mutation -------------------------------------------------------------------


_TOPIC_NAMES = frozenset({"topic", "topics", "deleted_topics", "resource_name", "names"})
_BROKER_IDS = frozenset({"broker_id", "replica_id", "leader", "controller_id"})
_BROKER_LISTS = frozenset({"broker_ids", "replicas", "isr", "new_isr", "adding_replicas", "removing_replicas"})
_LEADER_EPOCHS = frozenset({"leader_epoch", "current_leader_epoch", "last_fetched_epoch"})
_STRINGS = {"group_id": "group", "group_ids": "group", "member_id": "", "client_id": "fuzz", "protocol_type": "consumer",
            "principal": "User:fuzz-someone", "host": "127.0.0.1", "rack": "a", "metadata": "",
            "offline_log_dirs": "/nonexistent/fuzz", "key": "retention.ms", "value": "604800000", "delete": "retention.ms"}
_SMALL_INTS = {"partition": 0, "partitions": 2, "replication_factor": 2, "acks": -1, "producer_id": -1,
               "producer_epoch": -1, "generation_id": -1, "session_id": 0, "session_epoch": -1, "fetcher_count": 1,
               "fetcher_id": 0, "replica_shift": 0, "start_index": 0, "total_count": 1, "partition_batch_size": 10,
               "offset": 0, "fetch_offset": 0, "log_start_offset": 0, "known_high_watermark": 0,
               "throttle_bytes_per_s": 1 << 30}


def plausible_message(descriptor: Descriptor, rng: random.Random, context: Context, depth: int = 0,
                      topic_hint: bool = False) -> Message:
    """A request as a real caller would send it, from the field names: the playground topic, broker ids and
    the live epochs, a valid record batch, short waits."""
    message = message_class(descriptor)()
    names_topics = topic_hint or descriptor.name in ("CreateTopicRequest", "DeleteTopicRequest")
    chosen_oneof = {o.name: rng.choice(list(o.fields)) for o in descriptor.oneofs}
    for f in descriptor.fields:
        if f.containing_oneof is not None and chosen_oneof[f.containing_oneof.name] is not f:
            continue
        if _is_map(f):
            _fill_map(getattr(message, f.name), f, rng, depth, 1, "retention.ms", "604800000") \
                if f.message_type.fields_by_name["value"].type == FieldDescriptor.TYPE_STRING else None
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= DEPTH_MAX:
                continue
            item = plausible_message(f.message_type, rng, context, depth + 1, names_topics)
            if f.is_repeated:
                getattr(message, f.name).add().CopyFrom(item)
            else:
                getattr(message, f.name).CopyFrom(item)
        elif f.is_repeated:
            values = (list(context.broker_ids) if f.name in _BROKER_LISTS
                      else [_plausible_scalar(f, rng, context, names_topics)])
            getattr(message, f.name).extend(values)
        else:
            setattr(message, f.name, _plausible_scalar(f, rng, context, names_topics))
    return message


def _plausible_scalar(f: FieldDescriptor, rng: random.Random, context: Context, names_topics: bool):
    name, kind = f.name, f.type
    if kind == FieldDescriptor.TYPE_STRING:
        if name in _TOPIC_NAMES or (name == "name" and names_topics):
            return context.play_topic
        if name in ("group_id", "group_ids"):
            return context.group_id
        return _STRINGS.get(name, "fuzz")
    if kind == FieldDescriptor.TYPE_BYTES:
        return _batch(rng, 3, context.now_ms) if name == "record_batch" else b""
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_ENUM:
        defined = [v.number for v in f.enum_type.values if v.number != 0] or [0]
        return rng.choice(defined)
    if name in _BROKER_IDS:
        return context.controller_id if name == "controller_id" else (
            context.leader if name == "leader" else context.own_broker_id)
    if name == "controller_epoch":
        return context.controller_epoch
    if name in ("broker_epoch", "replica_broker_epoch"):
        return context.broker_epochs.get(context.own_broker_id, 0)
    if name in _LEADER_EPOCHS:
        return context.leader_epoch
    if name == "partition_epoch":
        return context.partition_epoch
    if name.endswith("_ms"):
        return rng.choice((0, 100, 500))
    if name.startswith("max_") or name.endswith("_bytes"):
        return 1 << 20
    return _SMALL_INTS.get(name, rng.choice((0, 1)))


def mutate(message: Message, rng: random.Random) -> None:
    """Replace one field, anywhere in the message, by a random value."""
    places = list(_places(message, 0))
    if not places:
        return
    parent, f = rng.choice(places)
    parent.ClearField(f.name)
    _set_random(parent, f, rng, DEPTH_MAX - 1)


def _places(message: Message, depth: int):
    for f in message.DESCRIPTOR.fields:
        yield message, f
        if f.type != FieldDescriptor.TYPE_MESSAGE or _is_map(f) or depth >= DEPTH_MAX:
            continue
        if f.is_repeated:
            for item in getattr(message, f.name):
                yield from _places(item, depth + 1)
        elif message.HasField(f.name):
            yield from _places(getattr(message, f.name), depth + 1)
