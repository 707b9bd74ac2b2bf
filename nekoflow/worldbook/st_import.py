"""Map SillyTavern lorebook entries (World Info or character-card style) onto nekoflow entries.

Each field of an entry is mapped (keys, secondary keys and selective logic, order, position,
depth, role, recursion flags, probability, groups, scan depth, case and whole-word matching,
sticky/cooldown/delay, ignore budget), kept for export (ids, display index, memo flags), or kept
and reported because nekoflow cannot apply it (vector matching, matching the persona or character
description, generation-type triggers, character filters) — nothing is dropped silently. The raw
entry (minus its content) is kept in ``rules.source`` so export reproduces it.

World Info entries that also carry card-style duplicates (chub.ai conversions: ``keys``,
``secondary_keys``, ``insertion_order``, ``enabled``, ``extensions.*``…) are read by their World
Info names; a duplicate that disagrees is reported. Card-style entries read ``extensions`` first,
as SillyTavern does, and a field they leave out gets SillyTavern's card default
(``convertCharacterBook``: not selective, after the character, disabled without ``enabled``).
A card entry's top-level ``position`` other than ``"before_char"``/``"after_char"`` is after the
character (reported), as ``convertCharacterBook`` reads it; ``extensions.position`` still wins.
Keys written ``/pattern/flags`` are regular expressions (SillyTavern always reads them so;
``use_regex`` changes nothing there either: reported when a key would read differently). CCv3
decorators at the head of the content are cut, applied or reported
(:mod:`nekoflow.worldbook.decorators`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from nekoflow.worldbook.decorators import DECORATORS_KEY, Decorators, parse_decorators
from nekoflow.worldbook.keys import regex_key_problem, split_keys, split_regex_key
from nekoflow.worldbook.models import WorldBookEntry
from nekoflow.worldbook.rules import POSITIONS, ROLES, SELECTIVE_LOGICS
from nekoflow.worldbook.st_fields import (
    BY_NAME,
    CARD_ONLY,
    FIELDS,
    KOBOLD_KEPT,
    default_of,
    is_unset,
)

ST_TRIGGER_SOURCES = ["user", "history"]
_LOGIC_LABELS = ("AND ANY", "NOT ALL", "NOT ANY", "AND ALL")
_KNOWN_TOP = {f.name for f in FIELDS} | {f.card for f in FIELDS if f.card} | CARD_ONLY | KOBOLD_KEPT
_KNOWN_EXT = {f.ext for f in FIELDS if f.ext}
#: A key containing one of these would match differently read as a regular expression.
_REGEX_SYNTAX = re.compile(r"[.^$*+?()\[\]{}|\\]")


class EntryMapper:
    """Maps one SillyTavern entry, collecting problems (reject the file) and notes (report)."""

    def __init__(
        self, label: str, raw: Mapping[str, Any], problems: list[str], *, card_style: bool
    ) -> None:
        self.label = label
        self.raw = raw
        self.problems = problems
        self.card_style = card_style
        self.notes: list[tuple[str, str]] = []  # (what, label)
        ext = raw.get("extensions")
        if ext is not None and not isinstance(ext, Mapping):
            self.bad("extensions must be an object")
            ext = None
        self.ext: Mapping[str, Any] = ext or {}
        self._keys: dict[str, list[str]] = {}
        self.decorators = Decorators()

    def bad(self, msg: str) -> None:
        """A problem that rejects the file."""
        self.problems.append(f"{self.label}: {msg}")

    def note(self, what: str) -> None:
        """Something the import report tells (kept but unused, ignored duplicate…)."""
        self.notes.append((what, self.label))

    # ------------------------------------------------------------------ lookup

    def _places(self, name: str) -> list[tuple[str, Any]]:
        spec = BY_NAME[name]
        found: list[tuple[str, Any]] = []
        order = ("ext", "card", "wi") if self.card_style else ("wi", "card", "ext")
        for where in order:
            if where == "wi" and name in self.raw:
                found.append((name, self.raw[name]))
            elif where == "card" and spec.card and spec.card != name and spec.card in self.raw:
                found.append((spec.card, self.raw[spec.card]))
            elif where == "ext" and spec.ext and spec.ext in self.ext:
                found.append((f"extensions.{spec.ext}", self.ext[spec.ext]))
        return found

    def given(self, name: str) -> bool:
        """True when the entry carries the field (under any of its names), not null."""
        return any(v is not None for _, v in self._places(name))

    def get(self, name: str) -> tuple[str, Any]:
        """(where, value) of a field by its World Info name; a disagreeing duplicate is noted."""
        places = [(w, v) for w, v in self._places(name) if v is not None]
        if not places:
            return name, default_of(BY_NAME[name], card_style=self.card_style)
        where, value = places[0]
        for other, other_value in places[1:]:
            if isinstance(other_value, str) != isinstance(value, str) and name == "position":
                continue  # a card's "before_char"/"after_char" is checked in _position
            if other_value != value:
                self.note(f"{other}={other_value!r} disagrees with {where}={value!r}: {where} used")
        return where, value

    # ------------------------------------------------------------------ typed values

    def keys(self, name: str) -> list[str]:
        """A key list (a comma-separated string is split, and reported); empty keys left out."""
        if name not in self._keys:
            self._keys[name] = self._read_keys(name)
        return list(self._keys[name])

    def _read_keys(self, name: str) -> list[str]:
        where, value = self.get(name)
        if isinstance(value, str):
            keys = split_keys(value)
            if "," in value:
                self.note(
                    f"{where} is a string, not a list: read as the keys {keys!r} (split at its "
                    "commas; a /regex/ key is kept whole)"
                )
            return keys
        if isinstance(value, list) and all(isinstance(k, str) for k in value):
            return [k for k in value if k.strip()]
        self.bad(f"{where} must be a list of strings, got {value!r}")
        return []

    def text(self, name: str) -> str:
        """A string field."""
        where, value = self.get(name)
        if value is None:
            return ""
        if not isinstance(value, str):
            self.bad(f"{where} must be a string, got {type(value).__name__}")
            return ""
        return value

    def flag(self, name: str) -> bool | None:
        """A true/false field (None when unset)."""
        where, value = self.get(name)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.bad(f"{where} must be true or false, got {value!r}")
            return None
        return value

    def number(self, name: str, *, low: int | None = 0, high: int | None = None) -> int | None:
        """An integer field within [low, high] (None when unset)."""
        where, value = self.get(name)
        return self.integer(where, value, low=low, high=high)

    def integer(
        self, where: str, value: Any, *, low: int | None = 0, high: int | None = None
    ) -> int | None:
        """``value`` as an integer within [low, high], or a problem naming ``where``."""
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            self.bad(f"{where} must be an integer, got {value!r}")
            return None
        if (low is not None and value < low) or (high is not None and value > high):
            self.bad(f"{where} must be between {low} and {high}, got {value!r}")
            return None
        return int(value)

    # ------------------------------------------------------------------ the entry

    def _enabled(self) -> bool:
        disable = self.flag("disable") if "disable" in self.raw else None
        enabled = self.raw.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            self.bad(f"enabled must be true or false, got {enabled!r}")
            enabled = None
        if disable is not None and enabled is not None and disable == enabled:
            where = "disable" if not self.card_style else "enabled"
            self.note(f"enabled={enabled!r} disagrees with disable={disable!r}: {where} used")
        if self.card_style:
            # SillyTavern's convertCharacterBook: ``disable: !entry.enabled``.
            if enabled is not None:
                return enabled
            if disable is None:
                self.note("enabled is not set: disabled, as SillyTavern reads a card entry")
                return False
            self.note(
                f"enabled is not set: disable={disable!r} used (SillyTavern reads only a card "
                "entry's enabled, and would disable the entry)"
            )
        if disable is not None:
            return not disable
        return True if enabled is None else enabled

    def _priority(self) -> int:
        order = self.number("order", low=None)
        prio = self.integer("priority", self.raw.get("priority"), low=None)
        if self.card_style:  # SillyTavern orders a card's entries by insertion_order alone
            if order is not None:
                if prio is not None and prio != order:
                    self.note(f"priority={prio} differs from insertion_order={order}: order used")
                return order
            return prio if prio is not None else 100
        if prio is not None and order is not None and prio != order:
            self.note(f"priority={prio} disagrees with order={order}: order used")
        return order if order is not None else 100

    def _position(self) -> str:
        where, value = self.get("position")
        coarse = self.raw.get("position") if self.card_style else None
        if isinstance(value, str):
            if value in ("before_char", "after_char"):
                return value
            if self.card_style and where == "position":
                # convertCharacterBook: anything but "before_char" is after the character
                self.note(f"position={value!r} is not before_char or after_char: after_char used")
                return "after_char"
            self.bad(f"{where} must be before_char or after_char, got {value!r}")
            return "before_char"
        number = self.integer(where, value, high=len(POSITIONS) - 1)
        if (
            isinstance(coarse, str)
            and number is not None
            and (coarse == "before_char") != (number == 0)
        ):
            self.note(f"position={coarse!r} disagrees with {where}={number}: {where} used")
        return POSITIONS[number] if number is not None else "before_char"

    def rules(self) -> dict[str, Any]:
        """The entry's ``rules`` (mapped SillyTavern fields and the kept raw entry)."""
        selective = self.flag("selective")
        secondary = self.keys("keysecondary")
        logic = self.number("selectiveLogic", high=3) or 0
        if secondary and selective is False:
            if self.given("selective"):
                self.note("secondary keys with selective=false are ignored (as in SillyTavern)")
            else:
                self.note(
                    "secondary keys are ignored: selective is not set, which SillyTavern reads "
                    "as false in a card entry"
                )
            secondary = []
        use_probability = self.flag("useProbability")
        probability = self.number("probability", high=100)
        delay_rec = self.get("delayUntilRecursion")[1]
        delay_until = (
            int(delay_rec)
            if isinstance(delay_rec, bool)
            else self.integer("delayUntilRecursion", delay_rec) or 0
        )
        role = self.number("role", high=2)
        position = self._position()
        if position == "outlet":
            self.note("position outlet is placed after the character definition (no outlet macro)")
        for key in [*self.keys("key"), *secondary]:
            problem = regex_key_problem(key)
            if problem:
                self.note(f"regex key {key!r} {problem}")
        self._report_use_regex([*self.keys("key"), *self.keys("keysecondary")])
        source = {k: v for k, v in self.raw.items() if k != "content"}
        if self.decorators.prefix:
            source[DECORATORS_KEY] = self.decorators.prefix
        weight = self.number("groupWeight")
        depth = self.number("depth")
        if use_probability is False or probability is None:
            probability = 100  # useProbability off: SillyTavern ignores the probability
        scan_depth = self.number("scanDepth")
        deco = self.decorators.fields
        return {
            "secondary_keywords": secondary,
            "selective_logic": SELECTIVE_LOGICS[logic],
            "regex_keys": True,
            "match_whole_words": self.flag("matchWholeWords"),
            "scan_depth": deco.get("scan_depth", scan_depth),
            "probability": probability,
            "group": self.text("group"),
            "group_override": bool(self.flag("groupOverride")),
            "group_weight": 100 if weight is None else weight,
            "group_scoring": self.flag("useGroupScoring"),
            "exclude_recursion": bool(self.flag("excludeRecursion")),
            "prevent_recursion": bool(self.flag("preventRecursion")),
            "delay_until_recursion": delay_until,
            "sticky": self.number("sticky") or 0,
            "delay": self.number("delay") or 0,
            "position": deco.get("position", position),
            "depth": deco.get("depth", 4 if depth is None else depth),
            "role": deco.get("role", ROLES[role] if role is not None else "system"),
            "ignore_budget": bool(self.flag("ignoreBudget")),
            "source": source,
        }

    def _report_use_regex(self, keys: list[str]) -> None:
        """Report ``use_regex`` when it would change how a key matches.

        SillyTavern writes ``use_regex: true`` on every card entry it exports ("ST keys are
        always regex") and reads only keys written ``/pattern/flags`` as regular expressions;
        nekoflow does the same, so a key like ``dragons?`` stays literal text.
        """
        if self.raw.get("use_regex") is not True:
            return
        literal = [k for k in keys if split_regex_key(k) is None and _REGEX_SYNTAX.search(k)]
        if literal:
            self.note(
                f"use_regex=true is kept for export but not applied: as in SillyTavern, only keys "
                f"written /pattern/flags are regular expressions; {literal!r} match as literal text"
            )

    def report_unused(self) -> None:
        """Note unsupported fields that are set, and fields nekoflow does not know."""
        for spec in FIELDS:
            if spec.kind != "unsupported":
                continue
            where, value = self.get(spec.name)
            if not is_unset(value, spec.default):
                self.note(f"{where}={value!r} is kept for export but not applied")
        for key, value in self.raw.items():
            if key not in _KNOWN_TOP and not is_unset(value, None):
                self.note(f"unknown field {key}={value!r} is kept for export but not used")
        for key, value in self.ext.items():
            if key not in _KNOWN_EXT and not is_unset(value, None):
                self.note(f"unknown field extensions.{key}={value!r} is kept for export, not used")

    def entry(self, entry_id: str) -> WorldBookEntry | None:
        """The mapped entry (None when the entry has problems)."""
        name = self.text("comment")
        if self.card_style:
            card_name = self.raw.get("name")
            name = card_name if isinstance(card_name, str) and card_name else name
        elif not name and isinstance(self.raw.get("title"), str):
            name = self.raw["title"]  # KoboldAI-style World Info
        case = self.flag("caseSensitive")
        self.decorators, content = parse_decorators(self.text("content"))
        for line, what in self.decorators.applied:
            self.note(f"CCv3 decorator {line!r} applied: {what} (cut from the content)")
        for line, why in self.decorators.ignored:
            self.note(
                f"CCv3 decorator {line!r} is not applied ({why}): cut from the content, "
                "kept for export"
            )
        deco = self.decorators.fields
        fields = {
            "id": entry_id,
            "name": name,
            "keywords": self.keys("key"),
            "content": content,
            "enabled": self._enabled() and not deco.get("disabled"),
            "priority": self._priority(),
            "case_sensitive": bool(case),
            "trigger_sources": list(ST_TRIGGER_SOURCES),
            "always_on": bool(self.flag("constant")) or bool(deco.get("always_on")),
            "cooldown_turns": self.number("cooldown") or 0,
            "rules": self.rules(),
        }
        self.report_unused()
        try:
            entry = WorldBookEntry(**fields)
        except ValidationError as exc:
            self.bad("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()))
            return None
        if not entry.keywords and not entry.always_on:
            self.note("no keys and not constant: the entry never fires")
        return entry


def label_of(n: int, key: str, raw: Any) -> str:
    """``entry '<key>' (<comment or name>)`` for reports."""
    title = ""
    if isinstance(raw, Mapping):
        title = raw.get("comment") or raw.get("name") or ""
        title = title if isinstance(title, str) else ""
    return f"entry {key or '#' + str(n)!r}" + (f" ({title})" if title else "")


def summarize(pairs: list[tuple[str, str]]) -> list[str]:
    """Group notes by text: ``what — entry 'a', entry 'b' and 3 more``."""
    grouped: dict[str, list[str]] = {}
    for what, label in pairs:
        grouped.setdefault(what, []).append(label)
    out = []
    for what, labels in grouped.items():
        shown = ", ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")
        out.append(f"{what} — {shown}")
    return out


