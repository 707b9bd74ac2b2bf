"""Reply rendering for channels: take only the reply text and split long text (and an optional
Markdown-to-plain-text helper, :func:`strip_markdown`, that rendering does not apply by itself).

``split_text`` cuts text longer than a channel's ``max_text_length`` at the last paragraph break
that fits, else the last line break, else the last sentence end (Chinese 。！？… anywhere; Latin
.!? only before whitespace, so 3.14 and example.com stay whole), else the last whitespace, else
hard at the limit. What is dropped — and nothing else — is whitespace: the whitespace at both
ends of the text and the whitespace run at each cut. So every chunk is non-empty, has no
leading/trailing whitespace, is at most ``limit`` characters long, and the text equals
``ws0 + chunk0 + ws1 + chunk1 + … + wsN`` where every ``ws`` is whitespace-only (maybe empty).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nekoflow.channels.context import ChannelRenderPolicy
from nekoflow.errors import InputError

# A sentence end: CJK terminators anywhere, Latin ones only when whitespace (or the end) follows;
# closing quotes/brackets right after the terminator stay with the sentence.
_CLOSERS = "”’\"'」』）)】]"
_SENTENCE_END = re.compile(
    rf"(?:[。！？…]+[{re.escape(_CLOSERS)}]*|[.!?]+[{re.escape(_CLOSERS)}]*(?=\s|\Z))"
)


def _last_paragraph_break(text: str, start: int, window_end: int) -> int | None:
    """Last ``\\n`` in (start, window_end] whose whitespace run holds another newline."""
    i = text.rfind("\n", start + 1, window_end + 1)
    while i != -1:
        j = i - 1
        while j > start and text[j] != "\n" and text[j].isspace():
            j -= 1
        if j > start and text[j] == "\n":
            return i
        k = i + 1
        while k < len(text) and text[k] != "\n" and text[k].isspace():
            k += 1
        if k < len(text) and text[k] == "\n":
            return i
        i = text.rfind("\n", start + 1, i)
    return None


def _last_line_break(text: str, start: int, window_end: int) -> int | None:
    i = text.rfind("\n", start + 1, window_end + 1)
    return i if i != -1 else None


def _last_sentence_end(text: str, start: int, window_end: int) -> int | None:
    best: int | None = None
    endpos = min(len(text), window_end + 1)
    for match in _SENTENCE_END.finditer(text, start, endpos):
        end = match.end()
        if start < end <= window_end:
            best = end
    return best


def _last_whitespace(text: str, start: int, window_end: int) -> int | None:
    for i in range(min(window_end, len(text) - 1), start, -1):
        if text[i].isspace():
            return i
    return None


_FINDERS = (_last_paragraph_break, _last_line_break, _last_sentence_end, _last_whitespace)


def split_text(text: str, limit: int | None) -> list[str]:
    """Split ``text`` into chunks of at most ``limit`` characters (see the module docstring).

    ``limit`` None means no limit: the stripped text as one chunk. Whitespace-only text gives [].
    """
    if limit is not None and limit < 1:
        raise InputError(f"max_text_length must be at least 1, got {limit}", field="limit")
    stripped = text.strip()
    if not stripped:
        return []
    if limit is None or len(stripped) <= limit:
        return [stripped]
    chunks: list[str] = []
    end = len(text.rstrip())
    start = 0
    while True:
        while start < end and text[start].isspace():
            start += 1
        if end - start <= limit:
            chunks.append(text[start:end])
            return chunks
        window_end = start + limit
        cut = window_end
        for finder in _FINDERS:
            found = finder(text, start, window_end)
            if found is not None:
                cut = found
                break
        chunks.append(text[start:cut].rstrip())
        start = cut


# --- Markdown -----------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]+|$)(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^[ \t]{0,3}(?:=+|-+)[ \t]*$")
_RULE = re.compile(r"^[ \t]{0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(\[[ xX]\][ \t]+)?")
_QUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_STAR_EM = re.compile(r"(?<![*\\0-9A-Za-z])\*(?=[^\s*])(.+?)(?<=[^\s*\\])\*(?!\*)")
_UNDER_EM = re.compile(r"(?<![\w\\])_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~>])")


def _link_text(label: str, url: str) -> str:
    label = label.strip()
    return url if not label or label == url else f"{label} ({url})"


def _inline(text: str) -> str:
    """Strip inline Markdown from text that contains no code spans."""
    text = _IMAGE.sub(lambda m: _link_text(m.group(1), m.group(2)), text)
    text = _LINK.sub(lambda m: _link_text(m.group(1), m.group(2)), text)
    text = _AUTOLINK.sub(r"\1", text)
    for _ in range(3):  # nested emphasis such as ***x*** or **_x_**
        text = _BOLD.sub(r"\2", text)
        text = _STRIKE.sub(r"\1", text)
        text = _STAR_EM.sub(r"\1", text)
        text = _UNDER_EM.sub(r"\1", text)
    return _ESCAPE.sub(r"\1", text)


def _strip_inline(line: str) -> str:
    parts = _INLINE_CODE.split(line)
    # re.split with two groups yields [text, ticks, code, text, ticks, code, ..., text]
    out: list[str] = []
    for index, part in enumerate(parts):
        kind = index % 3
        if kind == 0:
            out.append(_inline(part))
        elif kind == 2:
            out.append(part)
    return "".join(out)


def _strip_block_line(line: str) -> str:
    if _RULE.match(line) or _TABLE_RULE.match(line):
        return ""
    while _QUOTE.match(line):
        line = _QUOTE.sub("", line, count=1)
    heading = _HEADING.match(line)
    if heading:
        line = heading.group(1)
    bullet = _BULLET.match(line)
    if bullet:
        box = bullet.group(2) or ""
        mark = "☑ " if box.strip().lower() == "[x]" else ("☐ " if box else "")
        line = f"{bullet.group(1)}• {mark}{line[bullet.end() :]}"
    return _strip_inline(line)


def strip_markdown(text: str) -> str:
    """Turn Markdown into readable plain text for channels that show it literally.

    Headings, emphasis, strike-through, inline code and code fences lose their markers (code is
    kept verbatim); links become ``label (url)``, images ``alt (url)``; bullet items become
    ``• item``, numbered items stay as they are; quote markers, horizontal rules and table
    separator rows are removed. Text that is not Markdown passes through unchanged.
    """
    lines = text.split("\n")
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        opener = _FENCE.match(line)
        if fence is None:
            if opener:
                fence = opener.group(1)
                continue
            if _SETEXT.match(line) and out and out[-1].strip() and not _RULE.match(line):
                continue  # setext underline of the heading text just emitted
            out.append(_strip_block_line(line))
        else:
            closing = (
                opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence)
            )
            if closing and not line.strip().strip(fence[0]):
                fence = None
                continue
            out.append(line)
    return "\n".join(out)


# --- rendering ----------------------------------------------------------------------------


def result_text(result: Any) -> str:
    """The reply text of a turn result: ``result.text``, ``result["text"]`` or the str itself.

    Nothing else of ``result`` (prompt_text, messages, usage…) is ever read. A result without
    text gives ""; a text that is not a str is an :class:`InputError` naming ``text``.
    """
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    text = result.get("text") if isinstance(result, Mapping) else getattr(result, "text", None)
    if text is None:
        return ""
    if not isinstance(text, str):
        raise InputError(f"result text must be a str, got {type(text).__name__}", field="text")
    return text


def render_text(result: Any, policy: ChannelRenderPolicy) -> list[dict[str, Any]]:
    """Render a turn result for a channel: ``[{"type": "text", "content": chunk}, …]``.

    The text is split at ``policy.max_text_length`` with :func:`split_text` and otherwise sent
    as written: no text is lost (SPEC), so Markdown-looking characters stay even where the
    channel shows them literally — role-play replies use ``*动作*`` and ``~~`` as plain text, and
    a reply such as ``#`` must not vanish. Callers that want plain text for a channel without
    Markdown apply :func:`strip_markdown` themselves. Empty text gives [].
    """
    text = result_text(result)
    if not text.strip():
        return []
    return [
        {"type": "text", "content": chunk} for chunk in split_text(text, policy.max_text_length)
    ]
