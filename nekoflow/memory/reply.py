"""Assistant reply text ⇄ segments: ``【emotion】content<tts>(action)`` repeated (seed 002).

``parse_reply`` splits an LLM reply into :class:`ReplySegment` s (one stored ``Line`` each);
``format_reply`` is its inverse and also renders a stored assistant line for the memory builder.

Parsing rules (SPEC "Memory builder", plus choices written down here):

- A segment is ``[【emotion】] content [<tts>] [(action)]``, each part optional, in that order.
  A new segment starts at every ``【…】``, and at any part that cannot belong to the current
  segment any more (text after a ``<tts>`` or ``(action)``, a second ``<tts>``, …).
- Full-width ``（）`` and ``＜＞`` are accepted like ``()`` and ``<>``. Brackets nest
  (``(摇(尾)巴)`` is one action); a bracket without its partner is ordinary content.
- Stray whitespace around parts and between segments is dropped; whitespace inside a part is
  kept. Empty parts become ``None`` (content becomes ``""``).
- ``parse_reply`` never raises, and every non-whitespace character of the input ends up in some
  field of some segment, in the original order (emotion, content, tts, action per segment).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from nekoflow.errors import InputError

__all__ = ["ReplySegment", "format_line", "format_reply", "parse_reply", "visible_text"]

_EMOTION_OPEN, _EMOTION_CLOSE = "【", "】"
_TTS_OPEN, _TTS_CLOSE = "<＜", ">＞"
_ACTION_OPEN, _ACTION_CLOSE = "(（", ")）"

# Every character with a structural meaning in the reply format (for documentation and tests).
DELIMITERS = frozenset(_EMOTION_OPEN + _EMOTION_CLOSE + _TTS_OPEN + _TTS_CLOSE)
DELIMITERS |= frozenset(_ACTION_OPEN + _ACTION_CLOSE)

# Parser stages: which part of the current segment was filled last.
_EMPTY, _EMOTION, _CONTENT, _TTS, _ACTION = range(5)


class ReplySegment(BaseModel):
    """One spoken unit of an assistant reply: emotion, what is said, its TTS text and an action."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    emotion: str | None = None
    content: str = ""
    tts: str | None = None
    action: str | None = None

    @field_validator("emotion", "tts", "action")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None


def format_line(
    emotion: str | None, content: str, tts: str | None = None, action: str | None = None
) -> str:
    """Render one line as ``【emotion】content<tts>(action)``; empty parts lose their brackets."""
    out = f"【{emotion}】{content}" if emotion else content
    if tts:
        out = f"{out}<{tts}>"
    if action:
        out = f"{out}({action})"
    return out


def format_reply(segments: Iterable[ReplySegment | Mapping[str, Any]]) -> str:
    """Join segments into reply text (no separator); the inverse of :func:`parse_reply`.

    Plain mappings are validated as :class:`ReplySegment` (a bad one raises
    ``pydantic.ValidationError`` naming the field). A single segment (or mapping) is taken as a
    one-segment list; anything else that is not a list of segments is an
    :class:`~nekoflow.errors.InputError` naming ``segments``.
    """
    if isinstance(segments, ReplySegment | Mapping):
        segments = [segments]
    elif isinstance(segments, str | bytes) or not isinstance(segments, Iterable):
        raise InputError(
            f"segments must be a list of ReplySegment or mappings, got {type(segments).__name__}",
            field="segments",
        )
    parts: list[str] = []
    for seg in segments:
        s = seg if isinstance(seg, ReplySegment) else ReplySegment.model_validate(seg)
        parts.append(format_line(s.emotion, s.content, s.tts, s.action))
    return "".join(parts)


def visible_text(parts: Iterable[tuple[str | None, str | None]]) -> str:
    """A reply as users see it, from ``(content, action)`` pairs: each content followed by
    ``(action)`` when there is one; no emotion, no tts; outer whitespace stripped."""
    return "".join(f"{c or ''}({a})" if a else (c or "") for c, a in parts).strip()


def _match_brackets(text: str, opens: str, closes: str, into: dict[int, int]) -> None:
    """Record ``open index -> matching close index`` for one bracket family (nesting-aware)."""
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch in opens:
            stack.append(i)
        elif ch in closes and stack:
            into[stack.pop()] = i


class _Builder:
    """Accumulates the segment being parsed and emits finished ones."""

    def __init__(self) -> None:
        self.segments: list[ReplySegment] = []
        self.stage = _EMPTY
        self.emotion: str | None = None
        self.content: list[str] = []
        self.tts: str | None = None
        self.action: str | None = None

    def finish(self) -> None:
        if self.stage != _EMPTY:
            self.segments.append(
                ReplySegment(
                    emotion=self.emotion,
                    content="".join(self.content).strip(),
                    tts=self.tts,
                    action=self.action,
                )
            )
        self.stage = _EMPTY
        self.emotion, self.content, self.tts, self.action = None, [], None, None

    def part(self, stage: int, value: str) -> None:
        """Fill ``stage`` (emotion/tts/action); start a new segment when it would go backwards."""
        if self.stage >= stage or (stage == _EMOTION and self.stage != _EMPTY):
            self.finish()
        value = value.strip()
        if stage == _EMOTION:
            self.emotion = value or None
        elif stage == _TTS:
            self.tts = value or None
        else:
            self.action = value or None
        self.stage = stage

    def text(self, chunk: str) -> None:
        """Append content; content after a tts/action belongs to the next segment."""
        if self.stage != _CONTENT and chunk.isspace():
            return
        if self.stage > _CONTENT:
            self.finish()
        self.content.append(chunk)
        self.stage = _CONTENT


def parse_reply(text: str) -> list[ReplySegment]:
    """Split an LLM reply in the ``【emotion】content<tts>(action)`` format into segments.

    Never raises: a non-string is converted with ``str()``; malformed brackets become content.
    Whitespace-only input gives ``[]``.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    matches: dict[int, int] = {}
    _match_brackets(text, _EMOTION_OPEN, _EMOTION_CLOSE, matches)
    _match_brackets(text, _TTS_OPEN, _TTS_CLOSE, matches)
    _match_brackets(text, _ACTION_OPEN, _ACTION_CLOSE, matches)

    out = _Builder()
    i, n, plain_start = 0, len(text), 0
    while i < n:
        close = matches.get(i)
        if close is None:
            i += 1
            continue
        if plain_start < i:
            out.text(text[plain_start:i])
        ch = text[i]
        stage = _EMOTION if ch == _EMOTION_OPEN else _TTS if ch in _TTS_OPEN else _ACTION
        out.part(stage, text[i + 1 : close])
        i = plain_start = close + 1
    if plain_start < n:
        out.text(text[plain_start:])
    out.finish()
    # Drop segments that carry nothing at all (e.g. "【】" or "()" alone).
    return [s for s in out.segments if s.content or s.emotion or s.tts or s.action]
