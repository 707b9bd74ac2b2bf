"""A bad setting as one line naming its real environment variable (and field), secrets hidden.

Every settings class (``Settings``, ``OneBotSettings``, ``TelegramSettings``…) reads its own
prefix (``NEKOFLOW_``, ``NEKOFLOW_ONEBOT_``…): the variable at fault is that prefix plus the
field, a field of a JSON list item is named after it (``NEKOFLOW_ONEBOT_BOTS: [0].self_id``), a
cross-field error names each variable it mentions, and a URL's password is never printed back.
Imports nothing beyond what the failing settings already imported.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from nekoflow.redact import redact_urls

_PREFIX_FIELD = re.compile(r"^(\w+): ")


def _settings_classes() -> list[type]:
    """Every BaseSettings subclass defined so far (the failing one among them)."""
    module = sys.modules.get("pydantic_settings")
    if module is None:
        return []
    out: list[type] = []
    todo = list(module.BaseSettings.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def _prefix(cls: type | None) -> str:
    config = getattr(cls, "model_config", None) or {}
    return str(config.get("env_prefix") or "NEKOFLOW_")


def settings_class(title: str) -> type | None:
    """The settings class a ValidationError titled ``title`` is about (None: not settings)."""
    found = [c for c in _settings_classes() if c.__name__ == title]
    return found[-1] if found else None


def _variable(cls: type | None, field: str) -> str:
    return f"{_prefix(cls)}{field.upper()}"


def _name_fields(cls: type | None, text: str) -> str:
    """``text`` with the settings' field names it mentions as their variables: a leading
    ``field:`` and any field name with an underscore (``turn_lease_seconds``)."""
    fields = set(getattr(cls, "model_fields", {}) or {})
    match = _PREFIX_FIELD.match(text)
    if match and match.group(1) in fields:
        text = f"{_variable(cls, match.group(1))}: {text[match.end() :]}"
    for field in sorted((f for f in fields if "_" in f), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(field)}(?!\w)", _variable(cls, field), text)
    return text


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_lines(exc: Any, cls: type | None) -> list[str]:
    """One line per error of a settings ValidationError, named as its variable; the rejected
    value is shown (URL passwords masked) unless it is a secret or inside a JSON list."""
    fields = getattr(cls, "model_fields", None) or {}
    lines = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        got = err.get("input")
        if not loc:  # a cross-field check of the model
            lines.append(f"invalid settings: {redact_urls(_name_fields(cls, msg))}")
            continue
        where = _path(loc[1:])
        field = f" {where}:" if where else ""
        shown = ""
        info = fields.get(str(loc[0]))
        secret = info is not None and "Secret" in str(info.annotation)
        if not secret and not where and isinstance(got, str | int | float):
            shown = f" (got {redact_urls(repr(got))})"
        lines.append(
            f"invalid setting {_variable(cls, str(loc[0]))}:{field} "
            f"{redact_urls(_name_fields(cls, msg))}{shown}"
        )
    return lines


def _source_class(exc: BaseException) -> type | None:
    """The settings class whose source raised ``exc`` (found on the traceback)."""
    module = sys.modules.get("pydantic_settings")
    tb = exc.__traceback__
    found = None
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            cls = getattr(value, "settings_cls", None)
            if (
                module is not None
                and isinstance(cls, type)
                and issubclass(cls, module.BaseSettings)
            ):
                found = cls
        tb = tb.tb_next
    return found


def parse_error_line(exc: BaseException) -> str:
    """The line for a value that is not even parseable (bad JSON in ``*_BOTS``…)."""
    match = re.search(r'field "([^"]+)"', str(exc))
    cls = _source_class(exc)
    name = _variable(cls, match.group(1)) if match else "a NEKOFLOW_* variable"
    cause = exc.__cause__
    json_error = type(cause).__name__ == "JSONDecodeError"
    detail = f" ({redact_urls(str(cause))})" if cause else ""
    return f"invalid setting {name} cannot be parsed{' as JSON' if json_error else ''}{detail}"
