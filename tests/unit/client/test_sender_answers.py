"""How the producer's sender takes a leader's refusal of a batch whose earlier batches it has not appended:
retried while an earlier batch of the partition is unfinished (the gap is the client's own, and closes
when that batch lands), failed to the caller when none is (the gap is real)."""

from __future__ import annotations

import pytest

from replog.client.accumulator import Accumulator
from replog.client.results import ProduceError
from replog.client.sender import Sender
from replog.v1 import common_pb2


class NoLeaders:
    """Metadata that names no leader yet (the sender asks it whether a batch's leader changed)."""

    def leader_address(self, topic, partition):
        return None


def sender_with_two_batches():
    acc = Accumulator(max_in_flight=5, linger_s=0.0, batch_records_max=1, batch_bytes_max=1 << 20,
                      buffered_records_max=100)
    handles = [acc.append("orders", 0, None, b"v%d" % i, 0, None, 2)[0] for i in range(2)]
    first, second = acc.drain()[0]
    for ordinal, batch in enumerate((first, second)):
        batch.ordinal, batch.base_sequence = ordinal, ordinal
        batch.deadline_s = float("inf")
        acc.track_unfinished(batch)
    sender = Sender(acc, NoLeaders(), acks=-1, idempotent=True, producer_id=1, producer_epoch=0,
                    request_timeout_s=30, delivery_timeout_s=120, retry_backoff_s=0.1, retry_backoff_max_s=1,
                    metadata_max_age_s=300)
    return sender, acc, first, second, handles


@pytest.mark.parametrize("code", [common_pb2.ERROR_CODE_UNKNOWN_PRODUCER_ID,
                                  common_pb2.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER])
def test_a_refusal_explained_by_an_earlier_unfinished_batch_is_retried_after_it(code):
    sender, acc, first, second, handles = sender_with_two_batches()
    # The partition's first batch failed at a leader still starting; the second reached one that had
    # never seen the producer.
    sender._complete(first, common_pb2.ERROR_CODE_NOT_LEADER, "not the leader", -1)
    sender._complete(second, code, "producer 1 unknown, sequence 1", -1)
    assert not handles[1].done()
    assert [b.ordinal for b in acc.ready] == [0, 1], "both go again, in order"


@pytest.mark.parametrize("code", [common_pb2.ERROR_CODE_UNKNOWN_PRODUCER_ID,
                                  common_pb2.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER])
def test_the_same_refusal_with_every_earlier_batch_written_reaches_the_caller(code):
    sender, acc, first, second, handles = sender_with_two_batches()
    sender._complete(first, common_pb2.ERROR_CODE_NONE, "", 0)
    sender._complete(second, code, "producer 1 unknown, sequence 1", -1)
    assert handles[0].result(0).offset == 0
    with pytest.raises(ProduceError) as refused:
        handles[1].result(0)
    assert refused.value.code == code and not acc.ready
