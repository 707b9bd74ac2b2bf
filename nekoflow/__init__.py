"""nekoflow: role-play chatbot turns run as a Celery workflow.

The pure core (review rules, memory builder, world-book matcher, dispatcher) lives in
subpackages that import neither Celery, Redis nor SQL; thin shells (``nekoflow.worker``,
``nekoflow.storage``, the Redis modules) wrap it. The layers hold by contract (``lint-imports``,
``[tool.importlinter]`` in pyproject.toml).
"""

__version__ = "0.1.0"
