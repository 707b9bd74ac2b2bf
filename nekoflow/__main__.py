"""``python -m nekoflow``: the command line."""

from nekoflow.cli import main

main()
