"""The memory builder (seed 002): dialogue lines on the active path → chat messages for the LLM.

Pure: no SQL here. ``lines`` are ``Line`` rows or anything with the same attribute names, or plain
mappings with the same keys. Rules (SPEC "Memory builder"; the seed's worked examples win):

- The target is whoever matches any given identifier: ``role_id``, ``script_role_id`` or
  ``display_name``, each compared with the line's field of the same name (``role_id`` 1 is not
  ``script_role_id`` 1). Ids compare by value as text, so ``1`` and ``"1"`` are the same id.
  With no identifier at all, every assistant and every system line is the target's.
- system: the target's, or a line with no identity (no role_id, script_role_id, display_name),
  becomes ``{"role": "system"}``; other identities' system lines are dropped (they are invisible:
  they neither split a merged reply nor end a user run).
- Consecutive target assistant lines merge into one assistant message,
  ``【emotion】content<tts>(action)`` per line, no separator (``original_emotion`` is the emotion).
- Other speakers' assistant lines become context rows ``name:content(action)`` (no emotion, no
  tts) inside one pair of braces, rows joined by ``"\\n"``.
- A run of user lines goes into the braces as ``name:content`` rows when the next non-user line
  is another speaker; otherwise (next is the target, a kept system line, or the end) it stays
  outside: ``{context}\\n`` + the run's contents joined with no separator.
- A row's name is ``display_name``, else 用户 for user lines, else 未知.
- A kept system line in the middle flushes what is pending (as a user message) before it.
  Context still pending at the end is emitted as a final user message. Messages whose content
  would be empty are not emitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter, itemgetter
from typing import Any

from nekoflow.errors import InputError

__all__ = ["LINE_ATTRIBUTES", "build_memory"]

LINE_ATTRIBUTES = ("assistant", "user", "system")
_USER_NAME = "用户"
_UNKNOWN_NAME = "未知"
_MISSING = object()

# Line kinds after classification.
_TARGET, _OTHER, _USER, _SYSTEM, _DROP = range(5)


def _fields(line: Any, index: int) -> tuple[str, str, Any, Any, Any, Any, Any, Any]:
    """Read (attribute, content, role_id, script_role_id, display_name, emotion, tts, action)."""
    if isinstance(line, Mapping):
        get = line.get
        attribute = get("attribute", _MISSING)
        content = get("content", _MISSING)
        values = (
            get("role_id"),
            get("script_role_id"),
            get("display_name"),
            get("original_emotion"),
            get("tts_content"),
            get("action_content"),
        )
    elif line is None or isinstance(line, str | bytes | int | float | list | tuple | set):
        raise InputError(
            f"lines[{index}] must be a Line or a mapping, got {type(line).__name__}",
            field=f"lines[{index}]",
        )
    else:
        attribute = getattr(line, "attribute", _MISSING)
        content = getattr(line, "content", _MISSING)
        values = (
            getattr(line, "role_id", None),
            getattr(line, "script_role_id", None),
            getattr(line, "display_name", None),
            getattr(line, "original_emotion", None),
            getattr(line, "tts_content", None),
            getattr(line, "action_content", None),
        )
    if attribute is _MISSING or attribute is None:
        raise InputError(f"lines[{index}].attribute is missing", field=f"lines[{index}].attribute")
    if attribute not in LINE_ATTRIBUTES:
        raise InputError(
            f"lines[{index}].attribute must be one of {', '.join(LINE_ATTRIBUTES)}, "
            f"got {attribute!r}",
            field=f"lines[{index}].attribute",
        )
    if content is _MISSING or content is None:
        raise InputError(f"lines[{index}].content is missing", field=f"lines[{index}].content")
    if not isinstance(content, str):
        raise InputError(
            f"lines[{index}].content must be a string, got {type(content).__name__}",
            field=f"lines[{index}].content",
        )
    return (attribute, content, *values)  # type: ignore[return-value]


def _key(value: Any) -> str | None:
    """Identifier comparison key: ids compare as text; None and "" mean "not set"."""
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _name(value: Any, fallback: str) -> str:
    """A context row's speaker name: the display name, else ``fallback``."""
    if value is None or value == "":
        return fallback
    return value if isinstance(value, str) else str(value)


def _text(value: Any) -> str | None:
    """An optional text part: None, "" and whitespace-only count as missing."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if text.strip() else None


def _id_keys(value: Any) -> frozenset[Any]:
    """Field values that match identifier ``value``: its text, plus the int when it is one."""
    key = _key(value)
    if key is None:
        return frozenset()
    keys: set[Any] = {key}
    try:
        number = int(key)
    except ValueError:
        pass
    else:
        if str(number) == key:
            keys.add(number)
    return frozenset(keys)


def _hit(value: Any, keys: frozenset[Any]) -> bool:
    """Does a line's field ``value`` equal the identifier (compared as text)?"""
    if value is None:
        return False
    cls = value.__class__
    if cls is str or cls is int:
        return value in keys
    return _key(value) in keys


def _optional(value: Any) -> str | None:
    """An optional text part, fast path: a non-blank str, else None (see :func:`_text`)."""
    if value is None:
        return None
    if value.__class__ is not str:
        return _text(value)
    return value if value and not value.isspace() else None


