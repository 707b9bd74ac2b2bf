"""Bulk re-review of historical conversations: turn extraction from the dialogue tree, batching
(Celery ``review`` queue or in process), idempotent review records, and replay (``--apply``).

The names exported here are the pure core; SQL lives in ``store``/``runner``/``apply``, Celery in
``nekoflow.worker.rereview``.
"""

from nekoflow.rereview.core import (
    HistoricalTurn,
    Replay,
    RunInfo,
    extract_turns,
    review_input,
    review_save,
    reviewer_version,
)

__all__ = [
    "HistoricalTurn",
    "Replay",
    "RunInfo",
    "extract_turns",
    "review_input",
    "review_save",
    "reviewer_version",
]
