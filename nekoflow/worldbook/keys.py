"""Keyword semantics beyond plain substrings: regex keys, whole words, secondary-key logic.

* Regex keys follow SillyTavern's ``parseRegexFromString``: a key ``/pattern/flags`` whose pattern
  has no unescaped ``/`` is a regular expression (``\\/`` means ``/``); flags ``i`` (ignore case),
  ``m``, ``s``, ``x`` map to the ``regex`` package's flags, ``g``/``y``/``u`` change nothing; as in
  JavaScript, ``\\w``/``\\b``/``\\d`` are ASCII (so ``/\\bcat\\b/`` matches in "和cat说"). A
  key that does not parse, or whose pattern does not compile, stays a literal keyword.
* :func:`exact_literals`: a regex that matches exactly a small set of literal strings
  (``/dragons?/i``, ``/(白|黑)塔/``) is matched as those literals, with no regex run at all.
* :func:`required_literals` finds literals of which at least one must occur wherever a pattern
  matches (e.g. ``/(白|黑)塔/`` → ``{"塔"}``); the book index looks for them with its automaton and
  runs a regex only when one is present. Patterns without such literals run on every scan.
* Whole words (SillyTavern's ``matchWholeWords``): a single-word key must not be glued to a word
  character; a key of several words matches as a substring. Word characters are letters, digits
  and ``_`` of alphabetic scripts; CJK characters never are (as in SillyTavern's JavaScript
  ``\\W``), so a CJK key edge needs no boundary — whole-word matching of CJK keys is a substring.
* :func:`secondary_ok`: SillyTavern's four selective logics.

Pure module: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import regex

from nekoflow.worldbook.rules import SelectiveLogic

_REGEX_KEY = re.compile(r"^/([\w\W]+?)/([gimsuyx]*)$")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE}
_RE_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_CJK = re.compile(
    "[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003134f]"
)


def _regex_flags(flags: str) -> int:
    # ASCII: \\w, \\b, \\d as in JavaScript (CJK characters are not word characters there).
    value = regex.V0 | regex.ASCII
    for f in flags:
        value |= _FLAGS.get(f, 0)
    return value


def split_regex_key(key: str) -> tuple[str, str] | None:
    """``(pattern, flags)`` of a ``/pattern/flags`` key, or None when it is a literal key."""
    m = _REGEX_KEY.match(key)
    if m is None:
        return None
    pattern, flags = m.groups()
    if _UNESCAPED_SLASH.search(pattern):
        return None
    return pattern.replace("\\/", "/"), flags


def split_keys(text: str) -> list[str]:
    """The keys of a comma-separated key string; a ``/pattern/flags`` key stays whole.

    SillyTavern's ``splitKeywordsAndRegexes``: commas inside a regex key are part of it
    (``"/dragons?{1,2}/i, wyrm"`` is two keys). A part starting with ``/`` runs to the first comma
    after which it reads as ``/pattern/flags``; one that never does (``/help, /start``) is split at
    its commas. Empty keys are left out.
    """
    keys: list[str] = []
    rest = text
    while rest.strip():
        cut = -1
        if rest.lstrip().startswith("/"):
            ends = [m.start() for m in re.finditer(",", rest)] + [len(rest)]
            cut = next((n for n in ends if split_regex_key(rest[:n].strip()) is not None), -1)
        if cut < 0:
            cut = rest.find(",")
            cut = len(rest) if cut < 0 else cut
        if rest[:cut].strip():
            keys.append(rest[:cut].strip())
        rest = rest[cut + 1 :]
    return keys


def compile_regex_key(key: str) -> regex.Pattern[str] | None:
    """The compiled regex of a ``/pattern/flags`` key (None: literal key, or does not compile)."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    pattern, flags = parts
    try:
        return regex.compile(pattern, _regex_flags(flags))
    except (regex.error, ValueError, OverflowError):
        return None


