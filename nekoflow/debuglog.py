"""The opt-in debug log: the one place where error details that may quote users are written.

Off unless ``NEKOFLOW_DEBUG_LOG`` names a file. The file is created readable by its owner only
(0600), and the ``nekoflow.debug`` logger never propagates to the ordinary logs, Celery's log or
Flower. Use it for what the server said (``LLMError.detail``) and for tracebacks.
"""

from __future__ import annotations

import logging
import os
import threading

_log = logging.getLogger("nekoflow.debug")
_log.propagate = False
_lock = threading.Lock()
_configured_path: str | None = None


def _configure(path: str) -> None:
    global _configured_path
    with _lock:
        if _configured_path == path:
            return
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.close(fd)
        os.chmod(path, 0o600)
        for handler in list(_log.handlers):
            _log.removeHandler(handler)
            handler.close()
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.DEBUG)
        _configured_path = path


def debug_detail(what: str, exc: BaseException | None = None) -> None:
    """Write ``what`` (and ``exc``'s detail and traceback) to the debug log, when it is on."""
    path = os.environ.get("NEKOFLOW_DEBUG_LOG", "").strip()
    if not path:
        return
    try:
        _configure(path)
        detail = getattr(exc, "detail", None) if exc is not None else None
        message = what + (f" | server said: {detail}" if detail else "")
        _log.debug(message, exc_info=exc)
    except OSError:  # the debug log is a convenience: never a reason to fail a turn
        logging.getLogger(__name__).warning("NEKOFLOW_DEBUG_LOG is not writable")
