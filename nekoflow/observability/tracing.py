"""Optional OpenTelemetry traces: one trace per turn, a span per stage, the LLM call a child.

Off unless ``NEKOFLOW_TRACING`` is ``otlp`` or ``console``. The trace context travels with the
turn itself: the trace id *is* the turn id (128 bits) and the root span's id is derived from it,
so every stage execution — on any worker, after a retry, a redelivery or a sweeper
re-publication — joins the same trace without carrying anything in the message. The root span
``nekoflow.turn`` is written when the turn ends, spanning from its creation to its end.
Attributes are ids, names, counts and outcomes — never message text.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

from nekoflow.observability import hooks
from nekoflow.observability.metrics import reason_label

log = logging.getLogger(__name__)

_forced_ids: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "nekoflow_forced_span_ids", default=None
)
_lock = threading.Lock()
_state: dict[str, Any] = {"pid": None, "tracer": None, "provider": None}


def trace_id_of(turn_id: str) -> int:
    """The trace id of a turn: its uuid4 hex as is, else a hash of it (never zero)."""
    try:
        value = int(turn_id, 16) if len(turn_id) == 32 else 0
    except ValueError:
        value = 0
    if not value:
        value = int.from_bytes(hashlib.sha256(turn_id.encode()).digest()[:16], "big") or 1
    return value


def root_span_id_of(turn_id: str) -> int:
    """The span id of a turn's root span (derived, so any process can parent a stage on it)."""
    digest = hashlib.sha256(b"nekoflow.turn:" + turn_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def _exporter(mode: str) -> Any:
    if mode == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def setup(mode: str, exporter: Any = None) -> Any:
    """Build this process's tracer for ``mode`` (``otlp``/``console``, or any mode with an
    explicit ``exporter``) and register the observer of LLM calls and turn ends."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class TurnIds(RandomIdGenerator):
        """Random ids, except the root span of a turn whose ids are derived from it."""

        def generate_span_id(self) -> int:
            forced = _forced_ids.get()
            return forced[1] if forced else super().generate_span_id()

        def generate_trace_id(self) -> int:
            forced = _forced_ids.get()
            return forced[0] if forced else super().generate_trace_id()

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "nekoflow")})
    provider = TracerProvider(resource=resource, id_generator=TurnIds())
    provider.add_span_processor(BatchSpanProcessor(exporter or _exporter(mode)))
    tracer = provider.get_tracer("nekoflow")
    _state.update(pid=os.getpid(), tracer=tracer, provider=provider)
    hooks.register(_observer)
    return tracer


def tracer() -> Any:
    """This process's tracer, set up on first use after a fork; None when tracing is off."""
    if _state["pid"] == os.getpid():
        return _state["tracer"]
    with _lock:
        if _state["pid"] != os.getpid():
            _state.update(pid=os.getpid(), tracer=None, provider=None)
            try:
                from nekoflow.settings import get_settings

                mode = get_settings().tracing
                if mode != "off":
                    setup(mode)
            except ImportError as exc:  # the optional extra is not installed
                log.error(
                    "tracing disabled: NEKOFLOW_TRACING needs pip install 'nekoflow[otel]' "
                    "(%s is missing)",
                    exc.name,
                )
            except Exception as exc:  # tracing never stops a worker
                log.error("tracing disabled: %s", type(exc).__name__)
        return _state["tracer"]


def shutdown() -> None:
    """Flush and stop this process's tracer (a worker child's exit)."""
    provider = _state.get("provider")
    if provider is not None and _state["pid"] == os.getpid():
        provider.shutdown()


def turn_context(turn_id: str) -> Any:
    """The OpenTelemetry context whose parent is the turn's root span."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parent = SpanContext(
        trace_id=trace_id_of(turn_id),
        span_id=root_span_id_of(turn_id),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def start_stage(turn_id: str, stage: str, attributes: dict[str, Any]) -> tuple[Any, Any] | None:
    """Start the span of one stage execution and make it current: (span, token) or None."""
    tr = tracer()
    if tr is None:
        return None
    from opentelemetry import context, trace
    from opentelemetry.trace import SpanKind

    span = tr.start_span(
        f"nekoflow.{stage}",
        context=turn_context(turn_id),
        kind=SpanKind.CONSUMER,
        attributes={"nekoflow.turn_id": turn_id, "nekoflow.stage": stage, **attributes},
    )
    token = context.attach(trace.set_span_in_context(span))
    return span, token


def end_stage(started: tuple[Any, Any], outcome: str) -> None:
    """End a stage span started by :func:`start_stage` with its outcome."""
    from opentelemetry import context
    from opentelemetry.trace import Status, StatusCode

    span, token = started
    span.set_attribute("nekoflow.outcome", outcome)
    if outcome == "failed":
        span.set_status(Status(StatusCode.ERROR))
    span.end()
    context.detach(token)


def _ns(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1e9)


class TracingObserver:
    """Adds the LLM call under the current stage span and writes a turn's root span."""

    def llm_call(self, model: str, seconds: float, outcome: str) -> None:
        """A child span of the running stage covering the model call."""
        tr = tracer()
        if tr is None:
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        end = time.time_ns()
        span = tr.start_span(
            "llm.chat",
            kind=SpanKind.CLIENT,
            start_time=end - int(max(seconds, 0.0) * 1e9),
            attributes={"gen_ai.request.model": model, "nekoflow.outcome": outcome},
        )
        if outcome != "ok":
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end)

    def turn_ended(
        self,
        channel: str,
        status: str,
        reason: str | None,
        turn_id: str | None,
        started_at: datetime | None,
    ) -> None:
        """The turn's root span, from its creation to now, with its final status."""
        tr = tracer()
        if tr is None or not turn_id:
            return
        from opentelemetry import context as otel_context
        from opentelemetry.trace import Status, StatusCode

        end = time.time_ns()
        start = min(_ns(started_at), end) if started_at else end
        token = _forced_ids.set((trace_id_of(turn_id), root_span_id_of(turn_id)))
        try:
            span = tr.start_span(
                "nekoflow.turn",
                context=otel_context.Context(),
                start_time=start,
                attributes={
                    "nekoflow.turn_id": turn_id,
                    "nekoflow.channel": channel,
                    "nekoflow.status": status,
                    "nekoflow.skip_reason": reason_label(status, reason),
                },
            )
        finally:
            _forced_ids.reset(token)
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end)


_observer = TracingObserver()
