"""validate_messages and content_text: the shared message checks of every ChatModel."""

from __future__ import annotations

from typing import Any

import pytest

from nekoflow.errors import InputError
from nekoflow.llm import ChatResult, content_text, validate_messages


def test_valid_messages_are_copied() -> None:
    original = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "r", "tool_call_id": "1"},
    ]
    checked = validate_messages(tuple(original))
    assert checked == original
    assert checked[0] is not original[0]


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        (None, "messages"),
        ({"role": "user", "content": "x"}, "messages"),
        (b"x", "messages"),
        ([], "messages"),
        (["hello"], "messages[0]"),
        ([{"content": "x"}], "messages[0].role"),
        ([{"role": "User", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        ([{"role": "user", "content": ["x"]}], "messages[0].content"),
        ([{"role": "assistant", "content": None}], "messages[0].content"),
    ],
)
def test_bad_messages_name_the_field(messages: Any, field: str) -> None:
    with pytest.raises(InputError) as info:
        validate_messages(messages)
    assert info.value.field == field
    assert str(info.value).startswith(field)


def test_content_text() -> None:
    assert content_text("abc") == "abc"
    assert content_text(None) == ""
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, {"text": "b"}]
    assert content_text(parts) == "ab"


def test_chat_result_total_tokens() -> None:
    assert ChatResult(text="x", prompt_tokens=2, completion_tokens=3).total_tokens == 5
    assert ChatResult(text="x", prompt_tokens=2).total_tokens is None
