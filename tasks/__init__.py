"""The Celery application: ``celery -A tasks worker`` from the repository root.

This package is the only place in nekoflow that knows about Celery; task bodies are thin
wrappers over the plain-Python stage functions in ``nekoflow.turns`` and ``nekoflow.rereview``.
"""

from tasks.app import app

__all__ = ["app"]
