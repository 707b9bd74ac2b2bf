"""Summaries of older dialogue: which span to summarise next, and the rule-based summary.

The rule summary keeps what a character must not forget — names people gave, the facts users
stated about themselves (pets, family, work, places, likes, dates, plans: read by
:mod:`nekoflow.memory.facts`), promises, choices and decisions — cut to a budget, facts first;
only when a span has none of those do its first and last lines stand for it. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from nekoflow.memory.facts import Fact, extract_facts, is_question

__all__ = ["SpanLine", "llm_messages", "next_span", "rule_summary", "span_facts"]

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
    #: "user", "assistant" or "system" ("" when unknown): a character's lines state no user facts.
    role: str = ""


_NAMES = ("user.name", "user.nickname")


def span_facts(lines: Sequence[SpanLine]) -> list[tuple[SpanLine, Fact]]:
    """The facts stated in a span by whoever is not the character (or not known to be), in
    order; for the character, only the name it gives."""
    found: list[tuple[SpanLine, Fact]] = []
    for ln in lines:
        if not ln.speaker or ln.role == "system":
            continue
        for fact in extract_facts(ln.text):
            if ln.role != "assistant" or fact.slot in _NAMES:
                found.append((ln, fact))
    return found


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
    stated = span_facts(lines)
    names = [f"{ln.speaker}自称{f.value}" for ln, f in stated if f.slot in _NAMES]
    if names:
        parts.append("名字:" + ";".join(dict.fromkeys(names)))
    facts = [
        f"{f.label.replace('用户', ln.speaker, 1)}:{f.value}"
        for ln, f in stated
        if f.slot not in _NAMES
    ]
    if facts:
        parts.append("事实:" + ";".join(dict.fromkeys(facts)))
    for label, pattern in _KINDS:
        # Likes and choices are the user's, stated: not the character's ("haha, love that"),
        # not a question ("你喜欢下雨天还是晴天呀"). Promises count from both sides.
        own = label == "约定"
        found = [
            f"{ln.speaker}:{_clip(m.group(), 60)}"
            for ln in lines
            if own or ln.role != "assistant"
            for m in _SENTENCE.finditer(unicodedata.normalize("NFKC", ln.text))
            if pattern.search(m.group()) and (own or not is_question(m.group()))
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