def regex_key_problem(key: str) -> str | None:
    """Why a key written ``/…/`` is not used as a regex (None when it is fine or not a regex)."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    try:
        compile_regex_key_strict(key)
    except (regex.error, ValueError, OverflowError) as exc:
        return f"does not compile ({exc}); matched as literal text"
    return None


def compile_regex_key_strict(key: str) -> regex.Pattern[str]:
    """Like :func:`compile_regex_key` but raising the compile error."""
    parts = split_regex_key(key)
    if parts is None:
        raise ValueError("not a /pattern/flags key")
    pattern, flags = parts
    return regex.compile(pattern, _regex_flags(flags))


_MAX_LITERALS = 64


def _best(options: list[frozenset[str]]) -> frozenset[str] | None:
    if not options:
        return None
    return max(options, key=lambda s: (min(len(x) for x in s), -len(s)))


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str] | None:
    if len(left) * len(right) > _MAX_LITERALS:
        return None
    return frozenset(a + b for a in left for b in right)


def _exact(op: Any, av: Any) -> frozenset[str] | None:
    """The finite set of strings one parsed item matches, when small (None otherwise)."""
    name = str(op)
    if name == "LITERAL":
        return frozenset([chr(av)])
    if name == "IN" and 0 < len(av) <= 16 and all(str(o) == "LITERAL" for o, _ in av):
        return frozenset(chr(c) for _, c in av)
    if name == "AT":
        return frozenset([""])
    if name == "SUBPATTERN":
        return _exact_seq(av[-1])
    if name == "BRANCH":
        alts = [_exact_seq(alt) for alt in av[1]]
        if all(a is not None for a in alts):
            union = frozenset().union(*alts)  # type: ignore[arg-type]
            return union if len(union) <= _MAX_LITERALS else None
        return None
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[1] == 1 and av[0] <= 1:
        inner = _exact_seq(av[2])
        if inner is None:
            return None
        return inner | frozenset([""]) if av[0] == 0 else inner
    return None


def _exact_seq(items: Any) -> frozenset[str] | None:
    out = frozenset([""])
    for op, av in items:
        part = _exact(op, av)
        if part is None:
            return None
        joined = _product(out, part)
        if joined is None:
            return None
        out = joined
    return out


def _sequence(items: Any) -> frozenset[str] | None:
    """A set of literals one of which occurs wherever ``items`` match (best found), or None."""
    options: list[frozenset[str]] = []
    run = frozenset([""])

    def flush() -> None:
        nonlocal run
        if all(run):
            options.append(run)
        run = frozenset([""])

    for op, av in items:
        part = _exact(op, av)
        if part is not None:
            joined = _product(run, part)
            if joined is None:
                flush()
                joined = part
            run = joined
            continue
        flush()
        name = str(op)
        found: frozenset[str] | None = None
        if name == "SUBPATTERN":
            found = _sequence(av[-1])
        elif name == "BRANCH":
            alts = [_sequence(alt) for alt in av[1]]
            if alts and all(a is not None for a in alts):
                found = frozenset().union(*alts)  # type: ignore[arg-type]
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            found = _sequence(av[2])
        elif name == "ATOMIC_GROUP":
            found = _sequence(av)
        if found and all(found):
            options.append(found)
    flush()
    return _best(options)


def required_literals(key: str) -> tuple[frozenset[str], bool] | None:
    """Literals one of which occurs wherever the regex key matches, and whether to compare them
    lower-cased; None when no such set is known (the regex must run on every scan)."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    pattern, flags = parts
    re_flags = 0
    for f in flags:
        re_flags |= _RE_FLAGS.get(f, 0)
    try:
        parsed = sre_parse.parse(pattern, re_flags)
    except (re.error, ValueError, OverflowError, RecursionError):
        return None
    found = _sequence(parsed)
    if not found:
        return None
    ignore_case = "i" in flags
    if ignore_case:
        # Lower-casing is a safe pre-filter for ASCII and caseless (e.g. CJK) text only.
        if any(not (c.isascii() or c.lower() == c.upper()) for lit in found for c in lit):
            return None
        found = frozenset(lit.lower() for lit in found)
    return found, ignore_case


def _has_anchor(items: Any) -> bool:
    for op, av in items:
        name = str(op)
        if name == "AT":
            return True
        if name == "SUBPATTERN" and _has_anchor(av[-1]):
            return True
        if name == "BRANCH" and any(_has_anchor(alt) for alt in av[1]):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and _has_anchor(av[2]):
            return True
    return False


def exact_literals(key: str) -> tuple[frozenset[str], bool] | None:
    """When a regex key matches exactly a small set of literal strings (``/dragons?/i`` →
    dragon, dragons; no anchors, classes or unbounded repeats), that set and whether to compare
    lower-cased: the key then matches exactly when one of them occurs, no regex run needed."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    pattern, flags = parts
    re_flags = 0
    for f in flags:
        re_flags |= _RE_FLAGS.get(f, 0)
    try:
        parsed = sre_parse.parse(pattern, re_flags)
    except (re.error, ValueError, OverflowError, RecursionError):
        return None
    if _has_anchor(parsed):
        return None
    found = _exact_seq(parsed)
    if not found or not all(found):
        return None
    ignore_case = "i" in flags
    if ignore_case:
        if any(not (c.isascii() or c.lower() == c.upper()) for lit in found for c in lit):
            return None
        found = frozenset(lit.lower() for lit in found)
    return found, ignore_case


def lower_safe(text: str) -> bool:
    """True when ``text`` occurs in a string exactly when it occurs in that string lower-cased
    (CJK, and ASCII without letters), so a case-sensitive key can use the lower-cased index."""
    return all(_CJK.match(c) or (c.isascii() and not c.isalpha()) for c in text)


def is_word_char(ch: str) -> bool:
    """A letter, digit or ``_`` of an alphabetic script (CJK characters are not word chars)."""
    return (ch.isalnum() or ch == "_") and not _CJK.match(ch)


def whole_word_in(key: str, text: str) -> bool:
    """``key`` occurs in ``text`` as a whole word (see the module docstring)."""
    if len(key.split()) > 1:
        return key in text
    check_left = is_word_char(key[0])
    check_right = is_word_char(key[-1])
    if not (check_left or check_right):
        return key in text
    n = len(key)
    start = text.find(key)
    while start >= 0:
        end = start + n
        left_ok = not check_left or start == 0 or not is_word_char(text[start - 1])
        right_ok = not check_right or end == len(text) or not is_word_char(text[end])
        if left_ok and right_ok:
            return True
        start = text.find(key, start + 1)
    return False


def secondary_ok(logic: SelectiveLogic, found: int, total: int) -> bool:
    """SillyTavern's selective logic, given how many of ``total`` secondary keys were found."""
    if total == 0:
        return True
    if logic == "and_any":
        return found > 0
    if logic == "and_all":
        return found == total
    if logic == "not_any":
        return found == 0
    return found < total  # not_all


def literal_keys(keys: Sequence[str], regex_keys: bool) -> list[str]:
    """The keys matched as literal text (all of them unless ``regex_keys``)."""
    if not regex_keys:
        return list(keys)
    return [k for k in keys if compile_regex_key(k) is None]
