"""Fixtures of the proactive tests: the turn tests' TurnDeps (scripted model, test database)."""

from tests.turns.conftest import deps, published, role  # noqa: F401  (fixtures)
