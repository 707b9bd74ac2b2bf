"""Retry policy for LLM calls: exponential backoff with full jitter, honouring Retry-After."""

from __future__ import annotations

import random

from nekoflow.llm.base import LLMError, LLMRateLimitError


def backoff_delay(
    attempt: int,
    *,
    base: float = 1.0,
    cap: float = 30.0,
    error: LLMError | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 1).

    Full jitter: uniform in [0, min(cap, base · 2^(attempt-1))]; never less than a 429's
    ``retry_after`` (itself capped at ``cap``).
    """
    ceiling = min(cap, base * (2 ** max(0, attempt - 1)))
    delay = (rng or random).uniform(0, ceiling) if ceiling > 0 else 0.0
    if isinstance(error, LLMRateLimitError) and error.retry_after:
        delay = max(delay, min(cap, error.retry_after))
    return delay


def should_retry(error: BaseException, attempt: int, max_attempts: int) -> bool:
    """True when ``error`` is a retryable LLM failure and attempts remain."""
    return isinstance(error, LLMError) and error.retryable and attempt < max_attempts
