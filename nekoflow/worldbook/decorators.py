"""CCv3 lorebook decorators: the ``@@name value`` lines at the head of an entry's content.

The character card V3 spec ("Decorators") puts an entry's extra rules in its content: the leading
lines starting with ``@@`` are decorators, cut from the content before it reaches the prompt
(SillyTavern's ``parseDecorators`` cuts them too). The import cuts them, keeps the text cut in
``rules.source`` under :data:`DECORATORS_KEY` (export puts it back), and applies those with a
nekoflow meaning:

* ``@@activate``: always on; ``@@dont_activate``: disabled, never fires (both as in SillyTavern;
  ``@@activate`` wins when both are there);
* ``@@depth N``: at depth N of the chat (N below 1: depth 0), unless ``@@position`` applies;
* ``@@position before_desc`` / ``after_desc``: before / after the character definition;
* ``@@role system|user|assistant``; ``@@scan_depth N``.

Every other decorator (``@@activate_only_after``, ``@@additional_keys``, ``@@is_greeting``…, an
unknown name, a bad value, a repeated name: the first counts) is not applied, and reported. A
``@@@name`` line is a fallback, tried only when the decorator before it was not applied.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nekoflow.worldbook.rules import ROLES

#: ``rules.source`` key holding the decorator lines cut from the head of the content.
DECORATORS_KEY = "nekoflow_decorators"
_LINE = re.compile(r"^(@@@?)([A-Za-z_]\w*)(?:\s+(.*?))?\s*$")
#: CCv3 decorators nekoflow has no way to apply (reported as "not supported").
UNSUPPORTED = frozenset(
    {
        "activate_only_after",
        "activate_only_every",
        "keep_activate_after_match",
        "dont_activate_after_match",
        "instruct_depth",
        "reverse_depth",
        "reverse_instruct_depth",
        "instruct_scan_depth",
        "is_greeting",
        "ignore_on_max_context",
        "additional_keys",
        "exclude_keys",
        "is_user_icon",
        "disable_ui_prompt",
    }
)
_POSITIONS = {"before_desc": "before_char", "after_desc": "after_char"}
_PLACES = {"before_char": "before the character", "after_char": "after the character"}


@dataclass
class Decorators:
    """The decorators of one entry: what they set, what was not applied, and the text cut."""

    prefix: str = ""
    #: nekoflow meaning: ``always_on``, ``disabled``, ``position``, ``depth``, ``role``,
    #: ``scan_depth``.
    fields: dict[str, Any] = field(default_factory=dict)
    #: (line, what it does) of each decorator applied.
    applied: list[tuple[str, str]] = field(default_factory=list)
    #: (line, why) of each decorator not applied.
    ignored: list[tuple[str, str]] = field(default_factory=list)
    #: line → the SillyTavern fields (World Info names) its meaning replaces.
    drives: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def without(self, changed: set[str]) -> tuple[str, set[str]]:
        """The prefix minus the lines driving a field in ``changed``, and every field they drove
        (an edit in nekoflow replaces the decorator: its fields are then written as values)."""
        drop = [line for line, names in self.drives.items() if changed & set(names)]
        if not drop:
            return self.prefix, set()
        rewrite = {name for line in drop for name in self.drives[line]}
        kept = self.prefix.splitlines(keepends=True)
        for line in drop:
            at = next(n for n, text in enumerate(kept) if text.strip() == line)
            del kept[at]
        prefix = "".join(kept)
        return ("" if not prefix.strip() else prefix), rewrite


def _head(content: str) -> tuple[list[str], int]:
    """The decorator lines at the head of ``content`` and where the rest starts (0: none)."""
    pos, lines, seen = 0, [], False
    while pos < len(content):
        nl = content.find("\n", pos)
        end = len(content) if nl < 0 else nl + 1
        line = content[pos:end].strip()
        if line.startswith("@@"):
            lines.append(line)
            seen = True
        elif line:
            break
        pos = end  # blank lines before and after the decorators go with them
    return (lines, pos) if seen else ([], 0)


def _number(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _meaning(name: str, value: str) -> tuple[dict[str, Any], tuple[str, ...], str] | str:
    """(fields, SillyTavern fields replaced, what it does) of one decorator, or why not."""
    if name == "activate":
        return {"always_on": True}, ("constant",), "always on"
    if name == "dont_activate":
        return {"disabled": True}, ("disable",), "disabled (never fires)"
    if name in ("depth", "scan_depth"):
        n = _number(value)
        if n is None:
            return f"{value!r} is not a number"
        if name == "scan_depth":
            return ({"scan_depth": n}, ("scanDepth",), f"scan depth {n}") if n >= 0 else "< 0"
        n = max(n, 0)
        return {"position": "at_depth", "depth": n}, ("position", "depth"), f"at depth {n}"
    if name == "position":
        place = _POSITIONS.get(value)
        if place is None:
            return f"position {value!r} has no place in nekoflow's prompt"
        return {"position": place}, ("position",), _PLACES[place]
    if name == "role":
        if value not in ROLES:
            return f"{value!r} is not system, user or assistant"
        return {"role": value}, ("role",), f"role {value}"
    return "not supported" if name in UNSUPPORTED else "unknown decorator"


def parse_decorators(content: str) -> tuple[Decorators, str]:
    """The decorators at the head of ``content`` and the content without them."""
    lines, start = _head(content)
    out = Decorators(prefix=content[:start])
    applied: dict[str, tuple[str, dict[str, Any]]] = {}  # name → (line, fields), in line order
    previous_applied = True  # a fallback (@@@) is tried only after a decorator not applied
    for line in lines:
        m = _LINE.match(line)
        if m is None:
            out.ignored.append((line, "not a decorator line"))
            previous_applied = False
            continue
        at, name, value = m.group(1), m.group(2), m.group(3) or ""
        if at == "@@@" and previous_applied:
            continue  # the alternative of a decorator applied (or of none): not used
        meaning = "repeated: the first counts" if name in applied else _meaning(name, value)
        if isinstance(meaning, str):
            out.ignored.append((line, meaning))
            previous_applied = False
            continue
        fields, drives, what = meaning
        applied[name] = (line, fields)
        out.applied.append((line, what))
        out.drives[line] = drives
        previous_applied = True
    # CCv3: @@activate wins over @@dont_activate, @@position over @@depth.
    for loser, winner in (("dont_activate", "activate"), ("depth", "position")):
        if loser in applied and winner in applied:
            line = applied.pop(loser)[0]
            out.applied = [(x, what) for x, what in out.applied if x != line]
            del out.drives[line]
            out.ignored.append((line, f"@@{winner} is given"))
    for _, fields in applied.values():
        out.fields.update(fields)
    return out, content[start:]
