"""The HTTP API (FastAPI): ``create_app`` builds it, ``nekoflow serve`` runs it under uvicorn."""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so ``nekoflow serve --help`` does not load FastAPI and the models.
    if name == "create_app":
        from nekoflow.api.app import create_app

        return create_app
    raise AttributeError(name)
