"""The gateway's request metrics: the `replog_gateway_*` rows of replog.common.metrics.table
(docs/metrics.md), which the ReplogGatewayErrors alert reads (deploy/prometheus/).

Built by bootstrap (nothing at import time) and counted by the servicer's edge, once per request its
handlers ran: a request the authorizer or the readiness gate refused never reaches them.
"""

from __future__ import annotations

import grpc
from prometheus_client import REGISTRY, CollectorRegistry

from replog.common.metrics import table as t


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.requests = t.GATEWAY_REQUESTS.create(registry)
        self.request_errors = t.GATEWAY_REQUEST_ERRORS.create(registry)

    def answered(self, method: str, status: grpc.StatusCode | None) -> None:
        """One request of `method` answered: with `status`, or OK when None."""
        self.requests.labels(method).inc()
        if status is not None:
            self.request_errors.labels(method, status.name).inc()
