"""The workload: idempotent acks=all producers and concurrent consumers, recording a History.

Each producer (the public client, as shipped: default timeouts and retries) runs a thread that
sends one record to every partition of every topic per round, a round every `interval_s`; a
record's value names its producer and sequence number. Each consumer reads every partition of one
topic from offset 0 while the producers write. `stop()` stops sending, lets the producers deliver
what they hold (up to `drain_s`), and records every send still unanswered as indeterminate.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from replog.client import Consumer, Producer

from .history import ClientError, Fail, History, Indeterminate, Invoke, Ok, Read, record_value


class ProducerThread:
    def __init__(self, history: History, producer_id: int, bootstrap: list[str],
                 partitions: dict[str, int], interval_s: float) -> None:
        self.history, self.producer_id = history, producer_id
        self.partitions, self.interval_s = partitions, interval_s
        self.producer = Producer(bootstrap)
        self.pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"workload-producer-{producer_id}", daemon=True)
        self._seq = 0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for topic, count in self.partitions.items():
                for partition in range(count):
                    self._send(topic, partition)

    def _send(self, topic: str, partition: int) -> None:
        seq, self._seq = self._seq, self._seq + 1
        self.history.add(Invoke(time.monotonic(), self.producer_id, seq, topic, partition))
        future = self.producer.send(topic, record_value(self.producer_id, seq), partition=partition)
        with self._lock:
            self.pending[seq] = future
        future.add_done_callback(lambda f, seq=seq: self._answered(seq, f))

    def _answered(self, seq: int, future: Future) -> None:
        now = time.monotonic()
        error = future.exception()
        self.history.add(Fail(now, self.producer_id, seq, str(error)) if error is not None
                         else Ok(now, self.producer_id, seq, future.result().offset))
        with self._lock:
            self.pending.pop(seq, None)

    def stop_sending(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), f"producer {self.producer_id}'s thread did not stop"

    def close(self, drain_s: float) -> None:
        try:
            self.producer.close(timeout_s=drain_s)
        except Exception:  # noqa: BLE001 - what is left unanswered is recorded as indeterminate below
            pass
        now = time.monotonic()
        with self._lock:
            left = sorted(self.pending)
            self.pending.clear()
        self.history.extend([Indeterminate(now, self.producer_id, seq) for seq in left])


class ConsumerThread:
    def __init__(self, history: History, consumer_id: int, bootstrap: list[str], topic: str) -> None:
        self.history, self.consumer_id, self.topic = history, consumer_id, topic
        self.consumer = Consumer(bootstrap, topic, start=0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"workload-consumer-{consumer_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                records = self.consumer.poll(200)
            except Exception as exc:  # noqa: BLE001 - recorded; the checker reports it
                self.history.add(ClientError(time.monotonic(), self.consumer_id, self.topic, repr(exc)))
                self._stop.wait(0.5)
                continue
            now = time.monotonic()
            self.history.extend([Read(now, self.consumer_id, self.topic, r.partition, r.offset, r.value)
                                 for r in records])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), f"consumer {self.consumer_id}'s thread did not stop"
        self.consumer.close()


class Workload:
    def __init__(self, history: History, bootstrap: list[str], partitions: dict[str, int], *,
                 producers: int = 3, interval_s: float = 0.02, first_producer: int = 0) -> None:
        """`first_producer`: the number of the first producer, so that two workloads of one history
        write distinct values."""
        self.history = history
        self.producers = [ProducerThread(history, i, bootstrap, partitions, interval_s)
                          for i in range(first_producer, first_producer + producers)]
        self.consumers = [ConsumerThread(history, i, bootstrap, topic) for i, topic in enumerate(partitions)]

    def start(self) -> None:
        self.history.mark("load_start", time.monotonic())
        for worker in [*self.consumers, *self.producers]:
            worker.start()

    def stop(self, drain_s: float) -> None:
        """Stop sending, give every producer until one shared deadline to deliver, stop reading."""
        try:
            for producer in self.producers:
                producer.stop_sending()
            self.history.mark("load_stop", time.monotonic())
        finally:
            deadline = time.monotonic() + drain_s
            for producer in self.producers:
                producer.close(max(0.0, deadline - time.monotonic()))
            for consumer in self.consumers:
                consumer.stop()
