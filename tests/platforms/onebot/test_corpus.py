"""Every OneBot event of the shared corpus (``../shared/corpus/onebot_*.json``: NapCat's docs,
live NapCat captures, nonebot's fixtures, a wscat capture) parses as OneBot v11 says, and every
chat message gets the destination a reply needs. Expectations are computed from the raw JSON by
the protocol's rules, independently of the adapter; then the issue's cases one by one."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from nekoflow.channels.adapters.qq import QQChannelAdapter
from nekoflow.delivery.registry import destination_for
from nekoflow.errors import InputError
from tests.corpus import CORPUS, corpus_event

MEDIA = ("image", "record", "video", "file")


def _events() -> list[tuple[str, Any]]:
    if not CORPUS.is_dir():
        return []
    out: list[tuple[str, Any]] = []
    for path in sorted(CORPUS.glob("onebot_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data.items() if isinstance(data, dict) else enumerate(data)
        out += [(f"{path.stem}:{key}", event) for key, event in items]
    return out


EVENTS = _events()
BY_NAME = dict(EVENTS)


def _segments(event: dict[str, Any]) -> list[dict[str, Any]]:
    """OneBot v11: ``message`` is a segment array or a CQ-code string (the ``raw_message`` form)."""
    message = event.get("message")
    if message in (None, [], ""):
        message = event.get("raw_message") or ""
    if isinstance(message, list):
        return message
    out: list[dict[str, Any]] = []
    for text, code, params in re.findall(r"([^\[]*)(?:\[CQ:([^,\]]+)([^\]]*)\])?", message):
        if text:
            out.append({"type": "text", "data": {"text": text}})
        if code:
            data = dict(p.split("=", 1) for p in params.split(",")[1:])
            out.append({"type": code, "data": data})
    return out


def _expected(event: dict[str, Any]) -> dict[str, Any] | None:
    if event.get("post_type") != "message" or event.get("message_type") not in ("private", "group"):
        return None
    if str(event.get("user_id")) == str(event.get("self_id")):
        return None
    group = event["message_type"] == "group"
    segments = _segments(event)
    text = "".join(s["data"].get("text", "") for s in segments if s["type"] == "text")
    media = [s for s in segments if s["type"] in MEDIA]
    at = {str(s["data"].get("qq")) for s in segments if s["type"] == "at"}
    mentioned = group and bool(at & {str(event.get("self_id")), "all"})
    if not text.strip() and not media and not mentioned:
        return None
    return {"group": group, "media": media, "mentioned": mentioned}


def test_corpus_is_there() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent")
    assert len(EVENTS) >= 30


@pytest.mark.parametrize(("name", "event"), EVENTS, ids=[n for n, _ in EVENTS])
def test_every_event_parses_as_onebot_v11_says(name: str, event: dict[str, Any]) -> None:
    adapter = QQChannelAdapter()
    if event.get("post_type") == "message" and "message_type" not in event:
        with pytest.raises(InputError) as err:  # the docs' bare "base fields" fragment
            adapter.parse_event(event)
        assert err.value.field == "message_type"
        return
    expected = _expected(event)
    request = adapter.parse_event(event)
    if expected is None:
        assert request is None
        return
    assert request is not None
    group_id, user_id = str(event.get("group_id")), str(event["user_id"])
    assert request.conversation_id == (
        f"qq:group:{group_id}" if expected["group"] else f"qq:private:{user_id}"
    )
    assert request.is_mentioned is expected["mentioned"]
    assert len(request.attachments) == len(expected["media"])
    for attachment, segment in zip(request.attachments, expected["media"], strict=True):
        data = segment["data"]
        assert attachment.file_id == str(data.get("file_id") or data.get("file"))
    dest = destination_for("qq", request, None)
    assert dest is not None and dest.platform == "onebot"
    # the docs' minimal events have no self_id
    assert dest.bot == (str(event["self_id"]) if "self_id" in event else "")
    assert dest.chat_type == ("group" if expected["group"] else "private")
    assert dest.chat_id == (group_id if expected["group"] else user_id)


def _corpus(name: str) -> dict[str, Any]:
    return corpus_event(BY_NAME, name)


def test_napcat_group_file_keeps_the_real_file_id() -> None:
    request = QQChannelAdapter().parse_event(_corpus("onebot_lrobot_napcat_captures:群聊文件"))
    (file,) = request.attachments
    assert (file.type, file.file_id, file.name, file.size) == (
        "file",
        "/be2a7132-8e06-4aab-b3b6-e063d2f98230",
        "1.txt",
        3,
    )


def test_forward_only_message_is_not_a_turn() -> None:
    assert QQChannelAdapter().parse_event(_corpus("onebot_lrobot_napcat_captures:转发消息")) is None


@pytest.mark.parametrize(
    "segments",
    [
        [{"type": "json", "data": {"data": "{}"}}],
        [{"type": "mface", "data": {"emoji_id": "1", "summary": "[贴贴]"}}],
        [{"type": "forward", "data": {"id": "1"}}, {"type": "text", "data": {"text": "  "}}],
        [],
    ],
)
def test_messages_without_anything_readable_are_not_turns(segments: list) -> None:
    event = _corpus("onebot_lrobot_napcat_captures:私聊临时")
    event |= {"message": segments, "raw_message": ""}
    assert QQChannelAdapter().parse_event(event) is None


def test_empty_message_falls_back_to_raw_message() -> None:
    event = _corpus("onebot_lrobot_napcat_captures:私聊临时")
    event |= {"message": [], "raw_message": "[CQ:face,id=14]喵&#91;你好&#93;"}
    request = QQChannelAdapter().parse_event(event)
    assert request.content == "[表情]喵[你好]"


def test_at_bot_only_message_is_answered() -> None:
    event = _corpus("onebot_napcat_docs_examples:basic_event.md 2.2 群消息（OB11GroupMessage） #4")
    event["message"] = [{"type": "at", "data": {"qq": event["self_id"]}}]
    event["raw_message"] = f"[CQ:at,qq={event['self_id']}]"
    request = QQChannelAdapter().parse_event(event)
    assert request is not None and request.is_mentioned and request.content == ""
    unmentioned = dict(event, message=[{"type": "at", "data": {"qq": 5}}])
    assert QQChannelAdapter().parse_event(unmentioned).content == "@5"
