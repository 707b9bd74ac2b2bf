"""The Celery application: ``celery -A tasks worker`` from the repository root.

This package is the only place in nekoflow that knows about Celery; task bodies are thin
wrappers over the plain-Python stage functions in ``nekoflow.turns``.
"""

from nekoflow.observability import worker as _observability  # noqa: F401  (metrics signals)
from tasks import checks  # noqa: F401  (worker start-up checks)
from tasks.app import app
from tasks.rereview import rereview_batch
from tasks.turns import enqueue_turn, publish_turn, turn_chain

__all__ = ["app", "enqueue_turn", "publish_turn", "rereview_batch", "turn_chain"]
