"""The Celery app object, configured from ``celeryconfig`` (which reads nekoflow's settings)."""

from celery import Celery

app = Celery("nekoflow")
app.config_from_object("celeryconfig")
