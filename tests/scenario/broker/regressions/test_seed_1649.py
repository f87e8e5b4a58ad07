"""A leader that adopted a newer partition state from a late AlterPartition answer kept the proposal it
had made at the older partition epoch; its resends were refused with the state it already held, so it
never proposed again and the ISR never healed (fixed in core/leader.py, on_alter_partition_answer; the
unit test is test_isr_changes.py). Seed 1649 of the simulation with the real controllers, without the fix.

Its one idempotent produce was ('idempotent', 3), a produce to broker 3 by the simulation's earlier producer;
it is now ('client_send', 1, 3), a record sent through the client library's producer whose metadata comes
from broker 3. The schedule still fails the same way without the fix.

Shrunk from seed 1649's 300 steps to 55 (sim_shrink.py); it failed with:
    AssertionError: ISR healed back to all replicas, is (N, N)
"""

from tests.scenario.broker.sim_shrink import Schedule, Step, replay

SCHEDULE = Schedule(
    seed=1649,
    steps=(
        Step(pause_ms=116, stormy=True, action=('bounce', 2, 1, False), draws=()),
        Step(pause_ms=38, stormy=True, action=('network_heal',), draws=(0, 0, 0.7069018466471376, 0.9647840353261441, 6, 0.6754328691910815, 0.38436199482284583, 0.3726846058256801, 11, 0.7686286967807111, 0.6364455213793925, 0.22727806023470798, 2, 0.2058499443021281)),
        Step(pause_ms=40, stormy=True, action=('bounce', 1, 0, False), draws=()),
        Step(pause_ms=81, stormy=True, action=('resend',), draws=(0, 0, 0.4271432248334781, 0.3275397302980295, 17, 0.4672336672234447, 0.9181355330626041, 0.3645552107492487, 12, 0.9315330681873348)),
        Step(pause_ms=38, stormy=True, action=('controller', 'kill', 0), draws=()),
        Step(pause_ms=84, stormy=True, action=('produce', 'x666071', 1, 3), draws=()),
        Step(pause_ms=52, stormy=True, action=('client_send', 1, 3), draws=(0.9664567712520296, 0.3803693328894405, 2, 0.9316450647874582)),
        Step(pause_ms=92, stormy=True, action=('bounce', 1, 0, False), draws=()),
        Step(pause_ms=102, stormy=True, action=('bounce', 1, 0, False), draws=(0,)),
        Step(pause_ms=48, stormy=True, action=('network_cut', 4, 0, True), draws=()),
        Step(pause_ms=138, stormy=True, action=('fetch', 3), draws=(0.04613866089383012,)),
        Step(pause_ms=73, stormy=False, action=('resend',), draws=()),
        Step(pause_ms=45, stormy=False, action=('fetch', 3), draws=(5,)),
        Step(pause_ms=100, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=11, stormy=False, action=('deliver', 3), draws=()),
        Step(pause_ms=127, stormy=False, action=('deliver', 1), draws=()),
        Step(pause_ms=144, stormy=False, action=('deliver', 2), draws=(3, 14)),
        Step(pause_ms=46, stormy=False, action=('deliver', 1), draws=()),
        Step(pause_ms=104, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=147, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=61, stormy=False, action=('fetch', 2), draws=(6,)),
        Step(pause_ms=113, stormy=False, action=('fetch', 2), draws=(1,)),
        Step(pause_ms=16, stormy=False, action=('deliver', 2), draws=(6,)),
        Step(pause_ms=108, stormy=False, action=('deliver', 1), draws=()),
        Step(pause_ms=130, stormy=False, action=('deliver', 3), draws=()),
        Step(pause_ms=14, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=33, stormy=False, action=('deliver', 3), draws=()),
        Step(pause_ms=98, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=28, stormy=False, action=('resync',), draws=()),
        Step(pause_ms=124, stormy=False, action=('deliver', 1), draws=()),
        Step(pause_ms=132, stormy=False, action=('fetch', 1), draws=()),
        Step(pause_ms=65, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=142, stormy=False, action=('fetch', 2), draws=(13,)),
        Step(pause_ms=136, stormy=False, action=('deliver', 3), draws=(15, 8)),
        Step(pause_ms=90, stormy=False, action=('fetch', 2), draws=(15,)),
        Step(pause_ms=70, stormy=False, action=('tick', 2866), draws=()),
        Step(pause_ms=24, stormy=False, action=('resync',), draws=()),
        Step(pause_ms=101, stormy=False, action=('fetch', 1), draws=()),
        Step(pause_ms=147, stormy=False, action=('fetch', 1), draws=()),
        Step(pause_ms=50, stormy=False, action=('fetch', 1), draws=()),
        Step(pause_ms=148, stormy=False, action=('resend',), draws=()),
        Step(pause_ms=12, stormy=True, action=('produce', 'x603277', 1, 3), draws=()),
        Step(pause_ms=125, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=44, stormy=True, action=('deliver', 2), draws=()),
        Step(pause_ms=73, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=112, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=54, stormy=True, action=('produce', 'x612615', -1, 3), draws=()),
        Step(pause_ms=6, stormy=True, action=('fetch', 1), draws=()),
        Step(pause_ms=7, stormy=True, action=('bounce', 2, 1, False), draws=()),
        Step(pause_ms=76, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=79, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=140, stormy=True, action=('fetch', 1), draws=(0.446449609954929, 0.007281539185504449, 19, 0.19153324961804585, 20, 0.3021894592782298)),
        Step(pause_ms=108, stormy=True, action=('deliver', 2), draws=()),
        Step(pause_ms=19, stormy=True, action=('kill', 2, False), draws=()),
        Step(pause_ms=101, stormy=True, action=('tick', 6075), draws=()),
    ),
    preamble=(0, 9, 7, 20),
    heal=(),
)


def test_the_shrunk_schedule_keeps_the_invariants():
    replay(SCHEDULE, name='test_seed_1649')
