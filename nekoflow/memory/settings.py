"""Long-term memory settings, read from ``NEKOFLOW_MEMORY_*`` environment variables."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from nekoflow.memory.scoring import MemoryWeights


class MemorySettings(BaseSettings):
    """Retrieval weights, token budgets, summaries and the optional embeddings endpoint."""

    model_config = SettingsConfigDict(env_prefix="NEKOFLOW_MEMORY_", env_file=None, extra="ignore")

    #: Tokens of retrieved memories in the system prompt.
    prompt_tokens: int = Field(default=600, ge=0)
    #: Tokens of summaries of the distant past in the system prompt.
    summary_tokens: int = Field(default=500, ge=0)
    #: The whole context a turn may fill: system prompt + history window + the user message.
    context_tokens: int = Field(default=6000, ge=256)
    #: The history window never shrinks below this many tokens (when the prompt is long).
    min_window_tokens: int = Field(default=800, ge=0)
    #: Relevance outweighs importance + recency together, so an old, relevant fact beats a
    #: recent, important but unrelated one (both min-max normalised over the candidates).
    w_relevance: float = Field(default=3.0, ge=0)
    #: Weight of a memory's importance (from review) in the retrieval score.
    w_importance: float = Field(default=1.0, ge=0)
    #: Weight of recency (``decay_per_hour`` ** hours since the memory was last used).
    w_recency: float = Field(default=1.0, ge=0)
    #: Recency factor per hour since a memory was last used, in (0, 1]: 0.995 halves it in
    #: about six days; 1 turns recency off.
    decay_per_hour: float = Field(default=0.995, gt=0, le=1)
    #: Memories read from the full-text index per turn before scoring.
    candidates: int = Field(default=40, ge=1)
    #: Also score this many most important and this many most recently used memories.
    pool: int = Field(default=12, ge=0)
    #: Past rounds (a user line and its reply, dated) read from the full-text index per turn
    #: (0: no rounds in the prompt), and the share of ``prompt_tokens`` they may take.
    round_candidates: int = Field(default=30, ge=0)
    round_share: float = Field(default=0.5, ge=0, le=1)
    #: Summaries: lines per summarised span, and whether the model or the rules write them
    #: ("auto": the model when NEKOFLOW_LLM_PROVIDER is openai, else the rules).
    summary_span_lines: int = Field(default=40, ge=4)
    summary_mode: Literal["auto", "llm", "rule"] = "auto"
    #: Enqueue the summary task after every N-th turn of a scope.
    summary_every_turns: int = Field(default=5, ge=1)
    #: Optional OpenAI-compatible embeddings endpoint (``…/v1``); unset = lexical only.
    embeddings_base_url: str | None = None
    #: Embeddings model name sent to ``embeddings_base_url``.
    embeddings_model: str = "text-embedding-3-small"
    #: Bearer key of the embeddings endpoint (never logged).
    embeddings_api_key: SecretStr | None = None
    #: Seconds an embeddings call of the background indexing may take.
    embeddings_timeout: float = Field(default=10.0, gt=0)
    #: Ask the endpoint for vectors of this many dimensions (``text-embedding-3-*`` support it);
    #: fewer dimensions make retrieval faster. Unset: the model's own size.
    embeddings_dimensions: int | None = Field(default=None, ge=1)
    #: The query's vector is fetched within this many seconds, else the turn retrieves lexically.
    embeddings_query_timeout: float = Field(default=2.0, gt=0)
    #: With a query vector, compare it with at most this many of the scope's newest embedded
    #: memories (an exact scan: so a memory sharing no word with the message is still found by
    #: meaning) and make the nearest candidates; 0: no vector candidates.
    semantic_scan: int = Field(default=5000, ge=0)
    #: The exact scan's budget per turn in multiplications (vectors × dimensions): about 2,000
    #: vectors of 256 dimensions, 330 of 1,536 — a bounded cost whatever the scope's size.
    semantic_budget: int = Field(default=500_000, ge=0)
    #: Share of relevance taken by embedding similarity when both sides have vectors.
    semantic_share: float = Field(default=0.5, ge=0, le=1)

    @property
    def weights(self) -> MemoryWeights:
        """The retrieval score's weights."""
        return MemoryWeights(
            relevance=self.w_relevance,
            importance=self.w_importance,
            recency=self.w_recency,
            decay_per_hour=self.decay_per_hour,
            semantic_share=self.semantic_share,
        )


@lru_cache(maxsize=1)
def get_memory_settings() -> MemorySettings:
    """The process's memory settings, read once from the environment."""
    return MemorySettings()
