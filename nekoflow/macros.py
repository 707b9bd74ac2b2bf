"""SillyTavern macros (``{{char}}``, ``{{user}}``, ``{{random::a::b}}``, …) rendered in prompt text.

Pure: no I/O, no clock, no global randomness. Everything a macro may depend on comes in a
:class:`MacroContext`: the names, the turn's message time (never the wall clock, so a retried turn
renders the same prompt), the seeds of the random macros and any named values (the card's
``description``, the user's ``input``, …).

Semantics follow SillyTavern's documented macros, names case-insensitive:

* ``{{char}}`` / ``<BOT>`` / ``<CHAR>`` → the character's name; ``{{user}}`` / ``<USER>`` → the
  speaker's display name (the ``<…>`` forms case-insensitive, as in SillyTavern);
* ``{{time}}`` (``2:05 PM``), ``{{date}}`` (``November 25, 2026``), ``{{weekday}}``
  (``Wednesday``), ``{{isotime}}`` (``14:05``), ``{{isodate}}`` (``2026-11-25``),
  ``{{time_UTC+8}}`` — all from the context's time in the context's time zone;
* ``{{idle_duration}}`` → how long since the previous message, humanized as SillyTavern does
  (``a few seconds``, ``5 minutes``, ``2 days``; ``just now`` on first contact);
* ``{{random::a::b}}`` / ``{{random:a,b}}`` → one option, chosen by a hash of the turn seed, the
  prompt part and the macro's position (a retried turn picks the same); ``{{pick::…}}`` the same
  but seeded by the chat, so it stays stable for the whole conversation; ``{{roll:2d6}}`` a
  deterministic dice roll;
* ``{{// comment}}``, ``{{noop}}`` and the V3 card spec's ``{{comment: …}}`` /
  ``{{hidden_key: …}}`` → nothing; ``{{reverse:text}}`` → the text reversed (V3);
  ``{{newline}}`` → a line break; ``{{trim}}`` removes itself and the line breaks around it;
* any other name found in :attr:`MacroContext.values` (``description``, ``personality``,
  ``scenario``, ``mesExamplesRaw``, ``charPrompt``, ``charJailbreak``, ``input``, ``original`` …)
  → that value.

Unknown macros (``{{getvar::x}}``, an extension's ``{{format_message_variable::stat_data}}``, a
name with no value) are left exactly as written, as SillyTavern does without the extension — or
removed when the context says ``strip_unknown`` (``NEKOFLOW_UNKNOWN_MACROS=strip``);
:func:`unknown_macros` lists them so imports and test-match can report them. Macros
nested in arguments are rendered first; text substituted into the prompt (a user's name, a card
field) is never expanded again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo

__all__ = ["MacroContext", "humanize_duration", "render_macros", "unknown_macros"]

_TRIM = f"\x00trim-{secrets.token_hex(8)}\x00"
"""Where ``{{trim}}`` stood until the end of rendering: random per process, so no text a card or
a user writes can hold it (a fixed marker in the text was cut as if it were ``{{trim}}``)."""
_ANGLE = re.compile(r"<(USER|BOT|CHAR)>", re.IGNORECASE)
_RANDOM = re.compile(r"^(random|pick)\s?::?([\s\S]*)$", re.IGNORECASE)
_ROLL = re.compile(r"^roll[\s:]+([\s\S]*)$", re.IGNORECASE)
_DICE = re.compile(r"^\s*(\d*)\s*d\s*(\d+)\s*([+-]\s*\d+)?\s*$", re.IGNORECASE)
_TIME_UTC = re.compile(r"^time_utc([+-]\d{1,2})$", re.IGNORECASE)
_TRIM_AROUND = re.compile(r"(?:\r?\n)*" + re.escape(_TRIM) + r"(?:\r?\n)*")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@dataclass(frozen=True)
class MacroContext:
    """What macros render from: names, the turn's time, seeds and named values."""

    char: str = ""
    user: str = ""
    now: datetime = field(default_factory=lambda: datetime(1970, 1, 1, tzinfo=UTC))
    seed: str = ""
    chat_seed: str = ""
    idle_seconds: float | None = None
    tz: tzinfo = UTC
    values: Mapping[str, str] = field(default_factory=dict)
    #: Remove unknown macros instead of leaving them as written.
    strip_unknown: bool = False

    def with_values(self, **values: str) -> MacroContext:
        """A copy with more named values (``original=…`` for a system prompt, …)."""
        return replace(self, values={**self.values, **values})


def _hour12(t: datetime) -> str:
    hour = t.hour % 12 or 12
    return f"{hour}:{t.minute:02d} {'AM' if t.hour < 12 else 'PM'}"


def humanize_duration(seconds: float | None) -> str:
    """A duration the way SillyTavern's ``{{idle_duration}}`` (moment's humanize) says it."""
    if seconds is None:
        return "just now"
    s = abs(seconds)
    minutes, hours, days = s / 60, s / 3600, s / 86400
    if s < 45:
        return "a few seconds"
    if s < 90:
        return "a minute"
    if minutes < 45:
        return f"{round(minutes)} minutes"
    if minutes < 90:
        return "an hour"
    if hours < 22:
        return f"{round(hours)} hours"
    if hours < 36:
        return "a day"
    if days < 26:
        return f"{round(days)} days"
    if days < 45:
        return "a month"
    if days < 320:
        return f"{round(days / 30.4)} months"
    if days < 548:
        return "a year"
    return f"{round(days / 365)} years"


def _choice(options: list[str], *parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode()).digest()
    return options[int.from_bytes(digest[:8], "big") % len(options)]


def _options(args: str) -> list[str]:
    if "::" in args:
        return args.split("::")
    return [o.replace("\x01", ",").strip() for o in args.replace("\\,", "\x01").split(",")]


