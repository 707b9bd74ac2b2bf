"""Memory embeddings: an OpenAI-compatible ``/embeddings`` client and the stored vector format.

Vectors are stored unit-length as little-endian float32 bytes (``pack``/``unpack``), so the
similarity of two of them is their dot product. Errors name the failure class and HTTP status
only: never the texts sent, the server's body or the key.
"""

from __future__ import annotations

import logging
import math
import os
import struct
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import lru_cache
from operator import mul
from typing import Any, Protocol

from pydantic import SecretStr

log = logging.getLogger(__name__)

__all__ = [
    "Breaker",
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


class Breaker:
    """A circuit breaker for the query embedding, one per process (shared by its threads).

    Closed: every turn asks the endpoint, within its budget. A failure or a call past the
    budget opens it: turns skip the endpoint (retrieving lexically, at no cost) for
    ``cooldown`` seconds; then ONE probe is sent in the background (half-open) — never on a
    turn's path — and its answer closes the breaker or opens it for another ``cooldown``.
    """

    def __init__(self, cooldown: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None
        self._probing = False

    @property
    def open(self) -> bool:
        """Whether turns skip the endpoint now."""
        return self._open_until is not None

    def state(self) -> str:
        """``closed``, ``open`` (skipping) or ``probe`` (open, and a probe is due: the caller
        that reads ``probe`` sends it; the others keep skipping)."""
        with self._lock:
            if self._open_until is None:
                return "closed"
            if self._probing or self._clock() < self._open_until:
                return "open"
            self._probing = True
            return "probe"

    def succeeded(self) -> None:
        """The endpoint answered: close."""
        with self._lock:
            self._open_until, self._probing = None, False

    def failed(self) -> None:
        """The endpoint failed or hung: skip it for ``cooldown`` seconds."""
        with self._lock:
            self._open_until, self._probing = self._clock() + self.cooldown, False


_pools: dict[int, ThreadPoolExecutor] = {}
_breakers: dict[tuple[int, str], Breaker] = {}
_breakers_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """This process's helper threads (made after a fork: a prefork child gets its own)."""
    pid = os.getpid()
    pool = _pools.get(pid)
    if pool is None:
        with _breakers_lock:
            pool = _pools.setdefault(
                pid, ThreadPoolExecutor(max_workers=2, thread_name_prefix="nekoflow-embed")
            )
    return pool


def breaker_for(embedder: Embedder, cooldown: float = 30.0) -> Breaker:
    """The process's breaker of ``embedder`` (one per embedder object and model)."""
    key = (id(embedder), embedder.model)
    with _breakers_lock:
        found = _breakers.get(key)
        if found is None:
            found = _breakers[key] = Breaker(cooldown)
        return found


def _settle(breaker: Breaker, future: Future[list[list[float]]]) -> None:
    """Record a finished call's outcome in the breaker."""
    if future.exception() is None:
        breaker.succeeded()
    else:
        breaker.failed()


def query_vector(
    embedder: Embedder | None, text: str, timeout: float, breaker: Breaker | None = None
) -> list[float] | None:
    """The message's vector for retrieval, or None (no embedder, no text, the endpoint failed
    or did not answer within ``timeout`` seconds, or its breaker is open: the turn then
    retrieves lexically, and the failure is logged without the text).

    ``timeout`` is a hard budget: the call runs on a helper thread and the turn waits at most
    that long whatever the HTTP client does; a hanging endpoint costs one budget, then the
    breaker (default: the process's breaker of ``embedder``) skips it until a background
    probe finds it answering again."""
    if embedder is None or not text.strip():
        return None
    breaker = breaker if breaker is not None else breaker_for(embedder)
    state = breaker.state()
    if state == "open":
        return None
    if state == "probe":  # half-open: one probe in the background, this turn goes lexical
        probe = _pool().submit(embedder.embed, ["ping"], timeout=timeout)
        probe.add_done_callback(lambda f: _settle(breaker, f))
        return None
    future = _pool().submit(embedder.embed, [text], timeout=timeout)
    try:
        vector = future.result(timeout=timeout)[0]
    except FutureTimeout:
        breaker.failed()
        log.warning("query embedding took over %.1f s, retrieving lexically", timeout)
        return None
    except EmbeddingsError as exc:
        breaker.failed()
        log.warning("query embedding failed, retrieving lexically: %s", exc)
        return None
    except Exception as exc:  # a broken embedder never fails the turn
        breaker.failed()
        log.warning("query embedding failed (%s), retrieving lexically", type(exc).__name__)
        return None
    breaker.succeeded()
    return vector


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
