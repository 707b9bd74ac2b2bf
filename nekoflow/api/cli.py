"""``nekoflow serve``: run the HTTP API under uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer


def serve_command(
    host: Annotated[
        str, typer.Option(envvar="NEKOFLOW_API_HOST", help="Interface to bind (0.0.0.0 = all).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(envvar="NEKOFLOW_API_PORT", min=1, max=65535, help="TCP port.")
    ] = 8000,
    workers: Annotated[
        int, typer.Option(envvar="NEKOFLOW_API_WORKERS", min=1, help="Worker processes.")
    ] = 1,
    reload: Annotated[bool, typer.Option(help="Reload on code changes (development).")] = False,
    log_level: Annotated[
        str, typer.Option(help="uvicorn log level (critical, error, warning, info, debug).")
    ] = "info",
) -> None:
    """Serve the HTTP API (world books, turns, Web chat, health; settings from NEKOFLOW_* vars)."""
    import uvicorn

    uvicorn.run(
        "nekoflow.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=None if reload else workers,
        reload=reload,
        log_level=log_level.lower(),
        proxy_headers=True,
    )
