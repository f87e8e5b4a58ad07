"""A fuzz campaign: rounds of batches of fuzzed calls, the invariants checked after each batch.

A round sends, from each identity to each service, a fixed number of messages per method (more to
a method the identity may call, fewer to one the method table refuses it), several calls at once;
then `ClusterWatch.problems()`. A bounded campaign is one round; a long one repeats rounds until its
minutes are up. Each message's seed is `seed_of(run seed, round, identity, method, index)`, so a
finding names the seed that rebuilds it (`python -m tests.fuzz.replay`).

An answer must be OK or a typed status: UNKNOWN (an exception the servicer did not handle) and
INTERNAL are findings at once. The tally counts every status per method and identity.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Callable

import grpc
from google.protobuf import text_format

from replog.common.security.credentials import open_channel

from .invariants import ClusterWatch
from .messages import Context, build, seed_of
from .targets import Identity, Target, call, defang

BAD_CODES = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
CONCURRENT_CALLS = 8
STREAM_MESSAGES_MAX = 4


@dataclass
class Finding:
    what: str                 # "UNKNOWN answer", "invariant broken", ...
    identity: str
    method: str
    round: int
    detail: str
    seed: int | None = None   # the message's seed (a call finding); a batch's findings name its round
    message: str = ""


@dataclass
class Budget:
    entitled: int = 24  # messages per method an identity may call
    refused: int = 3    # messages per method the method table refuses it


@dataclass
class Tally:
    statuses: dict[str, dict[str, Counter]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(Counter)))
    messages: Counter = field(default_factory=Counter)
    by_identity: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    batches: int = 0
    rounds: int = 0

    def add(self, method: str, identity: str, kind: str, code: grpc.StatusCode) -> None:
        self.statuses[method][identity][code.name] += 1
        self.messages[method] += 1
        self.by_identity[identity] += 1
        self.kinds[kind] += 1

    def table(self) -> str:
        lines = [f"{'method':<58} {'msgs':>6}  statuses (all identities)"]
        for method in sorted(self.statuses):
            total = Counter()
            for counts in self.statuses[method].values():
                total.update(counts)
            shown = ", ".join(f"{k}={v}" for k, v in total.most_common())
            lines.append(f"{method:<58} {self.messages[method]:>6}  {shown}")
        return "\n".join(lines)


class Campaign:
    def __init__(self, cluster, identities: list[Identity], targets: list[Target], watch: ClusterWatch,
                 refresh: Callable[[Identity], Context], run_seed: int, budget: Budget,
                 after_batch: Callable[[Identity], None] = lambda identity: None) -> None:
        self.cluster, self.identities, self.targets, self.watch = cluster, identities, targets, watch
        self.refresh, self.run_seed, self.budget, self.after_batch = refresh, run_seed, budget, after_batch
        self.tally = Tally()
        self.findings: list[Finding] = []
        self._channels: dict[tuple[str, str], grpc.Channel] = {}
        self.started = time.monotonic()

    def run(self, minutes: float | None) -> None:
        """One round, or rounds until `minutes` have passed (the round under way is finished)."""
        round_index = 0
        while True:
            self.run_round(round_index)
            round_index += 1
            if minutes is None or time.monotonic() - self.started >= minutes * 60 or self.broken:
                return

    @property
    def broken(self) -> bool:
        """An invariant broke: later batches would only report its consequences."""
        return any(f.what == "invariant broken" for f in self.findings)

    def run_round(self, round_index: int) -> None:
        for identity in self.identities:
            for _, targets in groupby(self.targets, key=lambda t: t.service):
                self._batch(round_index, identity, list(targets))
                if self.broken:
                    return
        self.tally.rounds += 1

    def _batch(self, round_index: int, identity: Identity, targets: list[Target]) -> None:
        context = self.refresh(identity)
        work = []
        for target in targets:
            count = self.budget.entitled if target.entitled(identity.principal) else self.budget.refused
            for index in range(count):
                work.append((target, index, seed_of(self.run_seed, round_index, identity.label, target.path, index)))
        with ThreadPoolExecutor(CONCURRENT_CALLS) as pool:
            results = list(pool.map(lambda w: self._send(identity, context, round_index, *w), work))
        for target, kind, code, seed, text in results:
            self.tally.add(target.path, identity.label, kind, code)
            if code in BAD_CODES:
                self.findings.append(Finding(f"{code.name} answer", identity.label, target.path, round_index,
                                             f"context {json.dumps(asdict(context))}", seed, text))
        self.after_batch(identity)
        self.tally.batches += 1
        for problem in self.watch.problems():
            self.findings.append(Finding("invariant broken", identity.label, targets[0].service, round_index,
                                         problem, None, f"seeds: {[w[2] for w in work][:50]}"))

    def _send(self, identity: Identity, context: Context, round_index: int, target: Target, index: int, seed: int):
        method = target.method
        count = 1
        if method.client_streaming:
            count = 1 + seed % STREAM_MESSAGES_MAX
        kind, first = build(method.input_type, seed, context)
        requests = [defang(target, first, context)]
        for extra in range(1, count):
            requests.append(defang(target, build(method.input_type, seed_of(seed, extra), context)[1], context))
        server = target.servers[(seed >> 8) % len(target.servers)]
        code = call(self._channel(identity, server), target, requests)
        text = text_format.MessageToString(requests[0], as_one_line=True)[:2000] if code in BAD_CODES else ""
        return target, kind, code, seed, text

    def _channel(self, identity: Identity, server: str) -> grpc.Channel:
        key = (identity.label, server)
        if key not in self._channels:
            self._channels[key] = open_channel(self.cluster.processes[server].address, identity.files)
        return self._channels[key]

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()

    def report(self) -> dict:
        return {
            "run_seed": self.run_seed,
            "minutes": round((time.monotonic() - self.started) / 60, 2),
            "rounds": self.tally.rounds,
            "batches": self.tally.batches,
            "identities": [i.label for i in self.identities],
            "messages_per_identity": dict(self.tally.by_identity),
            "methods": len(self.tally.messages),
            "messages": sum(self.tally.messages.values()),
            "messages_by_kind": dict(self.tally.kinds),
            "messages_per_method": dict(sorted(self.tally.messages.items())),
            "statuses": {m: {i: dict(c) for i, c in ids.items()} for m, ids in sorted(self.tally.statuses.items())},
            "findings": [asdict(f) for f in self.findings],
        }

    def write_report(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.report(), indent=1))
