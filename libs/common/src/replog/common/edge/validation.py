"""Bounds on every string and repeated field of every request, and Kafka's rule on every topic name.

Theory of operation. A request is checked against its message's descriptor before any handler
sees it, so every field of every request -- of every method there is and any added later -- is
bounded without a line in a servicer:

- a string field holds at most STRING_CHARS_MAX characters, unless EXPLICIT gives it another
  bound (a config value may be longer; an offset commit's metadata is Kafka's 4 KiB);
- a field that names a topic (a string `topic`, a repeated string `topics` or `deleted_topics`,
  and the few EXPLICIT names) holds a legal topic name (core/names.py): a name that is a path
  (`../../x`) or too long for a file name never reaches a broker's disk;
- a repeated field of strings or messages holds at most REPEATED_ITEMS_MAX items, or LIST_ITEMS_MAX
  for a list of partitions or of topics (the request kinds that name many; a broker bounds those
  further with `request_partitions_max`); a map field is a repeated field of its entries;
- an enum field holds a value its proto defines: a number from a newer caller, or a made-up one,
  is refused here rather than met by a handler's table lookup (where it raised KeyError);
- bytes fields and repeated numbers are bounded by the message size gRPC refuses above (a record
  batch may be megabytes, and its contents are the record format's to check; a list of numbers
  costs what it weighs to read, and checking each of a failover's hundred thousand ISRs would cost
  more than the request).

Cost: a list of partitions is checked by the distinct topic names it holds, gathered in one pass,
so a LeaderAndIsr of 100,000 partitions costs a set comprehension and a few dozen name checks.

`problem(message)` names the first field out of bounds, with its path ("LeaderAndIsrRequest.
partitions[3].topic: ...") and what is allowed; the guard (guard.py) answers INVALID_ARGUMENT with
it. Checking plans are built once per message type, and a type with nothing to check costs
nothing per request. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from replog.common.core.names import is_legal_topic_name, topic_name_problem

STRING_CHARS_MAX = 4096
REPEATED_ITEMS_MAX = 10_000
LIST_ITEMS_MAX = 1_000_000
CONFIG_VALUE_CHARS_MAX = 65_536

TOPIC = "topic"                   # a legal topic name
TOPIC_OR_EMPTY = "topic or empty"  # a legal topic name, or unset


# Fields whose bound is not the default: "package.Message.field" -> TOPIC, TOPIC_OR_EMPTY or a number
# (characters for a string, items for a repeated field). A unit test checks each names a real field.
EXPLICIT: dict[str, Any] = {
    "replog.v1.CreateTopicRequest.name": TOPIC,
    "replog.v1.DeleteTopicRequest.name": TOPIC,
    "replog.v1.DescribeTopicsRequest.names": TOPIC,
    "replog.v1.ReplicaAssignment.topic": TOPIC_OR_EMPTY,  # an assignment entry may leave its topic implied
    "replog.v1.CreateTopicRequest.ConfigsEntry.value": CONFIG_VALUE_CHARS_MAX,
    "replog.v1.AlterTopicConfigsRequest.SetEntry.value": CONFIG_VALUE_CHARS_MAX,
    "replog.v1.ProducePartitionData.records": LIST_ITEMS_MAX,
}

_TOPIC_FIELD_NAMES = frozenset({"topic", "topics", "deleted_topics"})
_LEGAL_SEEN_MAX = 100_000

Check = Callable[[Any], "str | None"]  # a field's value -> what is wrong, with its relative path


class RequestChecker:
    """Checks messages against the bounds above (or `explicit`); one plan per message type, built on first use."""

    def __init__(self, explicit: Mapping[str, Any] = EXPLICIT) -> None:
        self._explicit = dict(explicit)
        self._plans: dict[str, tuple[tuple[str, Check], ...]] = {}
        self._topic_checks: set[int] = set()  # id() of the checks that test a topic name
        self._checks: dict[type, Check] = {}  # message class -> its whole check
        self._legal: set[str] = set()

    def problem(self, message) -> str | None:
        """What is out of bounds in `message` (path and rule), or None."""
        check = self._checks.get(type(message))
        if check is None:
            descriptor = getattr(type(message), "DESCRIPTOR", None)  # a handler without protobuf: its own to check
            check = self._checks[type(message)] = (self._message_check(descriptor) if descriptor is not None
                                                   else None) or _accept
        found = check(message)
        return None if found is None else f"{message.DESCRIPTOR.name}{found}"

    # --- plans ------------------------------------------------------------------------------

    def _plan(self, descriptor: Descriptor) -> tuple[tuple[str, Check], ...]:
        plan = self._plans.get(descriptor.full_name)
        if plan is None:
            self._plans[descriptor.full_name] = ()  # a message type containing itself ends here
            plan = tuple((field.name, check) for field in descriptor.fields
                         if (check := self._field_check(field)) is not None)
            self._plans[descriptor.full_name] = plan
        return plan

    def _field_check(self, field: FieldDescriptor) -> Check | None:
        explicit = self._explicit.get(field.full_name)
        is_topic = explicit in (TOPIC, TOPIC_OR_EMPTY) or (explicit is None and field.name in _TOPIC_FIELD_NAMES
                                                           and field.type == FieldDescriptor.TYPE_STRING)
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            return self._map_check(field)
        if field.is_repeated:
            if field.type == FieldDescriptor.TYPE_ENUM:
                return _enum_items(field)
            if field.type not in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE):
                return None  # numbers: bounded by the message size (see the module's docstring)
            items_max = explicit if isinstance(explicit, int) else self._items_max(field, is_topic)
            if field.type == FieldDescriptor.TYPE_STRING:
                return _repeated(items_max, self._scalar_check(field, is_topic, None))
            plan = self._plan(field.message_type)
            if len(plan) == 1 and id(plan[0][1]) in self._topic_checks:
                return _topics_of(items_max, plan[0][0], plan[0][1])
            return _repeated(items_max, self._message_check(field.message_type))
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            return self._message_check(field.message_type)
        return self._scalar_check(field, is_topic, explicit)

    def _items_max(self, field: FieldDescriptor, is_topic: bool) -> int:
        if is_topic:
            return LIST_ITEMS_MAX
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            names = field.message_type.fields_by_name
            if "topic" in names and "partition" in names:
                return LIST_ITEMS_MAX  # a list of partitions
        return REPEATED_ITEMS_MAX

    def _scalar_check(self, field: FieldDescriptor, is_topic: bool, explicit: Any) -> Check | None:
        if field.type == FieldDescriptor.TYPE_ENUM:
            return _enum(field)
        if field.type != FieldDescriptor.TYPE_STRING:
            return None
        if is_topic:
            return self._topic_check(empty_allowed=explicit == TOPIC_OR_EMPTY)
        return _string(explicit if isinstance(explicit, int) else STRING_CHARS_MAX)

    def _message_check(self, descriptor: Descriptor) -> Check | None:
        plan = self._plan(descriptor)
        if not plan:
            return None  # nothing to check in it (or a type being planned that contains itself)

        def check(message) -> str | None:
            for name, field_check in plan:
                found = field_check(getattr(message, name))
                if found is not None:
                    return f".{name}{found}"
            return None

        return check

    def _map_check(self, field: FieldDescriptor) -> Check:
        entry = field.message_type
        key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
        key_check = self._field_check(key_field) or _accept
        value_check = (self._field_check(value_field) if value_field.type != FieldDescriptor.TYPE_MESSAGE
                       else self._message_check(value_field.message_type)) or _accept
        items_max = self._explicit.get(field.full_name, REPEATED_ITEMS_MAX)

        def check(mapping) -> str | None:
            if len(mapping) > items_max:
                return f": {len(mapping)} entries, more than the {items_max} allowed"
            for key in mapping:
                found = key_check(key)
                if found is None:
                    found = value_check(mapping[key])
                if found is not None:
                    return f"[{str(key)[:40]!r}]{found}"
            return None

        return check

    def _topic_check(self, *, empty_allowed: bool) -> Check:
        legal = self._legal

        def check(name: str) -> str | None:
            if name in legal or (empty_allowed and not name):
                return None
            if is_legal_topic_name(name):
                if len(legal) >= _LEGAL_SEEN_MAX:
                    legal.clear()
                legal.add(name)
                return None
            return f": {topic_name_problem(name)}"

        self._topic_checks.add(id(check))
        return check


def _accept(value) -> None:
    return None


def _string(chars_max: int) -> Check:
    def check(value: str) -> str | None:
        if len(value) <= chars_max:
            return None
        return f": {len(value)} characters, more than the {chars_max} allowed (starts {value[:40]!r})"

    return check


def _enum(field: FieldDescriptor) -> Check:
    defined = frozenset(v.number for v in field.enum_type.values)
    name = field.enum_type.name

    def check(value: int) -> str | None:
        return None if value in defined else f": {value} is no value of {name}"

    return check


def _enum_items(field: FieldDescriptor) -> Check:
    one = _enum(field)

    def check(values) -> str | None:
        for i, value in enumerate(values):
            found = one(value)
            if found is not None:
                return f"[{i}]{found}"
        return None

    return check


def _repeated(items_max: int, item: Check | None) -> Check:
    def check(values) -> str | None:
        if len(values) > items_max:
            return f": {len(values)} items, more than the {items_max} one request may hold"
        return None

    if item is None:
        return check

    def check_items(values) -> str | None:
        if len(values) > items_max:
            return check(values)
        for value in values:
            found = item(value)
            if found is not None:
                return f"[{_index_of(values, value)}]{found}"
        return None

    return check_items


def _topics_of(items_max: int, name: str, topic_check: Check) -> Check:
    """The check of a list of messages whose only checked field is a topic name: the distinct names are
    gathered in one pass and each checked once."""
    def check(values) -> str | None:
        if len(values) > items_max:
            return f": {len(values)} items, more than the {items_max} one request may hold"
        for topic in {getattr(value, name) for value in values}:
            found = topic_check(topic)
            if found is not None:
                index = next(i for i, value in enumerate(values) if getattr(value, name) == topic)
                return f"[{index}].{name}{found}"
        return None

    return check


def _index_of(values, value) -> int:
    return next(i for i, v in enumerate(values) if v is value or v == value)
