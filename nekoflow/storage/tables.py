"""Imports every module that defines SQLModel tables so that ``create_all`` sees them all.

Each domain keeps its tables next to its storage code (``nekoflow/storage/<domain>.py``);
add the import here when a new table module appears.
"""
# ruff: noqa: I001

from nekoflow.storage import dialogue  # noqa: F401
from nekoflow.storage import turns  # noqa: F401
from nekoflow.storage import worldbook  # noqa: F401
from nekoflow.storage import rereview  # noqa: F401
from nekoflow.delivery import tables as delivery_tables  # noqa: F401
from nekoflow.storage import usage  # noqa: F401
from nekoflow.proactive import tables as proactive_tables  # noqa: F401
from nekoflow.speech import tables as speech_tables  # noqa: F401
