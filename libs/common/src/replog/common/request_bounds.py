"""A bound on how many partitions one request may name, checked before its handler runs.

A handler's work, and the memory of its answer, grow with the partitions a request names; a
request naming millions would hold a handler thread (and for the controller's requests, the
broker's one controller-request lock) for minutes. This interceptor counts them for the methods
it is given and refuses a request over `partitions_max` with INVALID_ARGUMENT, naming the count,
the bound and the configuration key that sets it; nothing of the request is applied. On a
stream each request is counted as it is read, and the first one over the bound ends the stream
with that status.

The counting is one `len` per request, so the bound costs nothing that grows with the request.
Every refusal goes to the refusal log with the caller's peer address.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

import grpc

from replog.common.handler_wrapping import HANDLER_OF_KIND
from replog.common.refusal_log import RefusalLog

Counter = Callable[[Any], int]


class PartitionsBound(grpc.ServerInterceptor):
    """Refuses requests of the `counters`' methods (full paths, "/pkg.Service/Method") naming more than
    `partitions_max` partitions; `config_key` is named in the refusal so the operator knows what to raise."""

    def __init__(self, counters: Mapping[str, Counter], partitions_max: int, config_key: str,
                 refusals: RefusalLog) -> None:
        assert partitions_max > 0, partitions_max
        self._counters = dict(counters)
        self._partitions_max = partitions_max
        self._config_key = config_key
        self._refusals = refusals

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        count = self._counters.get(handler_call_details.method)
        if handler is None or count is None:
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        if handler.request_streaming:
            behavior = handler.stream_stream or handler.stream_unary
            bounded = self._bounded_stream(behavior, method, count)
        else:
            behavior = handler.unary_unary or handler.unary_stream
            bounded = self._bounded_unary(behavior, method, count)
        make = HANDLER_OF_KIND[(handler.request_streaming, handler.response_streaming)]
        return make(bounded, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)

    def _check(self, method: str, partitions: int, context) -> None:
        if partitions <= self._partitions_max:
            return
        message = (f"{method} names {partitions} partitions, more than the {self._partitions_max} one request may "
                   f"name here: split it, or raise {self._config_key} on this server")
        self._refusals.refused(context.peer(), method, "TOO_MANY_PARTITIONS", message)
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)

    def _bounded_unary(self, behavior, method: str, count: Counter):
        def bounded(request, context):
            self._check(method, count(request), context)
            return behavior(request, context)

        return bounded

    def _bounded_stream(self, behavior, method: str, count: Counter):
        def checked(requests: Iterator, context) -> Iterator:
            for request in requests:
                self._check(method, count(request), context)
                yield request

        def bounded(request_iterator, context):
            return behavior(checked(request_iterator, context), context)

        return bounded
