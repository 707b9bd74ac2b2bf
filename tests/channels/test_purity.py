"""The channels package is pure: importing and using it loads neither Celery, Redis nor SQL."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import nekoflow.channels as channels
adapter = channels.QQChannelAdapter()
request = adapter.parse_event({"post_type": "message", "message_type": "private",
                               "user_id": 1, "message": "hi"})
channels.CharacterRuntimeContextDispatcher().dispatch(request, adapter)
adapter.render_result("hi", adapter.build_runtime_context(request))
bad = [m for m in ("celery", "redis", "sqlalchemy", "sqlmodel", "psycopg", "kombu")
       if m in sys.modules]
print(",".join(bad))
"""


def test_channels_import_no_celery_redis_or_sql() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