def _roll(spec: str, ctx: MacroContext, part: str, pos: int) -> str | None:
    spec = spec.strip()
    if spec.isdigit():
        spec = f"1d{spec}"
    m = _DICE.match(spec)
    if m is None:
        return None
    count, sides = int(m.group(1) or 1), int(m.group(2))
    if not (1 <= count <= 100 and 1 <= sides <= 10_000):
        return None
    total = int((m.group(3) or "0").replace(" ", ""))
    for n in range(count):
        digest = hashlib.sha256(f"{ctx.seed}\x00{part}\x00{pos}\x00roll{n}".encode()).digest()
        total += int.from_bytes(digest[:8], "big") % sides + 1
    return str(total)


class _Renderer:
    """One rendering of one text: a recursive scan of ``{{…}}`` pairs."""

    def __init__(self, text: str, ctx: MacroContext, part: str) -> None:
        self.text = text
        self.ctx = ctx
        self.part = part
        self.local = ctx.now.astimezone(ctx.tz)
        self.values = {k.lower(): v for k, v in ctx.values.items()}
        #: The unknown macros met, as written between the braces.
        self.unknown: list[str] = []

    def literal(self, chunk: str) -> str:
        names = {"user": self.ctx.user, "bot": self.ctx.char, "char": self.ctx.char}
        return _ANGLE.sub(lambda m: names[m.group(1).lower()], chunk)

    def run(self) -> str:
        out, _ = self.scan(0, nested=False)
        if _TRIM in out:
            out = _TRIM_AROUND.sub("", out)
        return out

    def scan(self, i: int, *, nested: bool) -> tuple[str, int | None]:
        """Render from ``i`` to the end (or, nested, to the closing ``}}``: its index)."""
        text, out, start = self.text, [], i
        while True:
            open_at = text.find("{{", i)
            close_at = text.find("}}", i) if nested else -1
            if nested and close_at != -1 and (open_at == -1 or close_at < open_at):
                out.append(self.literal(text[start:close_at]))
                return "".join(out), close_at
            if open_at == -1:
                if nested:  # unclosed: the caller keeps its "{{" as text
                    return "".join(out), None
                out.append(self.literal(text[start:]))
                return "".join(out), None
            out.append(self.literal(text[start:open_at]))
            if text.startswith("{{//", open_at):
                end = text.find("}}", open_at + 4)
                if end == -1:
                    out.append(self.literal(text[open_at:]))
                    return "".join(out), None
                i = start = end + 2
                continue
            inner, end = self.scan(open_at + 2, nested=True)
            if end is None:
                out.append(self.literal(text[open_at:]))
                return "".join(out), None
            value = self.macro(inner, open_at)
            if value is None:
                self.unknown.append(inner)
                value = "" if self.ctx.strip_unknown else "{{" + inner + "}}"
            out.append(value)
            i = start = end + 2

    def macro(self, body: str, pos: int) -> str | None:
        """The value of one macro, or None when it is unknown (left as written)."""
        name = body.strip()
        key = name.lower()
        ctx, t = self.ctx, self.local
        simple = {
            "char": ctx.char,
            "user": ctx.user,
            "noop": "",
            "newline": "\n",
            "trim": _TRIM,
            "time": _hour12(t),
            "date": f"{_MONTHS[t.month - 1]} {t.day}, {t.year}",
            "weekday": _WEEKDAYS[t.weekday()],
            "isotime": f"{t.hour:02d}:{t.minute:02d}",
            "isodate": f"{t.year:04d}-{t.month:02d}-{t.day:02d}",
            "idle_duration": humanize_duration(ctx.idle_seconds),
        }
        if key in simple:
            return simple[key]
        if key in self.values:
            return self.values[key]
        m = _RANDOM.match(body.lstrip())
        if m is not None:
            options = _options(m.group(2))
            if m.group(1).lower() == "pick":
                return _choice(options, ctx.chat_seed, "pick", self.part, str(pos), body)
            return _choice(options, ctx.seed, "random", self.part, str(pos))
        lowered = body.lstrip().lower()
        if lowered.startswith(("comment:", "hidden_key:")):  # V3: never sent to the model
            return ""
        if lowered.startswith("reverse:"):
            return body.lstrip()[len("reverse:") :][::-1]
        m = _ROLL.match(name)
        if m is not None:
            return _roll(m.group(1), ctx, self.part, pos)
        m = _TIME_UTC.match(name)
        if m is not None and abs(int(m.group(1))) <= 14:
            shifted = ctx.now.astimezone(timezone(timedelta(hours=int(m.group(1)))))
            return _hour12(shifted)
        return None


def render_macros(text: str, ctx: MacroContext, *, part: str = "") -> str:
    """``text`` with its macros rendered (``part`` names the prompt part, for random seeds)."""
    if not text or ("{{" not in text and "<" not in text):
        return text
    return _Renderer(text, ctx, part).run()


#: Named values a turn always gives macros (card fields, the user's input): known, not unknown.
TURN_VALUE_NAMES = (
    "description",
    "personality",
    "scenario",
    "persona",
    "charPrompt",
    "charJailbreak",
    "charInstruction",
    "mesExamplesRaw",
    "mesExamples",
    "charVersion",
    "charDepthPrompt",
    "input",
    "original",
)


def unknown_macros(text: str) -> list[str]:
    """The macros of ``text`` that a turn would leave as written (unknown names), in order, each
    once — what imports and test-match report (a turn's named values count as known)."""
    if not text or "{{" not in text:
        return []
    ctx = MacroContext(values=dict.fromkeys(TURN_VALUE_NAMES, ""))
    renderer = _Renderer(text, ctx, "")
    renderer.run()
    return list(dict.fromkeys("{{" + body + "}}" for body in renderer.unknown))
