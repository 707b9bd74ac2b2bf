"""AI-generated world-book entries: the prompt for the chat model and the parsing of its reply.

Pure (no HTTP, SQL or network): the router calls the chat model in between. The model is asked
for ``{"entries": [...]}`` in JSON mode; the reply is read leniently (a bare list, a Markdown code
fence, unknown keys dropped, a keywords string split on commas) and strictly validated: every
entry must be a valid :class:`~nekoflow.worldbook.models.WorldBookEntry` with storable values,
some content, and a way to fire (keywords, scene triggers or ``always_on``). Ids and timestamps
from the model are ignored — the store assigns them on save.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from nekoflow.api.schemas import EntryIn
from nekoflow.worldbook.models import ENTRY_TYPE_PRIORITY, WorldBook, WorldBookEntry

_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)\s*```", re.IGNORECASE)
_KEYWORD_SPLIT = re.compile(r"[,,、;;\n]+")
_IGNORED_KEYS = frozenset({"id", "created_at", "updated_at"})
_ENTRY_KEYS = frozenset(WorldBookEntry.model_fields) - _IGNORED_KEYS
MAX_EXISTING_NAMES = 50

SYSTEM_PROMPT = """你是一个世界观设定专家,负责为角色扮演聊天机器人的世界书生成条目。
世界书条目在聊天中命中关键词时,其内容会被注入到 AI 的提示词中,帮助 AI 理解世界观。

每个条目是一个 JSON 对象,字段如下:
- name: 条目名称(简短、有辨识度)
- keywords: 关键词列表(3-5 个,用户聊天中可能出现的词语,不要太生僻)
- content: 注入内容(具体、有信息量,不超过 300 字)
- match_mode: "any"(任一关键词命中即触发)或 "all"(全部命中才触发)
- priority: 优先级,0-100 的整数,越重要越高
- entry_type: 条目类型,取值之一:{types}
- trigger_sources: 触发源列表,取值来自 "user"、"assistant_recent"、"history"、"scene_state"
- tags: 标签列表(可选)

只返回一个 JSON 对象,不要任何额外文字,格式:
{{"entries": [{{"name": "...", "keywords": ["..."], "content": "...", "match_mode": "any",
"priority": 50, "entry_type": "lore", "trigger_sources": ["user"], "tags": []}}]}}"""


def build_generation_messages(book: WorldBook, *, topic: str = "", count: int = 5) -> list[dict]:
    """The chat messages asking for ``count`` new entries for ``book`` (about ``topic``)."""
    types = "、".join(f'"{t}"' for t in ENTRY_TYPE_PRIORITY)
    lines = [f"请为世界书「{book.name}」生成 {count} 个世界观条目。"]
    if book.description:
        lines.append(f"世界书描述:{book.description}")
    if book.character_ids:
        lines.append(f"关联角色:{'、'.join(book.character_ids)}(生成的设定要与角色背景契合)")
    if topic.strip():
        lines.append(f"主题方向:{topic.strip()}")
    existing = [e.name for e in book.entries if e.name][:MAX_EXISTING_NAMES]
    if existing:
        lines.append(f"已有条目(不要重复):{'、'.join(existing)}")
    if not book.description and not book.character_ids and not topic.strip():
        lines.append("(未绑定角色也未指定主题,请根据世界书名称自由发挥)")
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(types=types)},
        {"role": "user", "content": "\n".join(lines)},
    ]


class GenerationReplyError(ValueError):
    """The model's reply holds no entries at all (not JSON, or no ``entries`` list)."""


@dataclass
class GeneratedEntries:
    """The valid entries of a reply, and one line per rejected item saying why."""

    entries: list[WorldBookEntry] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def _load_json(text: str) -> Any:
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1])
            except (ValueError, RecursionError):
                pass
    preview = text.strip()[:120]
    raise GenerationReplyError(f"model returned no entries: reply is not JSON ({preview!r})")


def _entry_items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, Mapping):
        for key in ("entries", "world_book_entries", "items"):
            items = data.get(key)
            if isinstance(items, list):
                return items
            if isinstance(items, Mapping):  # world_books.json style: {id: entry}
                return list(items.values())
    keys = ", ".join(map(str, data)) if isinstance(data, Mapping) else type(data).__name__
    raise GenerationReplyError(
        f"model returned no entries: no 'entries' list in the reply ({keys})"
    )


def _clean(item: Mapping[str, Any]) -> dict[str, Any]:
    data = {str(k): v for k, v in item.items() if str(k) in _ENTRY_KEYS}
    for key in ("keywords", "tags"):
        if isinstance(data.get(key), str):
            data[key] = [k.strip() for k in _KEYWORD_SPLIT.split(data[key]) if k.strip()]
    if isinstance(data.get("trigger_sources"), str):
        data["trigger_sources"] = [data["trigger_sources"]]
    return data


def _problem(entry: WorldBookEntry) -> str | None:
    if not entry.content.strip():
        return "content is empty"
    fires = any(k.strip() for k in entry.keywords) or entry.state_triggers or entry.always_on
    if not fires:
        return "no keywords, state_triggers or always_on: it could never fire"
    return None


def parse_generated_entries(text: str, *, limit: int | None = None) -> GeneratedEntries:
    """Read the entries out of a model reply; invalid items are listed in ``rejected``.

    Raises :class:`GenerationReplyError` when the reply has no entry list at all.
    """
    items = _entry_items(_load_json(text))
    out = GeneratedEntries()
    for n, item in enumerate(items):
        label = f"entries[{n}]"
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and item["name"]:
            label += f" ({item['name']!r})"
        if not isinstance(item, Mapping):
            out.rejected.append(f"{label}: not an object")
            continue
        try:
            checked = EntryIn.model_validate(_clean(item))
        except ValidationError as exc:
            reasons = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'entry'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            out.rejected.append(f"{label}: {reasons}")
            continue
        entry = WorldBookEntry.model_validate(checked.model_dump())
        problem = _problem(entry)
        if problem:
            out.rejected.append(f"{label}: {problem}")
            continue
        if limit is not None and len(out.entries) >= limit:
            out.rejected.append(f"{label}: more entries than the {limit} asked for")
            continue
        out.entries.append(entry)
    return out
