"""The price table's model and costing, kept here for imports that name ``nekoflow.usage``
(they live in :mod:`nekoflow.prices`, which the settings read without the usage package)."""

from nekoflow.prices import Price, cost

__all__ = ["Price", "cost"]
