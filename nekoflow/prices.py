"""Cost of recorded usage from a per-model price table (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """Price of a model per million prompt / completion tokens, in the operator's currency."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Price per million prompt (input) tokens.
    prompt: float = Field(ge=0)
    #: Price per million completion (output) tokens.
    completion: float = Field(ge=0)


def cost(prices: Mapping[str, Price], model: str, prompt: int, completion: int) -> float | None:
    """What ``prompt`` + ``completion`` tokens of ``model`` cost (None: the model has no price).

    A model is looked up by its exact name, then by the longest configured prefix (so a price
    for ``gpt-4o-mini`` also covers ``gpt-4o-mini-2024-07-18``).
    """
    price = prices.get(model)
    if price is None:
        candidates = [name for name in prices if model.startswith(name)]
        if not candidates:
            return None
        price = prices[max(candidates, key=len)]
    return (prompt * price.prompt + completion * price.completion) / 1_000_000
