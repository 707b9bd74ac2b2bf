"""nekoflow: role-play chatbot turns run as a Celery workflow.

The pure core (review rules, memory builder, world-book matcher, dispatcher) lives in
subpackages that import neither Celery, Redis nor SQL; thin shells (``tasks``,
``nekoflow.storage``, the Redis modules) wrap it.
"""

__version__ = "0.1.0"
