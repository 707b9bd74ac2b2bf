"""The user's words as the turn sees them: text, then a placeholder per attachment, so an image
sent with text is not invisible to the model (prompt, user line, review)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlmodel import Session

from nekoflow.channels import CharacterRuntimeContextDispatcher, ChatRequest
from nekoflow.channels.context import Attachment
from nekoflow.llm import ScriptedChatModel
from nekoflow.memory.history import load_history
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.models import DispatchResult
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import turn_user_text, user_text
from tests.corpus import corpus_file


def _req(content: str, *kinds: str) -> ChatRequest:
    return ChatRequest(
        channel="qq",
        conversation_id="qq:group:1",
        user_id="2",
        content=content,
        attachments=[Attachment(type=kind) for kind in kinds],
    )


@pytest.mark.parametrize(
    ("content", "kinds", "expected"),
    [
        ("你好", (), "你好"),  # no attachment: the text exactly as sent
        ("  你好\n", (), "  你好\n"),
        ("", ("image",), "[image]"),
        ("  ", ("image", "file"), "[image][file]"),
        ("", (), "…"),
        ("[棒]🔥123", ("image",), "[棒]🔥123 [image]"),
        ("看这个", ("image", "video"), "看这个 [image][video]"),
    ],
)
def test_user_text_puts_attachment_placeholders_after_the_text(
    content: str, kinds: tuple[str, ...], expected: str
) -> None:
    assert user_text(_req(content, *kinds)) == expected


def test_merged_messages_each_keep_their_placeholders() -> None:
    first = _req("先看图", "image")
    second = _req("怎么样")
    sent_at = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    d = DispatchResult(
        role_id=1,
        role_name="钦灵",
        save_id=1,
        scope_id="qq:group:1",
        merged=[{"request": second.model_dump(mode="json"), "sent_at": sent_at}],
    )
    assert turn_user_text(first, d) == "先看图 [image]\n怎么样"
    assert turn_user_text(first, None) == "先看图 [image]"


class RecordingModel(ScriptedChatModel):
    """The scripted model, remembering the messages of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[list[dict[str, Any]]] = []

    def complete(self, messages: Sequence[Any], **kwargs: Any) -> Any:
        """Record ``messages`` and answer as the scripted model does."""
        self.sent.append([dict(m) for m in messages])
        return super().complete(messages, **kwargs)


def test_napcat_group_image_with_text_reaches_the_model(deps: TurnDeps) -> None:
    path = corpus_file("onebot_lrobot_napcat_captures.json")
    event = json.loads(path.read_text(encoding="utf-8"))["群聊表情图片"]
    deps.dispatcher = CharacterRuntimeContextDispatcher(
        {"character_runtime_qq": {"trigger": "always"}}  # the capture does not @ the bot
    )
    deps.chat_model = model = RecordingModel()
    handle = submit_turn(deps, "qq", event)
    assert handle.status() == "queued"
    req = ChatRequest.model_validate(handle.run().request)
    assert req.content == "[棒]🔥123" and [a.type for a in req.attachments] == ["image"]
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    said = [m["content"] for m in model.sent[0] if m["role"] == "user"]
    assert said[-1] == "[棒]🔥123 [image]"
    with Session(deps.engine) as s:
        run = s.get(TurnRun, handle.turn_id)
        users = [line for line in load_history(s, run.save_id) if line.attribute == "user"]
    assert [line.content for line in users] == ["[棒]🔥123 [image]"]
