"""With OTEL_EXPORTER_OTLP_ENDPOINT set, services send their spans over OTLP/gRPC
(to Jaeger, Tempo or a Collector) and still write their span files, which
`replog trace` and the Spark failover report read. Here the receiving end is a
minimal OTLP trace collector served in the test."""

from __future__ import annotations

import threading
import time
from concurrent import futures

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from replog.devcluster import ClusterSpec
from replog.devcluster.ports import free_port

pytestmark = pytest.mark.integration


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.spans: list[tuple[str, str]] = []  # (service.name, span name)
        self.lock = threading.Lock()

    def Export(self, request, context):
        with self.lock:
            for resource_spans in request.resource_spans:
                attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append((attributes.get("service.name", ""), span.name))
        return trace_service_pb2.ExportTraceServiceResponse()


def test_spans_go_to_the_otlp_endpoint_and_the_files_when_it_is_set(cluster_factory):
    collector = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        cluster = cluster_factory(ClusterSpec(controllers=1, brokers=1, gateways=1,
                                              env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                                                   "OTEL_BSP_SCHEDULE_DELAY": "200"}))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with collector.lock:
                if ("replog-controller", "controller.failover") in collector.spans:
                    break
            time.sleep(0.2)
        with collector.lock:
            assert ("replog-controller", "controller.failover") in collector.spans, collector.spans[:20]
        files = list(cluster.trace_dir.glob("replog-controller-*.jsonl"))
        deadline = time.monotonic() + 10  # the file exporter's batches leave every 500 ms
        while time.monotonic() < deadline and not any('"controller.failover"' in f.read_text() for f in files):
            time.sleep(0.2)
            files = list(cluster.trace_dir.glob("replog-controller-*.jsonl"))
        assert any('"controller.failover"' in f.read_text() for f in files), "no controller.failover span in the files"
    finally:
        server.stop(0)
