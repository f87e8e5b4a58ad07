"""Recovery fuzz: damage a closed log's files at random (cut them short, flip bits in segments, indexes
and the leader-epoch checkpoint), open it again, and check what a reader would notice:

- the log always opens, and its recovery report counts every byte it cut (a cut at a batch boundary of the
  active segment looks like a clean log here: the broker finds that loss against its HW checkpoint);
- no read ever returns a batch whose CRC fails or a record other than the one written at its offset:
  a read of damaged data raises CorruptLogError instead;
- `verify()` (what the scrubber runs) finds every damage a read ran into;
- the log takes appends afterwards and serves them.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replog.broker.log import CorruptLogError, LogConfig, PartitionLog
from replog.common.clock import ManualClock
from replog.common.records import decode_records, encode_batch, read_header, validate_batch

T0_MS = 1_700_000_000_000
BATCHES = 24
CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=150)

damage = st.tuples(
    st.sampled_from(["log", "index", "leader-epoch-checkpoint"]),
    st.integers(min_value=0, max_value=10**6),  # which file of that kind (modulo their count)
    st.sampled_from(["truncate", "flip"]),
    st.floats(min_value=0.0, max_value=1.0),  # where in the file
    st.integers(min_value=0, max_value=7),  # which bit
)


def build_log(directory: Path) -> dict[int, bytes]:
    """A closed log of several segments and leader epochs; returns each offset's value."""
    log = PartitionLog.open(directory, CONFIG, ManualClock(T0_MS))
    values = {}
    for i in range(BATCHES):
        records = [(b"k", b"value-%d-%d" % (i, j), T0_MS) for j in range(1 + i % 3)]
        info = log.append_as_leader(encode_batch(records), leader_epoch=i // 6)
        for j, (_, value, _) in enumerate(records):
            values[info.base_offset + j] = value
    log.close()
    return values


def apply_damage(directory: Path, kind: str, which: int, how: str, where: float, bit: int) -> None:
    if kind == "leader-epoch-checkpoint":
        files = [directory / kind]
    else:
        files = sorted(directory.glob(f"*.{kind}"))
    files = [path for path in files if path.exists() and path.stat().st_size > 0]
    if not files:
        return
    path = files[which % len(files)]
    size_bytes = path.stat().st_size
    position = min(int(where * size_bytes), size_bytes - 1)
    if how == "truncate":
        os.truncate(path, position)
        return
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ (1 << bit)]))


def segment_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.glob("*.log"))


def assert_batches_sound(data: bytes, start_offset: int, values: dict[int, bytes]) -> None:
    position = 0
    while position < len(data):
        header = validate_batch(data, position)  # CRC and records: raises if anything is off
        position += header.size_bytes
    for record in decode_records(data, start_offset):
        assert record.value == values.get(record.offset), f"offset {record.offset} served the wrong record"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damages=st.lists(damage, min_size=1, max_size=3),
       recovery_point=st.sampled_from([None, 0, 10, 10**6]))
# A flipped bit in a rolled segment's batch base offset (outside the CRC: 18 read as 16), its index then
# rebuilt: the rebuilt index sent a read of offset 16 to that batch instead of the one holding it.
@example(damages=[("log", 1, "flip", 0.861328125, 1)], recovery_point=None)
def test_a_damaged_log_opens_reports_its_loss_and_never_serves_a_bad_record(tmp_path_factory, damages,
                                                                              recovery_point):
    directory = tmp_path_factory.mktemp("fuzz") / "orders-0"
    values = build_log(directory)
    end_offset = max(values) + 1
    for one in damages:
        apply_damage(directory, *one)

    damaged_bytes = segment_bytes(directory)
    log = PartitionLog.open(directory, CONFIG, ManualClock(T0_MS), recovery_point=recovery_point)
    cut_bytes = damaged_bytes - segment_bytes(directory)
    assert log.recovery_report.bytes_dropped == cut_bytes, "recovery cut bytes it did not report"
    assert log.log_end_offset <= end_offset

    read_failures = []
    for offset in range(log.log_start_offset, log.log_end_offset):
        try:
            data = log.read(offset, 10**6)
        except CorruptLogError as exc:
            read_failures.append(exc)
            continue
        assert data, f"nothing served at {offset}, below the log end {log.log_end_offset}"
        assert_batches_sound(data, offset, values)
    if read_failures:
        assert log.verify(), f"a read failed ({read_failures[0]}) but verify() found nothing"

    # A batch's leader epoch lies outside its CRC (stamped by the leader after the producer computed it),
    # so a flip there is not detectable and may leave the cache with a larger epoch.
    leader_epoch = max(10, log.latest_epoch())
    info = log.append_as_leader(encode_batch([(b"k", b"after", T0_MS)]), leader_epoch=leader_epoch)
    served = log.read(info.base_offset, 10**6)
    assert [record.value for record in decode_records(served, info.base_offset)] == [b"after"]
    assert read_header(served).partition_leader_epoch == leader_epoch
    log.close()