_FIELD_NAMES = (
    "attribute",
    "content",
    "role_id",
    "script_role_id",
    "display_name",
    "original_emotion",
    "tts_content",
    "action_content",
)
_FIELD_SET = frozenset(_FIELD_NAMES)
_GET_FIELDS = attrgetter(*_FIELD_NAMES)
_GET_ITEMS = itemgetter(*_FIELD_NAMES)


def build_memory(
    lines: Iterable[Any],
    *,
    role_id: int | str | None = None,
    script_role_id: int | str | None = None,
    display_name: str | None = None,
    user_separator: str = "",
    name_users: bool = False,
) -> list[dict[str, str]]:
    """Build the LLM message list (``{"role", "content"}`` dicts) for the target character.

    ``user_separator`` joins a run of several user lines outside the braces (the seed joins
    them with nothing; the turn pipeline keeps each message on its own line); ``name_users``
    writes such a run as ``name:content`` rows, one per line (a group's merged messages).

    One pass, no string concatenation in loops (parts are joined once per message).
    Raises :class:`nekoflow.errors.InputError` naming ``lines[i].<field>`` for a bad line, or the
    identifier (``role_id`` …) when it is not an int or a string.
    """
    if isinstance(lines, str | bytes | Mapping) or not isinstance(lines, Iterable):
        raise InputError("lines must be a list of Line rows or mappings", field="lines")
    for field, value in (
        ("role_id", role_id),
        ("script_role_id", script_role_id),
        ("display_name", display_name),
    ):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | str)):
            raise InputError(
                f"{field} must be an int or a string, got {type(value).__name__}", field=field
            )
    role_keys = _id_keys(role_id)
    script_keys = _id_keys(script_role_id)
    name_keys = _id_keys(display_name)
    everyone = not (role_keys or script_keys or name_keys)

    messages: list[dict[str, str]] = []
    context: list[str] = []  # rows inside the braces
    run: list[tuple[str, str]] = []  # pending user run: (row name, content)
    reply: list[str] = []  # pending merged target reply

    def run_text() -> str:
        """The pending user run as it stays outside the braces."""
        if name_users and len(run) > 1:
            return "\n".join([f"{name}:{content}" for name, content in run])
        return user_separator.join([content for _, content in run])

    def flush_user() -> None:
        """Emit pending context + user run (the run stays outside the braces)."""
        if context:
            text = "{" + "\n".join(context) + "}"
            if run:
                text += "\n" + run_text()
        else:
            text = run_text()
        context.clear()
        run.clear()
        if text:
            messages.append({"role": "user", "content": text})

    def flush_reply() -> None:
        text = "".join(reply)
        reply.clear()
        if text:
            messages.append({"role": "assistant", "content": text})

    for index, line in enumerate(lines):
        if line.__class__ is dict:
            get = line.get
            fields = (
                get("attribute"),
                get("content"),
                get("role_id"),
                get("script_role_id"),
                get("display_name"),
                get("original_emotion"),
                get("tts_content"),
                get("action_content"),
            )
        else:
            # A fully loaded row (ORM instance, namespace) is read from its instance dict: the
            # same values as attribute access without the descriptor cost. Otherwise attributes
            # (expired ORM columns load on access), and the slow path for everything else.
            state = getattr(line, "__dict__", None)
            if state is not None and state.keys() >= _FIELD_SET:
                fields = _GET_ITEMS(state)
            else:
                try:
                    fields = _GET_FIELDS(line)
                except AttributeError:
                    fields = _fields(line, index)  # mappings, partial objects, or a clear error
        attribute, content, l_role, l_script, l_name, emotion, tts, action = fields
        if content.__class__ is not str:
            content = _fields(line, index)[1]  # raises for a missing or non-text content

        if attribute == "user":
            if reply:
                flush_reply()
            run.append(
                (
                    l_name if l_name.__class__ is str and l_name else _name(l_name, _USER_NAME),
                    content,
                )
            )
            continue
        if attribute not in LINE_ATTRIBUTES:
            _fields(line, index)  # raises, naming lines[i].attribute
        is_target = (
            everyone
            or (role_keys and _hit(l_role, role_keys))
            or (script_keys and _hit(l_script, script_keys))
            or (name_keys and _hit(l_name, name_keys))
        )
        if attribute == "assistant":
            if is_target:
                if run or context:
                    flush_user()
                emotion = _optional(emotion)
                piece = f"【{emotion}】{content}" if emotion else content
                tts = _optional(tts)
                if tts:
                    piece = f"{piece}<{tts}>"
                action = _optional(action)
                reply.append(f"{piece}({action})" if action else piece)
            else:
                if reply:
                    flush_reply()
                if run:  # the next non-user line is another speaker: the run goes in the braces
                    context.extend([f"{name}:{text}" for name, text in run])
                    run.clear()
                name = (
                    l_name if l_name.__class__ is str and l_name else _name(l_name, _UNKNOWN_NAME)
                )
                action = _optional(action)
                context.append(f"{name}:{content}({action})" if action else f"{name}:{content}")
        else:  # system
            anonymous = _key(l_role) is None and _key(l_script) is None and _key(l_name) is None
            if not (is_target or anonymous):
                continue  # another identity's system line: dropped, invisible
            if reply:
                flush_reply()
            flush_user()
            if content:
                messages.append({"role": "system", "content": content})

    if reply:
        flush_reply()
    flush_user()
    return messages
