"""Celery configuration (the app's ``config_from_object``), read from nekoflow's settings
(``NEKOFLOW_*`` environment variables); routes from :mod:`nekoflow.queues`.

JSON only (never pickle), late acks and reject-on-worker-lost so a killed worker's task is
redelivered; every stage is idempotent on turn_id, which makes redelivery safe.
"""

from nekoflow import queues as _queues
from nekoflow.settings import get_settings as _get_settings

_settings = _get_settings()

broker_url = _settings.broker_url
result_backend = _settings.result_backend

task_serializer = "json"
result_serializer = "json"
accept_content = ["json"]
result_accept_content = ["json"]

task_acks_late = True
task_reject_on_worker_lost = True
task_acks_on_failure = True
task_acks_on_timeout = True
worker_prefetch_multiplier = 1
task_track_started = True
task_send_sent_event = True
worker_send_task_events = True
result_extended = True
result_expires = 24 * 3600

broker_connection_retry_on_startup = True
# Redis transport: a message not acked within this many seconds (a killed worker's) is
# redelivered. Keep it above the longest stage (an LLM call with its timeout).
broker_transport_options = {"visibility_timeout": _settings.broker_visibility_timeout}

task_default_queue = _queues.DEFAULT_QUEUE
task_routes = {name: dict(route) for name, route in _queues.TASK_ROUTES.items()}

# The sweeper re-publishes turns that stopped moving (crashed worker, lost message).
beat_schedule = {
    "nekoflow-sweep": {"task": "nekoflow.sweep", "schedule": _settings.sweep_interval_seconds},
    # Lost voice syntheses (a worker killed mid-call) are published again.
    "nekoflow-speech-sweep": {
        "task": "nekoflow.speech.sweep",
        "schedule": _settings.sweep_interval_seconds,
    },
    # The character writes first: due follow-ups and reminders (claimed in SQL exactly once,
    # so two beat processes are safe).
    "nekoflow-proactive": {
        "task": "nekoflow.proactive.sweep",
        "schedule": _settings.proactive_sweep_seconds,
    },
}

timezone = "UTC"
enable_utc = True
