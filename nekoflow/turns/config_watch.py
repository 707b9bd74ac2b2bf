"""``config.ini`` while a process runs: reload on change, and say when the file is broken.

A long-running API, gateway or worker checks the file's modification time at most every
:data:`CHECK_SECONDS`; when it changed, the channel, conversation-flow and proactive sections are
parsed again and swapped into the process's turn dependencies. A file that no longer parses keeps
the last good configuration in force and is reported (once in the log, and by ``/healthz``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nekoflow.errors import ConfigError

log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often, at most, a process looks at the file's modification time."""


@dataclass
class _Watch:
    """What a process knows about its config.ini."""

    stamp: tuple[int, int] | None
    checked: float
    error: str | None = None


_watches: dict[int, _Watch] = {}
_lock = threading.Lock()


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def check_config(path: str) -> str | None:
    """Parse ``path`` as config.ini now: None when it is valid (or absent), else the error."""
    from nekoflow.channels.config import load_runtime_config
    from nekoflow.flow.policy import load_flow_config
    from nekoflow.proactive.config import load_proactive_config

    try:
        load_runtime_config(path, missing_ok=True)
        load_flow_config(path)
        load_proactive_config(path)
    except ConfigError as exc:
        return str(exc)
    return None


def refresh(deps: Any, *, force: bool = False) -> bool:
    """Reload ``deps``' channel dispatcher, flow and proactive policies when config.ini changed.

    Returns True when a new configuration was swapped in. A broken file keeps the previous
    configuration and is logged once per change.
    """
    path = str(deps.settings.runtime_config_path)
    now = time.monotonic()
    with _lock:
        watch = _watches.get(id(deps))
        if watch is None:  # the deps were just built from the file as it is now
            _watches[id(deps)] = _Watch(stamp=_stamp(path), checked=now)
            return False
        if not force and now - watch.checked < CHECK_SECONDS:
            return False
        watch.checked = now
        stamp = _stamp(path)
        if stamp == watch.stamp and not force:
            return False
        watch.stamp = stamp
    from nekoflow.channels import CharacterRuntimeContextDispatcher
    from nekoflow.channels.config import load_runtime_config
    from nekoflow.flow.policy import load_flow_config
    from nekoflow.proactive.config import load_proactive_config

    try:
        dispatcher = CharacterRuntimeContextDispatcher(load_runtime_config(path, missing_ok=True))
        flow = load_flow_config(path)
        proactive = load_proactive_config(path)
    except ConfigError as exc:
        watch.error = str(exc)
        log.error("%s changed but is invalid, keeping the previous configuration: %s", path, exc)
        return False
    deps.dispatcher, deps.flow, deps.proactive = dispatcher, flow, proactive
    watch.error = None
    log.info("%s changed: channel, conversation-flow and proactive settings reloaded", path)
    return True
