"""Export a world book back to SillyTavern JSON: World Info, or a card's ``character_book``.

Lossless for imported books: each entry starts from the raw entry its import kept
(``rules.source``) plus its content (after the CCv3 decorator lines the import cut from its head;
a decorator whose meaning was edited is dropped and its fields written as values), and only the
fields whose meaning changed in nekoflow since (an edit through the API, CLI or store) are
rewritten, in the entry's own style (World Info names, or a card entry's top-level /
``extensions`` names). A file's top-level fields come back from
``book.rules.source``. Entries and books created in nekoflow are written with every World Info
field. ``export(import(file)) == file`` for every lorebook in the corpus (tested).
"""

from __future__ import annotations

from typing import Any

from nekoflow.worldbook.decorators import DECORATORS_KEY
from nekoflow.worldbook.models import WorldBook, WorldBookEntry
from nekoflow.worldbook.rules import POSITIONS, ROLES, SELECTIVE_LOGICS
from nekoflow.worldbook.st_fields import BY_NAME, FIELDS
from nekoflow.worldbook.st_import import EntryMapper


def st_values(entry: WorldBookEntry) -> dict[str, Any]:
    """The SillyTavern meaning of ``entry``, by World Info field name."""
    r = entry.rules
    return {
        "key": list(entry.keywords),
        "keysecondary": list(r.secondary_keywords),
        "comment": entry.name,
        "content": entry.content,
        "constant": entry.always_on,
        "selective": True,
        "selectiveLogic": SELECTIVE_LOGICS.index(r.selective_logic),
        "order": entry.priority,
        "position": POSITIONS.index(r.position),
        "disable": not entry.enabled,
        "excludeRecursion": r.exclude_recursion,
        "preventRecursion": r.prevent_recursion,
        "delayUntilRecursion": r.delay_until_recursion or False,
        "probability": r.probability,
        "useProbability": True,
        "depth": r.depth,
        "role": ROLES.index(r.role),
        "group": r.group,
        "groupOverride": r.group_override,
        "groupWeight": r.group_weight,
        "useGroupScoring": r.group_scoring,
        "scanDepth": r.scan_depth,
        "caseSensitive": entry.case_sensitive or None,
        "matchWholeWords": r.match_whole_words,
        "sticky": r.sticky or None,
        "cooldown": entry.cooldown_turns or None,
        "delay": r.delay or None,
        "ignoreBudget": r.ignore_budget,
    }


def _as_imported(
    entry: WorldBookEntry, source: dict[str, Any], card_style: bool
) -> tuple[WorldBookEntry, EntryMapper]:
    """``entry`` as its kept raw entry imports now (its decorators put back), and the mapper."""
    raw = {k: v for k, v in source.items() if k != DECORATORS_KEY}
    raw["content"] = str(source.get(DECORATORS_KEY) or "") + entry.content
    mapper = EntryMapper("export", raw, [], card_style=card_style)
    again = mapper.entry(entry.id)
    return (again if again is not None else entry), mapper


def _set(out: dict[str, Any], name: str, value: Any, card_style: bool) -> None:
    """Write one changed field where the entry's style keeps it."""
    spec = BY_NAME[name]
    if not card_style:
        out[name] = value
        _set_duplicates(out, name, value)
        return
    if name == "disable":
        out["enabled"] = not value
    elif name == "comment" and "name" in out:
        out["name"] = value
    elif name == "order":
        out["insertion_order"] = value
        if "priority" in out:
            out["priority"] = value
    elif spec.card:
        out[spec.card] = value
    elif spec.ext:
        ext = dict(out.get("extensions") or {})
        ext[spec.ext] = value
        out["extensions"] = ext
        if name == "position" and isinstance(out.get("position"), str):
            out["position"] = "before_char" if value == 0 else "after_char"


def _set_duplicates(out: dict[str, Any], name: str, value: Any) -> None:
    """Keep the card-style duplicates a converted World Info entry carries in step."""
    spec = BY_NAME[name]
    if name == "disable":
        if "enabled" in out:
            out["enabled"] = not value
        return
    if name == "order":
        for dup in ("insertion_order", "priority"):
            if dup in out:
                out[dup] = value
        return
    if name == "comment" and "name" in out:
        out["name"] = value
    if spec.card and spec.card != name and spec.card in out:
        out[spec.card] = value
    ext = out.get("extensions")
    if spec.ext and isinstance(ext, dict) and spec.ext in ext:
        out["extensions"] = {**ext, spec.ext: value}


def export_entry(entry: WorldBookEntry, *, card_style: bool, uid: int) -> dict[str, Any]:
    """One entry as SillyTavern JSON (World Info or card style)."""
    source = entry.rules.source
    if not source:
        values = st_values(entry)
        out = {"uid": uid, **values, "displayIndex": uid}
        if card_style:
            fresh: dict[str, Any] = {"id": uid}
            for name, value in values.items():
                _set(fresh, name, value, True)
            return fresh
        return out
    now = st_values(entry)
    again, mapper = _as_imported(entry, source, card_style)
    before = st_values(again)
    changed = {
        spec.name
        for spec in FIELDS
        if spec.kind == "mapped" and spec.name in now and now[spec.name] != before[spec.name]
    }
    # A CCv3 decorator whose meaning was edited goes; what it set is written as values.
    prefix, rewrite = mapper.decorators.without(changed)
    out = {k: v for k, v in source.items() if k != DECORATORS_KEY}
    out["content"] = prefix + entry.content
    for spec in FIELDS:
        if spec.name in changed or spec.name in rewrite:
            _set(out, spec.name, now[spec.name], card_style)
            if spec.name == "probability":  # an edited probability is meant to apply
                _set(out, "useProbability", True, card_style)
    return out


def _uid(entry: WorldBookEntry, n: int) -> int:
    for key in ("uid", "id"):
        value = entry.rules.source.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return n


def export_book(book: WorldBook) -> dict[str, Any]:
    """``book`` as SillyTavern JSON, in the shape it was imported from (World Info by default):
    ``{…, "entries": {uid: entry}}``, or a card's ``{…, "entries": [entry, …]}``."""
    card_style = book.rules.source_format == "character_book"
    top = dict(book.rules.source)
    if not book.rules.source_format:  # made in nekoflow, not imported
        top = {"name": book.name, "description": book.description}
    rules = book.rules
    for field in ("scan_depth", "token_budget"):
        value = getattr(rules, field)
        if value is not None or field in top:
            top[field] = value
    if "recursive_scanning" in top or not rules.recursive_scanning:
        top["recursive_scanning"] = rules.recursive_scanning
    entries = [
        export_entry(e, card_style=card_style, uid=_uid(e, n)) for n, e in enumerate(book.entries)
    ]
    if card_style:
        return {**top, "entries": entries}
    keys = [_entry_key(book, e, n) for n, e in enumerate(book.entries)]
    return {**top, "entries": dict(zip(keys, entries, strict=True))}


def _entry_key(book: WorldBook, entry: WorldBookEntry, n: int) -> str:
    prefix = f"{book.id}-"
    if entry.id.startswith(prefix):
        return entry.id[len(prefix) :]
    return str(_uid(entry, n))
