"""The checkout's alias of :mod:`nekoflow.worker`: ``celery -A tasks worker`` starts the same app.

Each ``tasks.<module>`` is the very module ``nekoflow.worker.<module>`` (one object in
``sys.modules``), so ``from tasks.turns import publish_turn`` and patches of ``tasks.turns``
reach the worker's own code. Installed wheels carry no ``tasks``: use ``celery -A nekoflow.worker``.
"""

import importlib
import pkgutil
import sys

import nekoflow.worker as _worker
from nekoflow.worker import app, enqueue_turn, publish_turn, rereview_batch, turn_chain

for _info in pkgutil.iter_modules(_worker.__path__):
    _module = importlib.import_module(f"{_worker.__name__}.{_info.name}")
    sys.modules[f"{__name__}.{_info.name}"] = _module
    if _info.name != "app":  # ``tasks.app`` stays the Celery app, as in nekoflow.worker
        globals()[_info.name] = _module

__all__ = ["app", "enqueue_turn", "publish_turn", "rereview_batch", "turn_chain"]
