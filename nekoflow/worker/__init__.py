"""The Celery application: ``celery -A nekoflow.worker worker`` (``-A tasks`` from a checkout).

This package is the only place in nekoflow that knows about Celery; task bodies are thin
wrappers over the plain-Python stage functions in ``nekoflow.turns``. Importing it registers
its :class:`~nekoflow.taskqueue.TaskQueue`, through which the library publishes without
importing it.
"""

from nekoflow import taskqueue as _taskqueue
from nekoflow.observability import worker as _observability  # noqa: F401  (metrics signals)
from nekoflow.worker import (
    checks,  # noqa: F401  (worker start-up checks)
    proactive,  # noqa: F401  (the proactive sweep task)
    speech,  # noqa: F401  (the speech queue's task)
)
from nekoflow.worker.app import app
from nekoflow.worker.queue import CeleryTaskQueue
from nekoflow.worker.rereview import rereview_batch
from nekoflow.worker.turns import enqueue_turn, publish_turn, turn_chain

_taskqueue.register(CeleryTaskQueue())

__all__ = ["app", "enqueue_turn", "publish_turn", "rereview_batch", "turn_chain"]
