"""Operating nekoflow: Prometheus metrics, OpenTelemetry traces and the hooks that feed them.

``hooks`` is the pure seam the pipeline reports to (no Prometheus, no Celery); ``metrics`` turns
those reports into Prometheus series; ``worker`` hooks Celery's task signals (stage latency,
queue wait, retries, sweeper re-publishes) in one place; ``tracing`` is the optional
OpenTelemetry layer; ``http`` serves ``GET /metrics`` on the API.
"""
