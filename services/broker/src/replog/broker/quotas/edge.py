"""LogService's calls into the client quotas: who is measured, and the answers a throttle makes.

Who: a call whose certificate names a user is that user (`User:<name>`); a call with no identity
(a cluster run with --insecure, or a certificate without one replog identity) is `User:ANONYMOUS`,
as in Kafka, and gets its quota or the default. Controllers, brokers and gateways are never measured.
Super users are users here: they are held to a quota when one applies to them.

Produce (and every request of a ProduceStream) is measured by its size on the wire when it arrives,
before anything is appended. One that arrives while its user is throttled is answered at once, every
partition with THROTTLING_QUOTA_EXCEEDED and the throttle time left, and nothing is appended: the
producer sends it again after the throttle. One admitted is produced as usual and its answer carries
the throttle time it caused (0 for none), the wait the client owes before its next request here.

Fetch: one that arrives while its user is throttled is answered at once with no partitions and the
time left. Else it reads at most one sample's worth of the quota (quota x quota_window_size_seconds,
and at least one batch, as always), so that a throttled consumer moves in steps a sample long rather
than in one fetch of many seconds' worth and a long wait; what it sends is measured and its answer
carries the throttle time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from replog.broker.quotas.client_quotas import FETCH, PRODUCE, QUOTA_TYPE, ClientQuotas
from replog.broker.quotas.core.throttle import Admission
from replog.common.error_codes import ErrorCode
from replog.common.security.principal import SERVICE_KINDS, Principal, peer_principal
from replog.v1 import log_pb2

if TYPE_CHECKING:
    from replog.broker.entrypoints.produce_edge import ProduceEdge


ANONYMOUS = "User:ANONYMOUS"  # Kafka's name for a caller without an identity: one user to the quotas


class QuotaGate:
    def __init__(self, quotas: ClientQuotas,
                 principal_of: Callable[[object], Principal | None] = peer_principal) -> None:
        self._quotas = quotas
        self._principal_of = principal_of

    def _user(self, context) -> str | None:
        """The principal the quotas measure; None for a service."""
        principal = self._principal_of(context)
        if principal is None:
            return ANONYMOUS
        return None if principal.kind in SERVICE_KINDS else str(principal)

    def produce_edge(self, context, edge: ProduceEdge):
        """What one Produce goes through: `edge`, behind the caller's produce quota when one may apply."""
        if self._quotas.empty:
            return edge
        return self.stream_edge(context, edge)

    def stream_edge(self, context, edge: ProduceEdge):
        """What a ProduceStream's requests go through: each is held to the quota that applies when it
        arrives (a stream outlives quota changes); services' streams go straight to `edge`."""
        user = self._user(context)
        return edge if user is None else ThrottledProduce(edge, self._quotas, user)

    def fetch(self, context) -> FetchQuota | None:
        """The caller's fetch quota; None when none applies (nothing is measured)."""
        if self._quotas.empty:
            return None
        user = self._user(context)
        if user is None:
            return None
        quota = self._quotas.rate(FETCH, user)
        return None if quota is None else FetchQuota(self._quotas, user, quota)


class ThrottledProduce:
    """A ProduceEdge behind one user's produce quota (the edge's interface: produce, produce_async, expire_due)."""

    def __init__(self, edge: ProduceEdge, quotas: ClientQuotas, user: str) -> None:
        self._edge = edge
        self._quotas = quotas
        self._user = user

    def _admission(self, request: log_pb2.ProduceRequest) -> Admission | None:
        """None when no produce quota applies to the user now; the request is sized only when one does."""
        quotas = self._quotas
        if quotas.snapshot.empty:
            return None
        quota = quotas.rate(PRODUCE, self._user)
        return None if quota is None else quotas.admit(PRODUCE, self._user, request.ByteSize(), quota)

    def produce(self, request: log_pb2.ProduceRequest) -> log_pb2.ProduceResponse:
        admission = self._admission(request)
        if admission is None:
            return self._edge.produce(request)
        if admission.refused:
            return self._refusal(request, admission.throttle_ms)
        response = self._edge.produce(request)
        response.throttle_time_ms = admission.throttle_ms
        return response

    def produce_async(self, request: log_pb2.ProduceRequest, answer) -> int | None:
        admission = self._admission(request)
        if admission is None or not admission.throttle_ms:
            return self._edge.produce_async(request, answer)
        if admission.refused:
            refusal = self._refusal(request, admission.throttle_ms)
            answer(lambda: refusal)
            return None
        throttle_ms = admission.throttle_ms
        return self._edge.produce_async(request, lambda build: answer(lambda: _throttled(build(), throttle_ms)))

    def expire_due(self) -> None:
        self._edge.expire_due()

    def _refusal(self, request: log_pb2.ProduceRequest, left_ms: int) -> log_pb2.ProduceResponse:
        quota = self._quotas.rate(PRODUCE, self._user)
        message = (f"{self._user} went over its {QUOTA_TYPE[PRODUCE]} quota on this broker ({quota} bytes/s) and is "
                   f"throttled for {left_ms} ms more; nothing was appended: send it again once throttle_time_ms "
                   "has passed")
        return log_pb2.ProduceResponse(throttle_time_ms=left_ms, partitions=[
            log_pb2.ProducePartitionResponse(topic=p.topic, partition=p.partition,
                                             error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED, error_message=message,
                                             base_offset=-1, log_start_offset=-1)
            for p in request.partitions])


def _throttled(response: log_pb2.ProduceResponse, throttle_ms: int) -> log_pb2.ProduceResponse:
    response.throttle_time_ms = throttle_ms
    return response


class FetchQuota:
    """One Fetch's caller and the fetch quota it is held to."""

    def __init__(self, quotas: ClientQuotas, user: str, quota: int) -> None:
        self._quotas = quotas
        self._user = user
        self._quota = quota

    def throttled(self) -> log_pb2.FetchResponse | None:
        """The answer while the caller is throttled (no partitions, the time left); None when it is not."""
        left_ms = self._quotas.remaining_ms(FETCH, self._user)
        return log_pb2.FetchResponse(throttle_time_ms=left_ms) if left_ms else None

    def bytes_max(self, bytes_max: int) -> int:
        """At most one sample's worth of the quota (the read still returns at least one batch)."""
        return min(bytes_max, max(1, self._quota * self._quotas.sample_ms // 1000))

    def record(self, sent_bytes: int) -> int:
        """Measure what the Fetch sends; its throttle time."""
        return self._quotas.record(FETCH, self._user, sent_bytes)
