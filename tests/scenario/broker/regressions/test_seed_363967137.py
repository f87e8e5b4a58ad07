"""A leader's ISR expansion, sent twice to a paused controller, was refused once (the follower it added
was not registered) and dropped by the leader, whose HW then moved past what that follower held; the
follower restarted and registered again, and the second copy, at the same partition epoch, was accepted:
an ISR member lacked committed records. Fixed as Kafka's KIP-903 does: the proposal names each joining
member's broker epoch as of the fetch that caught it up (core/leader.py), and the controller refuses a
member registered since under another epoch (handlers/alter_partition.py); the unit tests are
test_isr_changes.py and test_decide_alter_partition.py. Seed 363967137 of the simulation with the real
controllers, without the fix (on the branch before it, and with only the controller's check taken out).

Shrunk from seed 363967137's 300 steps to 21 (sim_shrink.py); it failed with:
    AssertionError: ISR/ELR member N lacks committed records
"""

from tests.scenario.broker.sim_shrink import Schedule, Step, replay

SCHEDULE = Schedule(
    seed=363967137,
    steps=(
        Step(pause_ms=108, stormy=True, action=('bounce', 1, 5, False), draws=()),
        Step(pause_ms=110, stormy=True, action=('fetch', 3), draws=(0.22298743291399714, 0.595933900274371, 5, 0.7267844462205383)),
        Step(pause_ms=72, stormy=True, action=('deliver', 2), draws=(0.2378073982998994, 4, 0.22365055570984038, 0)),
        Step(pause_ms=15, stormy=True, action=('client_send', 1, 0), draws=()),
        Step(pause_ms=61, stormy=True, action=('deliver', 3), draws=(0.5970385582994989, 0.29444919910987655, 3, 0.09220276186988985, 7, 0.7841523976863437, 0.9904027264697927, 18, 0.7010944675591986)),
        Step(pause_ms=46, stormy=True, action=('client_send', 2, 0), draws=()),
        Step(pause_ms=28, stormy=True, action=('fetch', 3), draws=(0.2415625572347977, 0.5491881328610991, 3, 0.3414509193066222)),
        Step(pause_ms=103, stormy=True, action=('fetch', 1), draws=(0.2512968670270498, 0.2571797176283094, 2, 0.5141463227948403)),
        Step(pause_ms=144, stormy=True, action=('kill', 1, False), draws=()),
        Step(pause_ms=53, stormy=False, action=('produce', 'x955361', -1, 2), draws=()),
        Step(pause_ms=137, stormy=False, action=('tick', 8943), draws=(7, 0, 0, 0)),
        Step(pause_ms=106, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=48, stormy=True, action=('fetch', 3), draws=(0.34316581846169525, 0.7276086264091384, 15, 0.35580823304486053)),
        Step(pause_ms=141, stormy=True, action=('deliver', 2), draws=(0.6419556399216834, 0.8709762943916048, 4, 0.7388894275347044)),
        Step(pause_ms=55, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=122, stormy=True, action=('controller', 'pause', 0), draws=()),
        Step(pause_ms=18, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=82, stormy=True, action=('resend',), draws=(0.13947393075059455, 0.9505633059019594, 15, 0.013962003180478355, 1773)),
        Step(pause_ms=100, stormy=True, action=('deliver', 3), draws=()),
        Step(pause_ms=122, stormy=True, action=('produce', 'x373141', 1, 2), draws=()),
        Step(pause_ms=130, stormy=True, action=('fetch', 3), draws=()),
    ),
    preamble=(0, 12, 5, 20),
    heal=(),
)


def test_the_shrunk_schedule_keeps_the_invariants():
    replay(SCHEDULE, name='test_seed_363967137')