def iter_entries(entries: Any, problems: list[str]) -> list[tuple[int, str, Any]]:
    """(position, key, raw) of a World Info ``entries`` object or a card's entry list."""
    if isinstance(entries, Mapping):
        return [(n, str(k), v) for n, (k, v) in enumerate(entries.items())]
    if isinstance(entries, list):
        return [
            (n, str(v.get("uid", v.get("id", n))) if isinstance(v, Mapping) else str(n), v)
            for n, v in enumerate(entries)
        ]
    problems.append(f"entries must be an object or a list, got {type(entries).__name__}")
    return []


def map_entries(
    entries: Any, book_id: str, *, card_style: bool
) -> tuple[list[WorldBookEntry], list[str], list[str]]:
    """Map SillyTavern entries; returns (entries, problems, report lines)."""
    problems: list[str] = []
    notes: list[tuple[str, str]] = []
    out: list[WorldBookEntry] = []
    used_ids: set[str] = set()
    for n, key, raw in iter_entries(entries, problems):
        label = label_of(n, key, raw)
        if not isinstance(raw, Mapping):
            problems.append(f"{label}: expected an object, got {type(raw).__name__}")
            continue
        mapper = EntryMapper(label, raw, problems, card_style=card_style)
        entry_id = f"{book_id}-{key}"
        if entry_id in used_ids:
            mapper.bad(f"duplicate entry id {key!r}")
        used_ids.add(entry_id)
        entry = mapper.entry(entry_id)
        if entry is not None:
            out.append(entry)
        notes.extend(mapper.notes)
    return out, problems, summarize(notes)
