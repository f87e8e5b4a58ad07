"""The keyed waiting structure: add/check/expire, each op once, bounded."""

from replog.broker.core.produce.purgatory import AddOutcome, Purgatory


class Op:
    def __init__(self, ready=False):
        self.ready = ready
        self.tries = 0
        self.changed = []
        self.expired = False

    def try_complete(self, changed=None):
        self.tries += 1
        self.changed.append(changed)
        return self.ready

    def on_expire(self):
        self.expired = True


def test_op_ready_at_once_is_not_parked():
    purgatory = Purgatory(operations_max=4)
    assert purgatory.add(Op(ready=True), ["a"], deadline_ms=10) is AddOutcome.COMPLETED_AT_ONCE
    assert len(purgatory) == 0


def test_check_completes_ops_on_any_of_their_keys_once():
    purgatory = Purgatory(operations_max=4)
    both, only_b = Op(), Op()
    purgatory.add(both, ["a", "b"], deadline_ms=10)
    purgatory.add(only_b, ["b"], deadline_ms=10)
    assert purgatory.check("a") == []
    both.ready = only_b.ready = True
    assert purgatory.check("a") == [both]
    assert purgatory.check("b") == [only_b]
    assert purgatory.check("b") == [] and len(purgatory) == 0
    assert purgatory.watched_count("a") == purgatory.watched_count("b") == 0
    assert both.changed == [None, "a", "a"]  # add asks about everything, check about its key


def test_expire_in_deadline_order_and_not_twice():
    purgatory = Purgatory(operations_max=4)
    late, early, done = Op(), Op(), Op()
    purgatory.add(late, ["a"], deadline_ms=30)
    purgatory.add(early, ["a"], deadline_ms=10)
    purgatory.add(done, ["a"], deadline_ms=5)
    done.ready = True
    purgatory.check("a")  # completes `done` only
    assert purgatory.expire(now_ms=30) == [early, late]
    assert early.expired and late.expired and not done.expired
    assert purgatory.expire(now_ms=100) == []


def test_bounded():
    purgatory = Purgatory(operations_max=2)
    purgatory.add(Op(), ["a"], deadline_ms=10)
    purgatory.add(Op(), ["a"], deadline_ms=10)
    assert purgatory.add(Op(), ["a"], deadline_ms=10) is AddOutcome.PURGATORY_FULL
    assert len(purgatory) == 2


def test_many_completions_keep_the_deadline_heap_small():
    purgatory = Purgatory(operations_max=10)
    for i in range(1_000):
        op = Op()
        purgatory.add(op, ["a"], deadline_ms=10_000 + i)
        op.ready = True
        purgatory.check("a")
        purgatory.expire(now_ms=i)
    assert len(purgatory._deadlines) <= 2 * len(purgatory) + 65
