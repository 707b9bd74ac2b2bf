"""Token estimates for budgets: a built-in estimator right for CJK and Latin text, or a plug-in.

No vocabulary is downloaded. The built-in :class:`HeuristicTokenizer` counts what BPE tokenizers
of current chat models (cl100k / o200k families) produce on average:

* each CJK ideograph, kana or hangul syllable: 1 token (common Chinese characters are one token
  each in o200k and mostly one in cl100k; rare ones take 2, which the estimate under-counts);
* a run of ASCII letters/digits (a word): 1 token per started 4 characters (``"the"`` = 1,
  ``"forest"`` = 2, ``"Eldoria"`` = 2);
* any other non-space character (punctuation, emoji, accented Latin…): 1 token each;
* whitespace: free (it merges into the next word's token).

Operators with a real tokenizer plug it in with :func:`set_tokenizer` (anything with
``count(text) -> int``, e.g. a wrapper around ``tiktoken``); :func:`estimate_tokens` then uses it.
Pure module: no I/O.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Protocol, runtime_checkable

__all__ = [
    "HeuristicTokenizer",
    "Tokenizer",
    "estimate_tokens",
    "get_tokenizer",
    "set_tokenizer",
]

# CJK unified ideographs (+ext A, compatibility), kana, hangul, CJK symbols & full-width forms.
_CJK = (
    "\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
)
_TOKEN_RE = re.compile(rf"[A-Za-z0-9]+|[{_CJK}]|\S")
_WORD_RE = re.compile(r"[A-Za-z0-9]{2,}")
_SPACE_RE = re.compile(r"[^\S\u3000]+")  # whitespace; U+3000 counts as a CJK symbol


@runtime_checkable
class Tokenizer(Protocol):
    """Something that counts the tokens of a text (the model's tokenizer, or an estimate)."""

    def count(self, text: str) -> int:
        """Number of tokens ``text`` takes."""
        ...


class HeuristicTokenizer:
    """The built-in estimate: CJK char = 1, ASCII word = ceil(len/4), other non-space = 1."""

    def count(self, text: str) -> int:
        """Estimated number of tokens of ``text``."""
        return _heuristic_count(text) if text else 0


@lru_cache(maxsize=8192)
def _heuristic_count(text: str) -> int:
    """The built-in estimate of ``text``, remembered: every turn sizes its history window again,
    the same few hundred lines of the conversation as the turn before."""
    # Every non-space character is a token, except that a run of n > 1 ASCII letters or
    # digits is ceil(n / 4): counted in C (split/join, findall), not per regex match.
    chars = len(text) - sum(map(len, _SPACE_RE.findall(text)))
    words = _WORD_RE.findall(text)
    return chars - sum(map(len, words)) + sum((len(w) + 3) // 4 for w in words)


_lock = threading.Lock()
_tokenizer: Tokenizer = HeuristicTokenizer()


def set_tokenizer(tokenizer: Tokenizer | None) -> None:
    """Use ``tokenizer`` for :func:`estimate_tokens` process-wide (None: the built-in estimate)."""
    global _tokenizer
    if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must have count(text) -> int, got {type(tokenizer).__name__}")
    with _lock:
        _tokenizer = tokenizer if tokenizer is not None else HeuristicTokenizer()


def get_tokenizer() -> Tokenizer:
    """The tokenizer :func:`estimate_tokens` uses now."""
    return _tokenizer


def estimate_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    """Tokens ``text`` takes, by ``tokenizer`` or the process-wide one (built-in estimate)."""
    return (tokenizer or _tokenizer).count(text or "")
