"""A card's greeting as the first line of a new conversation (the save's first dialogue line).

The greeting (``first_mes``, or ``alternate_greetings[n-1]`` for index ``n``) is written into the
dialogue tree as an assistant line of the character, with macros rendered, when a conversation
has no lines yet: by the first turn's ``before_turn`` (index from the message's
``metadata.greeting``, else 0), or ahead of any turn by ``nekoflow character greet``. It is then
ordinary history: the model sees it before the user's first message, as in SillyTavern.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from nekoflow.characters.card import CardData
from nekoflow.errors import InputError
from nekoflow.macros import MacroContext, render_macros
from nekoflow.memory.history import get_or_create_save, write_turn
from nekoflow.memory.reply import ReplySegment
from nekoflow.storage.dialogue import Line, Role, Save, utcnow

__all__ = ["greeting_index", "greeting_text", "start_conversation", "write_greeting"]


def greeting_index(value: Any, card: CardData) -> int:
    """A greeting index from request metadata: 0 (``first_mes``) when absent or out of range."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return 0
    try:
        index = int(value)
    except ValueError:
        return 0
    return index if 0 <= index < len(card.greetings()) else 0


def greeting_text(card: CardData, index: int, macros: MacroContext) -> str:
    """Greeting ``index`` of the card with its macros rendered; an unknown index is an error."""
    greetings = card.greetings()
    if not 0 <= index < len(greetings):
        raise InputError(
            f"the card has greetings 0..{len(greetings) - 1} (0 = first_mes), got {index}",
            field="greeting",
        )
    return render_macros(greetings[index], macros, part=f"greeting.{index}").strip()


def write_greeting(
    session: Session, *, save_id: int, role: Role, text: str, now: datetime | None = None
) -> Line | None:
    """Write ``text`` as the first line of an empty save, in the caller's transaction.

    Returns the line, or None when the save already has lines (or ``text`` is blank). Safe
    against a concurrent writer: the save row is locked while it is still empty.
    """
    if not text.strip():
        return None
    locked = session.execute(
        update(Save)
        .where(col(Save.id) == save_id, col(Save.last_message_id).is_(None))
        .values(updated_at=Save.updated_at)
        .returning(col(Save.id))
        .execution_options(synchronize_session=False)
    ).first()
    if locked is None:
        return None
    [line] = write_turn(
        session,
        save_id=save_id,
        turn_id=f"greeting:{save_id}",
        user_lines=[],
        reply_segments=[ReplySegment(content=text)],
        role_id=role.id,
        display_name=role.name,
        now=now,
    )
    return line


def start_conversation(
    engine: Engine,
    role_name: str,
    scope_id: str,
    *,
    index: int = 0,
    user: str = "",
    now: datetime | None = None,
) -> tuple[Line | None, str]:
    """Open the conversation of ``role_name`` in ``scope_id`` with greeting ``index``.

    Returns (the line written, or None when the conversation already has lines; the text).
    The character must have a card; an unknown name or index is an ``InputError``.
    """
    with Session(engine, expire_on_commit=False) as s:
        role = s.exec(select(Role).where(Role.name == role_name.strip())).first()
        if role is None or role.id is None:
            raise InputError(f"no character named {role_name!r}", field="name")
        if not role.card:
            raise InputError(f"{role_name!r} has no character card (no greetings)", field="name")
        card = CardData.model_validate(role.card)
        stamp = now or utcnow()
        macros = MacroContext(
            char=card.nickname.strip() or role.name,
            user=user or "用户",
            now=stamp,
            seed=f"greeting:{scope_id}",
            chat_seed=scope_id,
        )
        text = greeting_text(card, index, macros)
        save = get_or_create_save(s, role_id=role.id, scope_id=scope_id)
        assert save.id is not None
        line = write_greeting(s, save_id=save.id, role=role, text=text, now=stamp)
        s.commit()
        return line, text
