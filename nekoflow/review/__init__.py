"""The review pipeline (seeds review-pipeline.md, review-models.md): rule and LLM review of a turn.

Import surface: the models, ``run_rule_review``, ``ReviewPipeline``, ``get_review_pipeline`` and
``real_time_context``.
"""

from nekoflow.review.autostate import AutoStateCache, InMemoryAutoState
from nekoflow.review.models import (
    ChoiceLevel,
    ContinuityLevel,
    FactItem,
    MemoryItem,
    PlotUpdate,
    RelationshipDelta,
    ReviewInput,
    ReviewOutput,
    ReviewScore,
    WorldBookUpdate,
)
from nekoflow.review.pipeline import REVIEW_EVENTS, ReviewPipeline
from nekoflow.review.rules import ReviewKeywords, run_rule_review, total_delta
from nekoflow.review.timegap import RealTimeContext, real_time_context
from nekoflow.review.wiring import get_review_pipeline

__all__ = [
    "REVIEW_EVENTS",
    "AutoStateCache",
    "ChoiceLevel",
    "ContinuityLevel",
    "FactItem",
    "InMemoryAutoState",
    "MemoryItem",
    "PlotUpdate",
    "RealTimeContext",
    "RelationshipDelta",
    "ReviewInput",
    "ReviewKeywords",
    "ReviewOutput",
    "ReviewPipeline",
    "ReviewScore",
    "WorldBookUpdate",
    "get_review_pipeline",
    "real_time_context",
    "run_rule_review",
    "total_delta",
]
