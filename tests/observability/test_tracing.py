"""OpenTelemetry traces from real worker processes, exported over OTLP/HTTP to a loopback
collector (pytest-httpserver) and decoded with the OTLP protobuf definitions."""

from __future__ import annotations

import time

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from werkzeug import Request, Response

from nekoflow.observability import tracing
from nekoflow.settings import Settings
from tasks import enqueue_turn

STAGES = ("dispatch", "before_turn", "llm_call", "memory_build", "review", "apply_deltas")
SECRET = "猫薄荷的秘密口令"


def test_tracing_is_off_by_default() -> None:
    assert Settings().tracing == "off"


def test_trace_and_root_ids_derive_from_the_turn_id() -> None:
    turn_id = "0123456789abcdef0123456789abcdef"
    assert tracing.trace_id_of(turn_id) == int(turn_id, 16)
    assert tracing.trace_id_of("not-hex") != 0
    assert tracing.root_span_id_of(turn_id) == tracing.root_span_id_of(turn_id) != 0


def test_root_span_gets_the_derived_ids_in_memory() -> None:
    exporter = InMemorySpanExporter()
    tracer = tracing.setup("memory", exporter=exporter)
    try:
        tracing._state["provider"].add_span_processor(SimpleSpanProcessor(exporter))
        turn_id = "fedcba9876543210fedcba9876543210"
        started = tracing.start_stage(turn_id, "review", {})
        assert started is not None
        tracing.end_stage(started, "ok")
        tracing._observer.turn_ended("web", "done", None, turn_id, None)
        spans = {s.name: s for s in exporter.get_finished_spans()}
        root, stage = spans["nekoflow.turn"], spans["nekoflow.review"]
        assert root.context.trace_id == stage.context.trace_id == int(turn_id, 16)
        assert stage.parent.span_id == root.context.span_id == tracing.root_span_id_of(turn_id)
        assert root.parent is None
        assert tracer is tracing._state["tracer"]
    finally:
        tracing.shutdown()
        tracing._state.update(pid=None, tracer=None, provider=None)


@pytest.mark.slow
def test_one_trace_per_turn_with_a_span_per_stage_and_the_llm_call_as_child(
    live, workers, httpserver
) -> None:
    received: list[ExportTraceServiceRequest] = []

    def collect(request: Request) -> Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.get_data())
        received.append(message)
        return Response(b"", status=200, content_type="application/x-protobuf")

    httpserver.expect_request("/v1/traces", method="POST").respond_with_handler(collect)
    workers.start(
        extra_env={
            "NEKOFLOW_TRACING": "otlp",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": httpserver.url_for("/v1/traces"),
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
    )
    event = {"session_id": "t1", "message": SECRET, "user_id": "u1", "display_name": "莱姆"}
    handle = enqueue_turn("web", event)
    handle.wait(timeout=60)
    assert handle.status() == "done", workers.logs()

    def spans() -> list:
        return [
            span
            for message in list(received)
            for resource in message.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    deadline = time.monotonic() + 30
    names: set[str] = set()
    while time.monotonic() < deadline:
        names = {s.name for s in spans()}
        if {"nekoflow.turn", "llm.chat", *(f"nekoflow.{s}" for s in STAGES)} <= names:
            break
        time.sleep(0.2)
    turn_trace = int(handle.turn_id, 16).to_bytes(16, "big")
    mine = [s for s in spans() if s.trace_id == turn_trace]
    by_name = {s.name: s for s in mine}
    assert {"nekoflow.turn", "llm.chat", *(f"nekoflow.{s}" for s in STAGES)} <= set(by_name), names
    root = by_name["nekoflow.turn"]
    assert root.parent_span_id == b""
    for stage in STAGES:
        assert by_name[f"nekoflow.{stage}"].parent_span_id == root.span_id, stage
    assert by_name["llm.chat"].parent_span_id == by_name["nekoflow.llm_call"].span_id
    # Never message text: no attribute value quotes what the user said.
    for span in mine:
        for attribute in span.attributes:
            assert SECRET not in str(attribute.value), span.name
