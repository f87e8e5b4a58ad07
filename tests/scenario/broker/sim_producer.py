"""The simulation's idempotent producers: the client library's own batching, sequences and answer rules.

A `SimProducer` is what an application does with replog's producer: it sends records and, when the
client reports a record failed, starts a new producer (a new producer id, as a restarted application
gets; the one that failed still finishes what it holds). Each of its producers (`SimClient`) is the
client library's real pieces on the simulation's clock:

- the real `Accumulator` (accumulator.py): a batch per record, up to `max_in_flight` (1 to 5, drawn
  from the seed) requests in flight to the partition, a failed batch's partition recovering one
  batch at a time in sequence order;
- the real `Sender` (sender.py) with only its transport replaced (`SimSender._open_stream`): it stamps
  each batch once with its sequence (`_encode`), sends to the leader its metadata names, completes
  every answer with answer_rules.decide_answer (`_complete`: retry with the same sequence, wait behind
  an earlier unfinished batch, or fail), gives up a broker that left a request unanswered past the
  request timeout and, with a new leader in metadata, the requests outstanding at the old one: each
  comes back as a lost request (BROKER_NOT_AVAILABLE) and is retried;
- `SimMetadata`: the sender's metadata cache. A refresh reads the partition's leader from the
  simulated controller (what ZooKeeper holds), or, as the turn's action says, the leader a broker
  believes in (a broker's metadata may be stale: clients then send to deposed leaders);
- `SimProduceStream`: one per broker, as a ProduceStream: a request is appended at once by the broker's
  core (sim_cluster.produce); the answer comes back over the simulated network, is late, lost or
  never sent (a process that died), and the sender hears it on its next turn.

The sender runs a turn (`SimClient.turn`) when a schedule's action says so, and when the network has
just delivered an answer it has not taken (the real sender wakes on every answer); an action holds
everything random about it, so a recorded schedule replays exactly. What the client reports delivered
goes to `cluster.delivered`, which the invariants (sim_invariants.py) hold against the committed log.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, NamedTuple

from replog.broker.core.errors import ErrorCode
from replog.broker.core.partition import NO_LEADER, ReplicaRole
from replog.client.accumulator import Accumulator, ProducerBatch
from replog.client.answer_rules import SEQUENCE_GAP
from replog.client.results import ProduceError, SendHandle
from replog.client.sender import Sender
from tests.scenario.broker.sim_members import PRODUCE_TIMEOUT_MS, TP, ProduceTicket

if TYPE_CHECKING:
    from tests.scenario.broker.sim_cluster import SimCluster

FIRST_PRODUCER_ID = 42
FROM_CONTROLLER = 0  # a refresh's source: the controller's state; 1..3, what that broker believes
# What a producer holds unanswered at most (its buffered_records_max): an application sending faster than
# the partition takes records is held back, and the accumulator's passes stay short.
BUFFERED_RECORDS_MAX = 10
PASSES_MAX = 2  # sender passes per turn: what a pass got back at once (a dead broker's refusal) is acted on


class Delivery(NamedTuple):
    """A record the client reported written: at `offset`, with this producer id and sequence."""

    producer_id: int
    sequence: int
    payload: str
    offset: int


class ClientConfig(NamedTuple):
    max_in_flight: int
    delivery_timeout_s: float
    metadata_max_age_s: float


def quiet_client_warnings() -> None:
    """For the simulation's command lines: the sender warns of every broker it gives up on, about one a
    schedule here, each expected."""
    logging.getLogger("replog.client").setLevel(logging.ERROR)


def client_config(seed: int) -> ClientConfig:
    """The producer settings a seed runs with, from a generator of their own: a recorded schedule (which
    has no seed's generator) gets the same ones from its seed."""
    draw = random.Random(f"client-{seed}")
    return ClientConfig(max_in_flight=draw.randint(1, 5), delivery_timeout_s=draw.choice((30.0, 60.0, 120.0)),
                        metadata_max_age_s=draw.choice((1.0, 10.0, 300.0)))


class SimMetadata:
    """The MetadataCache the sender asks: the partition's leader as (address, leader epoch), refreshed
    from the source the current action names."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.source = FROM_CONTROLLER
        self.leader: tuple[str, int] | None = None

    def leader_address(self, topic: str, partition: int) -> tuple[str, int] | None:
        return self.leader

    def refresh(self, topics) -> None:
        self.leader = read_leader(self.cluster, self.source)

    def mark_unreachable(self, address: str) -> None:
        """Only which broker a refresh asks first: the simulation's refresh asks `source`."""


def read_leader(cluster: SimCluster, source: int) -> tuple[str, int] | None:
    """The partition's leader as metadata from `source` names it (None: none known)."""
    broker = cluster.brokers.get(source)
    if broker is not None and broker.alive:
        leader, leader_epoch = broker.replica.state.leader_id, broker.leader_epoch
    else:
        leader, leader_epoch = cluster.controller.leader, cluster.controller.leader_epoch
    return None if leader == NO_LEADER else (str(leader), leader_epoch)


class SentBatch(NamedTuple):
    ticket: ProduceTicket
    group: list[ProducerBatch]
    sent_at_s: float


class SimProduceStream:
    """A ProduceStream to one broker (produce_stream.py's interface) over the simulated cluster."""

    def __init__(self, client: SimClient, broker_id: int) -> None:
        self.client = client
        self.broker_id = broker_id
        self.broken = False
        self.pending: list[SentBatch] = []  # in send order

    def send(self, message, group: list[ProducerBatch], sent_at_s: float) -> bool:
        if self.broken:
            return False
        (batch,) = group  # one partition: a request holds one batch
        client = self.client
        cluster = client.cluster
        record = client.records[id(batch)]
        current = is_current_leader(cluster, self.broker_id)
        ticket = cluster.produce(record.payload, broker_id=self.broker_id, producer_id=client.producer_id,
                                 sequence=batch.base_sequence)
        # Refused by the elected leader while no record of this producer had failed: if the client then
        # fails the record, every earlier one was delivered, and that leader must have known them.
        record.refused_by_elected_leader = current and ticket.broker_code in SEQUENCE_GAP and not client.failed
        self.pending.append(SentBatch(ticket, group, sent_at_s))
        return True

    def take_answers(self) -> None:
        """Hand the sender the answers heard since the last turn, in send order, up to the first not heard.

        One stream's answers arrive in the order the broker sent them (one HTTP/2 stream), and the broker
        answers a stream's produces in order. The simulated network delivers each answer as a message of
        its own, late, out of order or never; read in order, an answer lost on the way holds the later
        ones back until the sender gives the stream up, as a broken stream would. (Read as they come,
        later batches finished around an unanswered one, more batches left than the broker remembers,
        and the retry of the unanswered one was refused as out of order instead of answered as a duplicate.)"""
        pending = self.pending
        taken = 0
        for sent in pending:
            code = heard(sent.ticket)
            if code is None:
                break
            self.client.sender._completions.put((sent.group[0], int(code), "", sent.ticket.base_offset))
            taken += 1
        if taken:
            del pending[:taken]

    def answer_heard(self) -> bool:
        """Whether the sender has an answer to take (the first request's)."""
        return bool(self.pending) and heard(self.pending[0].ticket) is not None

    def unanswered_s(self, now_s: float) -> float:
        return now_s - self.pending[0].sent_at_s if self.pending else 0.0

    def outstanding(self) -> list[list[ProducerBatch]]:
        return [sent.group for sent in self.pending]

    def cancel(self) -> None:
        """Given up: what it holds comes back as lost; a late answer to it is never read."""
        self.broken = True
        lost, self.pending = self.pending, []
        for sent in lost:
            self.client.sender._on_lost(sent.group, "the produce stream was given up")

    def close(self) -> None:
        pass


def heard(ticket: ProduceTicket) -> ErrorCode | None:
    """The answer the client heard, None while it has none. An answer the network lost on its way
    (the ticket says REQUEST_TIMED_OUT where the broker answered otherwise) is never heard: the
    sender finds it unanswered past its request timeout."""
    code = ticket.error_code
    if code is ErrorCode.REQUEST_TIMED_OUT and ticket.broker_code is not ErrorCode.REQUEST_TIMED_OUT:
        return None
    return code


def is_current_leader(cluster: SimCluster, broker_id: int) -> bool:
    broker = cluster.brokers[broker_id]
    return (broker.alive and not broker.isolated and broker.role is ReplicaRole.LEADER
            and broker.leader_epoch == cluster.controller.leader_epoch)


class SimSender(Sender):
    """The client's sender with the simulation's streams."""

    def __init__(self, client: SimClient, **settings) -> None:
        super().__init__(**settings)
        self.client = client

    def _open_stream(self, address: str) -> SimProduceStream:
        return SimProduceStream(self.client, int(address))


class SentRecord:
    """A record the application sent: its payload, its batch, and the handle the client answers it on."""

    __slots__ = ("payload", "batch", "handle", "refused_by_elected_leader")

    def __init__(self, payload: str, batch: ProducerBatch, handle: SendHandle) -> None:
        self.payload = payload
        self.batch = batch
        self.handle = handle
        self.refused_by_elected_leader = False


class SimClient:
    """One producer (one producer id): the client's accumulator and sender on the simulated clock."""

    def __init__(self, cluster: SimCluster, producer_id: int, config: ClientConfig) -> None:
        self.cluster = cluster
        self.producer_id = producer_id
        clock = cluster.clock

        def now_s() -> float:
            return clock.monotonic_ms() / 1000

        self.accumulator = Accumulator(max_in_flight=config.max_in_flight, linger_s=0.0, batch_records_max=1,
                                       batch_bytes_max=1 << 20, buffered_records_max=BUFFERED_RECORDS_MAX,
                                       clock=now_s)
        self.metadata = SimMetadata(cluster)
        self.sender = SimSender(self, accumulator=self.accumulator, metadata=self.metadata, acks=-1,
                                idempotent=True, producer_id=producer_id, producer_epoch=0,
                                request_timeout_s=PRODUCE_TIMEOUT_MS / 1000,
                                delivery_timeout_s=config.delivery_timeout_s, retry_backoff_s=0.1,
                                retry_backoff_max_s=1.0, metadata_max_age_s=config.metadata_max_age_s, clock=now_s)
        self.sent = 0
        self.records: dict[int, SentRecord] = {}  # id(batch) -> its record, until the client answers it
        self.answered: list[SentRecord] = []  # the client's reports, in order, not yet looked at
        self.failed = False  # the client reported a record failed: the application starts another producer

    @property
    def unfinished(self) -> bool:
        return self.accumulator.buffered > 0

    def send(self, count: int) -> int:
        """The application sends up to `count` records (each its own batch: the simulated log has a record per
        batch); how many. Those past `buffered_records_max` are not sent: the client would block the
        application until answers made room, and here nothing else would run meanwhile."""
        count = min(count, self.accumulator.buffered_max - self.accumulator.buffered)
        for _ in range(count):
            payload = f"p{self.producer_id}-{self.sent}"
            self.sent += 1
            handle, _ = self.accumulator.append(TP.topic, TP.partition, None, payload.encode(), 0, None, len(payload))
            batch = self.accumulator.ready[-1]  # a full batch (one record) is ready at once
            record = self.records[id(batch)] = SentRecord(payload, batch, handle)
            handle.add_done_callback(lambda _handle, record=record: self._reported(record))
        return count

    def turn(self, source: int) -> None:
        """The sender's passes: answers heard, then what may leave, the streams and metadata."""
        self.metadata.source = source
        sender = self.sender
        streams = sender._streams.values()
        for _ in range(PASSES_MAX):
            for stream in streams:
                stream.take_answers()
            sender._take_completions()
            sender._turn()
            if sender._completions.empty() and not any(stream.answer_heard() for stream in streams):
                break  # nothing came back at once (a dead broker's refusal, a stream given up)
        answered, self.answered = self.answered, []
        for record in answered:
            self._answered(record)

    def _reported(self, record: SentRecord) -> None:
        """On the sender's pass: noted, and looked at after it (a callback that raises is only logged)."""
        del self.records[id(record.batch)]
        self.answered.append(record)
        if record.handle.exception(0) is not None:
            self.failed = True

    def _answered(self, record: SentRecord) -> None:
        """The client's report of a record (after the sender's pass that completed it)."""
        batch = record.batch
        error = record.handle.exception(0)
        if error is None:
            self.cluster.delivered.append(
                Delivery(self.producer_id, batch.base_sequence, record.payload, record.handle.result(0).offset))
            return
        assert isinstance(error, ProduceError), error
        in_time = self.accumulator.clock() < batch.deadline_s
        assert not (record.refused_by_elected_leader and error.code in SEQUENCE_GAP and in_time), (
            f"the elected leader refused {record.payload} ({error}) though every earlier record of producer "
            f"{self.producer_id} was delivered")


class SimProducer:
    """The application: sends through its current producer, and starts another once one reports a failure."""

    def __init__(self, cluster: SimCluster, seed: int) -> None:
        self.cluster = cluster
        self.config = client_config(seed)
        self.clients = [SimClient(cluster, FIRST_PRODUCER_ID, self.config)]

    def send(self, count: int, source: int) -> str:
        current = self.clients[-1]
        if current.failed:
            current = SimClient(self.cluster, current.producer_id + 1, self.config)
            self.clients.append(current)
        sent = current.send(count)
        return self.turn(source, f"send {sent} of {count} as producer {current.producer_id}; ")

    def answers_heard(self) -> bool:
        """Whether an answer came that a sender has not taken: it wakes the sender (`turn`) at once."""
        return any(stream.answer_heard() for client in self.clients for stream in client.sender._streams.values())

    def turn(self, source: int, said: str = "") -> str:
        for client in self.clients:
            client.turn(source)
        # A producer that failed and has nothing left unanswered is closed.
        self.clients = [c for c in self.clients if c is self.clients[-1] or c.unfinished]
        in_flight = sum(c.accumulator.buffered for c in self.clients)
        return f"{said}producer turn (metadata from {source or 'controller'}): {in_flight} unanswered"
