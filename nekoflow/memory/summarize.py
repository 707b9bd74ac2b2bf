"""Summaries of older dialogue: which span to summarise next, and the rule-based summary.

The rule summary keeps what a character must not forget — names people gave, promises,
choices and decisions, likes and dislikes — in the speakers' own words, cut to a budget; when a
span has none of those, its first and last lines stand for it. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from nekoflow.memory.consolidate import facts_of

__all__ = ["SpanLine", "llm_messages", "next_span", "rule_summary"]

_SENTENCE = re.compile(r"[^。!?!?\n;;.]+[。!?!?;;.]?")
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "约定",
        re.compile(
            r"答应|约定|约好|保证|承诺|发誓|一定会|说好|不见不散|"
            r"\bpromise|\bswear\b|\bi will\b|\bi'll\b|\bwe will\b|\bwe'll\b",
            re.IGNORECASE,
        ),
    ),
    (
        "选择",
        re.compile(r"选择|决定|选了|要不要|宁愿|\bchoose\b|\bchose\b|\bdecide", re.IGNORECASE),
    ),
    (
        "喜好",
        re.compile(
            r"喜欢|讨厌|最爱|害怕|不吃|过敏|\blove\b|\bhate\b|\bfavou?rite\b|\ballergic\b", re.I
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class SpanLine:
    """One dialogue line of a span: its id, who spoke and what was said (content + action)."""

    id: int
    speaker: str
    text: str


def next_span(
    path_ids: Sequence[int], keep_from: int, summarised: set[int], span: int
) -> tuple[int, int] | None:
    """(first, last) positions on the path of the next span to summarise: ``span`` lines right
    after the last summarised line, all of them before position ``keep_from`` (the window)."""
    start = 0
    for i in range(min(keep_from, len(path_ids)) - 1, -1, -1):
        if path_ids[i] in summarised:
            start = i + 1
            break
    if keep_from - start < span:
        return None
    return start, start + span - 1


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def rule_summary(lines: Sequence[SpanLine], budget_chars: int = 300) -> str:
    """A summary of ``lines`` keeping names, promises, choices and likes, within the budget."""
    if not lines:
        return ""
    speakers = list(dict.fromkeys(ln.speaker for ln in lines if ln.speaker))
    parts: list[str] = []
    names = []
    for ln in lines:
        f = facts_of("", ln.text) if ln.speaker else None
        if f is not None and f.slot == "name" and f.value:
            names.append(f"{ln.speaker}自称{f.value}")
    if names:
        parts.append("名字:" + ";".join(dict.fromkeys(names)))
    for label, pattern in _KINDS:
        found = [
            f"{ln.speaker}:{_clip(m.group(), 60)}"
            for ln in lines
            for m in _SENTENCE.finditer(unicodedata.normalize("NFKC", ln.text))
            if pattern.search(m.group())
        ]
        if found:
            parts.append(f"{label}:" + ";".join(dict.fromkeys(found)))
    if not parts:
        first, last = lines[0], lines[-1]
        parts.append(f"{first.speaker}:{_clip(first.text, 50)}")
        if last is not first:
            parts.append(f"……{last.speaker}:{_clip(last.text, 50)}")
    head = ("、".join(speakers[:4]) + "的对话。") if speakers else ""
    return _clip(head + " ".join(parts), budget_chars)


def llm_messages(lines: Sequence[SpanLine], budget_chars: int = 300) -> list[dict[str, str]]:
    """The chat messages asking a model for the summary of ``lines``."""
    transcript = "\n".join(f"{ln.speaker}:{_clip(ln.text, 400)}" for ln in lines)
    system = (
        f"把下面这段角色扮演对话总结成不超过{budget_chars}字的一段话,作为角色的长期记忆。"
        "必须保留:人物的名字和称呼、任何承诺或约定(谁答应了谁什么、何时)、剧情中的选择和决定、"
        "喜好和禁忌。只写发生过的事实,不要评论,不要编造。"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": transcript}]
