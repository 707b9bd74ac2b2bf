"""``GET /metrics``: the Prometheus text exposition of the API process (and, in multiprocess
mode, of every process sharing ``PROMETHEUS_MULTIPROC_DIR``, workers included)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from nekoflow.observability import metrics

router = APIRouter(tags=["observability"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def prometheus_metrics() -> Response:
    """Every nekoflow series in the Prometheus text format (no ids, no text in labels)."""
    body, content_type = metrics.exposition()
    return Response(content=body, media_type=content_type)


metrics.install()  # the API process counts the turns it skips at enqueue
