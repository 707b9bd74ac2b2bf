"""The checkout's alias of :mod:`nekoflow.worker.config` (the Celery settings), kept for
``celery --config celeryconfig`` and older scripts; the app reads ``nekoflow.worker.config``."""

from nekoflow.worker.config import *  # noqa: F403
