"""The Web session protocol: messages, non-message frames, validation errors."""

from __future__ import annotations

import pytest

from nekoflow.channels import WebChannelAdapter
from nekoflow.channels.errors import MalformedEventError


def test_web_message(event) -> None:
    request = WebChannelAdapter().parse_event(event("web_message"))
    assert request.channel == "web"
    assert (request.scene, request.conversation_id, request.user_id) == (
        "web_session",
        "sess-9f1c",
        "u-42",
    )
    assert (request.content, request.message_id) == ("晚上好", "m-1")
    assert request.sender.display_name == "访客"
    assert request.metadata["character_id"] == "neko"
    adapter = WebChannelAdapter()
    assert adapter.select_character_id(adapter.build_runtime_context(request)) == "neko"


def test_minimal_message_and_content_alias() -> None:
    request = WebChannelAdapter().parse_event({"session_id": "s", "content": "hi"})
    assert (request.content, request.user_id) == ("hi", "")
    assert request.character_mode is None


def test_attachments_and_character_mode() -> None:
    request = WebChannelAdapter().parse_event(
        {
            "session_id": "s",
            "message": "看图",
            "character_mode": True,
            "attachments": [{"type": "image", "url": "https://cdn.example/a.png"}],
            "metadata": {"client": "web/1.2"},
        }
    )
    assert request.character_mode is True
    assert request.attachments[0].url == "https://cdn.example/a.png"
    assert request.metadata["client"] == "web/1.2"


@pytest.mark.parametrize("kind", ["ping", "typing", "read"])
def test_other_frames_give_none(kind) -> None:
    assert WebChannelAdapter().parse_event({"type": kind, "session_id": "s"}) is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"message": "hi"}, "session_id"),
        ({"session_id": "  ", "message": "hi"}, "session_id"),
        ({"session_id": "s", "message": ["hi"]}, "message"),
        ({"session_id": "s", "message": "hi", "attachments": [{"url": "x"}]}, "attachments.0.type"),
        ({"session_id": "s", "message": "hi", "metadata": "x"}, "metadata"),
        ({"type": 3, "session_id": "s"}, "type"),
    ],
)
def test_malformed_messages_name_the_field(raw, field) -> None:
    with pytest.raises(MalformedEventError) as err:
        WebChannelAdapter().parse_event(raw)
    assert err.value.field == field
