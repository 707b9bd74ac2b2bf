"""``python -m nekoflow``: the command line."""

from nekoflow.cli import app

app()
