"""The Celery app object, configured from ``nekoflow.worker.config`` (nekoflow's settings)."""

from celery import Celery

app = Celery("nekoflow")
app.config_from_object("nekoflow.worker.config")
