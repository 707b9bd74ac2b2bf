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
    import logging

    import uvicorn

    from nekoflow.llm.factory import describe_model
    from nekoflow.settings import get_settings

    level, line = describe_model(get_settings())  # which model the API's AI endpoints use
    typer.echo(f"{logging.getLevelName(level)}:  {line}", err=True)
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
