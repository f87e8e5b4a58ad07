"""Where one acks=all produce cycle's time goes, hop by hop (`produce.py --hops`).

The services take these marks (replog.common.hopmarks.Hop; the files hold each
member's label) when REPLOG_HOP_MARKS_DIR is set:

| label | Hop member              | process    | taken when                                                   |
|-------|-------------------------|------------|--------------------------------------------------------------|
| P1    | PRODUCER_SENDS          | producer   | a request is queued on the ProduceStream                     |
| L1    | LEADER_HAS_REQUEST      | leader     | the stream's reader has the request                          |
| L2    | LEADER_APPENDED         | leader     | it is appended (acks=-1: parked for the HW)                  |
| L3 f  | LEADER_ANSWERS_FOLLOWER | leader     | a fetch answer for follower f is built, about to be sent     |
| F1 f  | FOLLOWER_HAS_ANSWER     | follower f | its fetcher has the answer                                   |
| F2 f  | FOLLOWER_APPENDED       | follower f | the answer is handled (appended)                             |
| F3 f  | FOLLOWER_SENDS_FETCH    | follower f | the next fetch is sent (it carries the new end offset)       |
| L4 f  | LEADER_HAS_FETCH        | leader     | the fetch handler has follower f's request (the HW may move) |
| L5    | LEADER_ANSWERS_PRODUCER | leader     | the produce answer is built, about to be sent                |
| P4    | PRODUCER_HAS_ANSWER     | producer   | the producer has the answer                                  |

`cycle_table` follows every produce request from P1 to P4 through the first
mark of each kind after the one before (with one request in flight, as in
latency mode, the chain is sequential) and gives p50 / p90 / p99 in
microseconds per hop, in the chain's order. All processes share the machine's clock (time_ns).
"""

from __future__ import annotations

import bisect
from pathlib import Path

from harness import percentile

SKIP_CYCLES = 200  # at each end: warm-up and wind-down


def read_marks(directory: Path) -> dict[str, list[int]]:
    """Times per mark key ("L1", or "L3 2" for a follower's), sorted."""
    marks: dict[str, list[int]] = {}
    for path in directory.glob("*.marks"):
        for line in path.read_text(encoding="ascii").splitlines():
            t, tag, arg = line.split()
            marks.setdefault(tag if arg == "-1" else f"{tag} {arg}", []).append(int(t))
    for times in marks.values():
        times.sort()
    return marks


def cycle_table(directory: Path) -> dict:
    marks = read_marks(directory)

    def after(key: str, t: int | None) -> int | None:
        times = marks.get(key, [])
        i = bisect.bisect_left(times, t) if t is not None else len(times)
        return times[i] if i < len(times) else None

    def before(key: str, t: int) -> int | None:
        times = marks.get(key, [])
        i = bisect.bisect_right(times, t) - 1
        return times[i] if i >= 0 else None

    followers = sorted(int(key.split()[1]) for key in marks if key.startswith("F1 "))
    rows: list[dict[str, int]] = []
    for l1 in marks.get("L1", [])[SKIP_CYCLES:-SKIP_CYCLES]:
        p1, l2 = before("P1", l1), after("L2", l1)
        if p1 is None or l2 is None:
            continue
        row = {"producer to leader": l1 - p1, "leader appends": l2 - l1}
        ends = []
        for f in followers:
            l3 = after(f"L3 {f}", l2)
            f1 = after(f"F1 {f}", l3)
            f2 = after(f"F2 {f}", f1)
            f3 = after(f"F3 {f}", f2)
            l4 = after(f"L4 {f}", f3)
            if None in (l3, f1, f2, f3, l4):
                break
            row |= {f"appended to answer ready, follower {f}": l3 - l2, f"leader to follower {f}": f1 - l3,
                    f"follower {f} appends": f2 - f1, f"follower {f} next request": f3 - f2,
                    f"follower {f} to leader": l4 - f3}
            ends.append(l4)
        else:
            l5 = after("L5", max(ends, default=l2))
            p4 = after("P4", l5)
            if l5 is None or p4 is None:
                continue
            row |= {"last fetch in to produce answer ready": l5 - max(ends, default=l2), "leader to producer": p4 - l5,
                    "request round trip": p4 - p1}
            rows.append(row)
    if not rows:
        return {"cycles": 0}

    def spread(key: str) -> dict[str, int]:
        values = [row[key] // 1000 for row in rows]
        return {q: percentile(values, f) for q, f in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}

    return {"cycles": len(rows), "hops_us": [{"hop": key, **spread(key)} for key in rows[0]]}
