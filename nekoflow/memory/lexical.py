"""Lexical relevance for Chinese and English without a model: index terms and Okapi BM25.

Terms are lower-cased ASCII words (a few English stop words dropped, a final ``s`` cut: ``calls``
meets ``call``) and CJK characters plus character bigrams, so ``我最喜欢草莓蛋糕`` matches
``草莓`` and ``蛋糕`` (bigrams weigh in) and ``雷阵雨`` still meets ``打雷`` (characters). A memory
stores its terms as one space-separated string (the database's full-text index reads it), led
by a token naming its scope so the full-text prefilter of one scope never wades through
another's. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from nekoflow.memory.concepts import concept_terms

__all__ = [
    "CorpusStats",
    "bm25",
    "bm25_scorer",
    "doc_terms",
    "index_text",
    "query_terms",
    "scope_token",
    "terms",
]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN = re.compile(rf"[a-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
_STOP = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "for", "from", "had", "has"}
    | {"have", "he", "her", "his", "i", "if", "in", "is", "it", "its", "me", "my", "of", "on"}
    | {"or", "our", "she", "so", "that", "the", "their", "them", "then", "there", "they", "this"}
    | {"to", "was", "we", "were", "what", "when", "which", "who", "will", "with", "you", "your"}
)
K1 = 1.2
B = 0.75


def _stem(word: str) -> str:
    """A plural or third-person ``s`` off (``calls`` → ``call``; ``glass`` stays)."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order, repeats kept (for term frequencies)."""
    if not text:
        return []
    norm = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for m in _TOKEN.finditer(norm):
        tok = m.group()
        if _CJK_RUN.match(tok):
            out.extend(tok)  # characters: 雷阵雨 still meets 打雷
            out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
        elif tok not in _STOP and (len(tok) > 1 or tok.isdigit()):
            out.append(_stem(tok[:40]))
    return out


def scope_token(role_id: int, scope_id: str) -> str:
    """The term naming a (character, scope): ``zq`` + 12 hex digits of a hash."""
    digest = hashlib.sha1(f"{role_id}\x00{scope_id}".encode()).hexdigest()[:12]
    return f"zq{digest}"


def index_text(role_id: int, scope_id: str, title: str, content: str) -> str:
    """The stored ``terms`` of a memory: its scope token, then the terms of title and content,
    then the concepts they name (:func:`nekoflow.memory.concepts.concept_terms`)."""
    return " ".join(
        [
            scope_token(role_id, scope_id),
            *terms(title),
            *terms(content),
            *concept_terms(f"{title}\n{content}"),
        ]
    )


def doc_terms(stored: str | None) -> list[str]:
    """A memory's terms from its stored ``terms`` string (the scope token left out)."""
    if not stored:
        return []
    parts = stored.split()
    return parts[1:] if parts and parts[0].startswith("zq") else parts


CONCEPT_WEIGHT = 2.0
"""A concept's weight in a query (a word's is 1.0): "哪个城市长大的" asks about a hometown more
than about any one of its characters."""


def query_terms(message: str, context: Iterable[str] = (), context_weight: float = 0.5) -> dict:
    """Query term weights: the message's terms (and the concepts it names) 1.0 each, recent
    context's ``context_weight``."""
    weights: dict[str, float] = {}
    for text in context:
        for t in {*terms(text), *concept_terms(text)}:
            weights[t] = max(weights.get(t, 0.0), context_weight)
    for t in terms(message):
        weights[t] = 1.0
    for t in concept_terms(message):  # a concept the message names outweighs a single word
        weights[t] = CONCEPT_WEIGHT
    return weights


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What BM25's idf and length normalisation need: documents, mean length, document freqs."""

    docs: int
    avg_len: float
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        """Okapi idf (never negative): ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
        df = min(self.df.get(term, 0), self.docs)
        return math.log(1.0 + (self.docs - df + 0.5) / (df + 0.5))


def bm25(query: Mapping[str, float], doc: Iterable[str], stats: CorpusStats) -> float:
    """The BM25 score of a document (its terms) for weighted query terms."""
    return bm25_scorer(query, stats)(doc)


def bm25_scorer(query: Mapping[str, float], stats: CorpusStats) -> Callable[[Iterable[str]], float]:
    """BM25 for one query over many documents: each term's weight × idf computed once."""
    weighted = {t: w * stats.idf(t) for t, w in query.items()}
    avg = max(stats.avg_len, 1.0)

    def score(doc: Iterable[str]) -> float:
        words = list(doc)
        if not words or not weighted:
            return 0.0
        tf = Counter(w for w in words if w in weighted)
        if not tf:
            return 0.0
        norm = K1 * (1 - B + B * len(words) / avg)
        return sum(weighted[t] * n * (K1 + 1) / (n + norm) for t, n in tf.items())

    return score
