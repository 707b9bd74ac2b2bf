"""Memory embeddings: an OpenAI-compatible ``/embeddings`` client and the stored vector format.

Vectors are stored unit-length as little-endian float32 bytes (``pack``/``unpack``), so the
similarity of two of them is their dot product. Errors name the failure class and HTTP status
only: never the texts sent, the server's body or the key.
"""

from __future__ import annotations

import logging
import math
import struct
import sys
from array import array
from collections.abc import Sequence
from functools import lru_cache
from operator import mul
from typing import Any, Protocol

from pydantic import SecretStr

log = logging.getLogger(__name__)

__all__ = [
    "Embedder",
    "EmbeddingsError",
    "OpenAIEmbedder",
    "configured_embedder",
    "dot",
    "embedder_from",
    "pack",
    "query_vector",
    "unpack",
]


class EmbeddingsError(RuntimeError):
    """The embeddings endpoint failed (message: the failure class and status only)."""


class Embedder(Protocol):
    """Turns texts into vectors with one model."""

    model: str

    def embed(self, texts: Sequence[str], *, timeout: float | None = None) -> list[list[float]]:
        """One vector per text, in order (``timeout``: seconds for this call)."""
        ...


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` through the official ``openai`` SDK (its retries off: the
    callers retry or fall back)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: SecretStr | None = None,
        timeout: float = 10.0,
        dimensions: int | None = None,
    ) -> None:
        import openai  # the SDK only where an endpoint is configured

        from nekoflow.llm.openai_client import NO_KEY_PLACEHOLDER

        self.model = model
        self.dimensions = dimensions
        key = api_key.get_secret_value() if api_key is not None else NO_KEY_PLACEHOLDER
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)

    def embed(self, texts: Sequence[str], *, timeout: float | None = None) -> list[list[float]]:
        """One vector per text, in order; :class:`EmbeddingsError` on any failure."""
        import openai

        if not texts:
            return []
        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        if timeout is not None:
            extra["timeout"] = timeout
        try:
            answer = self._client.embeddings.create(
                model=self.model, input=list(texts), encoding_format="float", **extra
            )
        except openai.APIStatusError as exc:
            raise EmbeddingsError(f"embeddings endpoint answered HTTP {exc.status_code}") from None
        except openai.APITimeoutError:
            raise EmbeddingsError("embeddings endpoint timed out") from None
        except openai.APIConnectionError:
            raise EmbeddingsError("embeddings endpoint unreachable") from None
        except Exception as exc:  # a malformed body the SDK could not read
            raise EmbeddingsError(f"embeddings answer unreadable ({type(exc).__name__})") from None
        data = sorted(answer.data, key=lambda d: d.index)
        vectors = [list(d.embedding) for d in data]
        if len(vectors) != len(texts) or any(
            not v or not all(isinstance(x, int | float) for x in v) for v in vectors
        ):
            raise EmbeddingsError("embeddings answer does not match the texts sent")
        return vectors


def embedder_from(
    base_url: str | None,
    model: str,
    *,
    api_key: SecretStr | None = None,
    timeout: float = 10.0,
    dimensions: int | None = None,
) -> Embedder | None:
    """The configured embedder, or None when no endpoint is set (lexical retrieval only)."""
    if not base_url:
        return None
    return OpenAIEmbedder(base_url, model, api_key=api_key, timeout=timeout, dimensions=dimensions)


@lru_cache(maxsize=1)
def configured_embedder() -> Embedder | None:
    """The process's embedder from ``NEKOFLOW_MEMORY_EMBEDDINGS_*`` (None: not configured)."""
    from nekoflow.memory.settings import get_memory_settings

    m = get_memory_settings()
    return embedder_from(
        m.embeddings_base_url,
        m.embeddings_model,
        api_key=m.embeddings_api_key,
        timeout=m.embeddings_timeout,
        dimensions=m.embeddings_dimensions,
    )


def query_vector(embedder: Embedder | None, text: str, timeout: float) -> list[float] | None:
    """The message's vector for retrieval, or None (no embedder, no text, or the endpoint
    failed: the turn then retrieves lexically, and the failure is logged without the text)."""
    if embedder is None or not text.strip():
        return None
    try:
        return embedder.embed([text], timeout=timeout)[0]
    except EmbeddingsError as exc:
        log.warning("query embedding failed, retrieving lexically: %s", exc)
        return None


def pack(vector: Sequence[float]) -> bytes:
    """The unit-length float32 little-endian bytes of ``vector`` (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector)) or 1.0
    return struct.pack(f"<{len(vector)}f", *(x / norm for x in vector))


def unpack(data: bytes | None) -> array | None:
    """The vector stored by :func:`pack` (None for none or a malformed value)."""
    if not data or len(data) % 4:
        return None
    out = array("f")
    out.frombytes(data)
    if sys.byteorder != "little":
        out.byteswap()
    return out


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product (the cosine similarity of two unit vectors); 0 when lengths differ."""
    if len(a) != len(b):
        return 0.0
    return sum(map(mul, a, b))
