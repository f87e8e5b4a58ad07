"""The same stale ISR expansion as test_seed_363967137.py, reached another way: broker 2, cut off from
ZooKeeper and the controllers, lost its registration; the leader's proposal adding it back, sent twice to a
paused controller, was refused once and dropped, the HW moved past what broker 2 held, broker 2 registered
again under a new broker epoch and the second copy was accepted: an ISR member lacked committed records.
Found while torn writes and fsync errors came into the simulation (seed 590805199; it fails on the
merged simulation without the broker-epoch check of handlers/alter_partition.py and passes with it).

Shrunk from seed 590805199's 229 steps to 34 (sim_shrink.py); it failed with:
    AssertionError: ISR/ELR member N lacks committed records
"""

from tests.scenario.broker.sim_shrink import Schedule, Step, replay

SCHEDULE = Schedule(
    seed=590805199,
    steps=(
        Step(pause_ms=127, stormy=True, action=('isolate', 2), draws=()),
        Step(pause_ms=134, stormy=True, action=('fetch', 3), draws=(0.272871200801188, 0.24537730077864117, 3, 0.10632805241062782, 1362)),
        Step(pause_ms=56, stormy=True, action=('resend',), draws=()),
        Step(pause_ms=55, stormy=True, action=('resync',), draws=()),
        Step(pause_ms=148, stormy=True, action=('fetch', 3), draws=()),
        Step(pause_ms=45, stormy=True, action=('deliver', 1), draws=(0.8337749502119203, 0.16788218695854074, 13, 0.566635347435232)),
        Step(pause_ms=88, stormy=True, action=('fetch', 2), draws=(0.34499759946726516, 0.6923534558521991, 8, 0.20856158639802092)),
        Step(pause_ms=139, stormy=True, action=('produce', 'x331308', -1, 1), draws=()),
        Step(pause_ms=54, stormy=True, action=('network_cut', 4, 2, False), draws=()),
        Step(pause_ms=35, stormy=True, action=('deliver', 3), draws=(0.904330314404407, 0.11556380760620177, 0.24187851870110388, 18, 0.3291418349791926)),
        Step(pause_ms=62, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=132, stormy=True, action=('tick', 4515), draws=()),
        Step(pause_ms=127, stormy=True, action=('fetch', 3), draws=(0.24733382415274296, 0.5196677155371848, 1, 0.8719932836545845)),
        Step(pause_ms=99, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=122, stormy=True, action=('resend',), draws=()),
        Step(pause_ms=110, stormy=True, action=('deliver', 3), draws=(0.4038151154256604, 0.23008459167270878, 0.6404600846359315, 14, 0.5563771239241451, 0.7061311520751282, 0.14374657330526386, 0.3668947355827218, 7, 0.9520359420723681, 0.9366388730615752)),
        Step(pause_ms=87, stormy=True, action=('controller', 'pause', 0), draws=()),
        Step(pause_ms=144, stormy=False, action=('fetch', 2), draws=(14,)),
        Step(pause_ms=9, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=120, stormy=False, action=('deliver', 1), draws=()),
        Step(pause_ms=124, stormy=False, action=('produce', 'x284237', -1, 1), draws=()),
        Step(pause_ms=119, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=82, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=88, stormy=True, action=('fetch', 3), draws=(0.6809993179247181, 0.9992856332628463, 14, 0.9290656210212427)),
        Step(pause_ms=38, stormy=True, action=('deliver', 1), draws=(0.6087855394170354, 0.6921090574335591, 1, 0.4983976833183541, 0.7991080745882868, 0.5267513010971728, 2, 0.688371881689736)),
        Step(pause_ms=144, stormy=True, action=('fetch', 2), draws=()),
        Step(pause_ms=34, stormy=True, action=('deliver', 1), draws=()),
        Step(pause_ms=38, stormy=True, action=('deliver', 2), draws=()),
        Step(pause_ms=18, stormy=True, action=('fetch', 3), draws=()),
        Step(pause_ms=86, stormy=True, action=('heal', 2), draws=()),
        Step(pause_ms=103, stormy=False, action=('check_isr',), draws=()),
        Step(pause_ms=15, stormy=False, action=('controller', 'resume', 0), draws=()),
        Step(pause_ms=72, stormy=False, action=('deliver', 2), draws=()),
        Step(pause_ms=43, stormy=False, action=('deliver', 3), draws=()),
    ),
    preamble=(0, 14, 10, 11),
    heal=(),
)


def test_the_shrunk_schedule_keeps_the_invariants():
    replay(SCHEDULE, name='test_seed_590805199')
