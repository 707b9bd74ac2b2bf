"""The HTTP API (FastAPI): ``create_app`` builds it, ``nekoflow serve`` runs it under uvicorn."""

from nekoflow.api.app import create_app

__all__ = ["create_app"]
