"""Every QQ bot event of the shared corpus (``../shared/corpus/qqbot_*.json``: the official
docs' examples and payloads captured from a live bot) parses as the protocol says, and every
chat message gets the passive-reply destination the protocol names. Expectations are computed
from the raw JSON by the protocol's rules, independently of the adapter."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlmodel import Session, select

from nekoflow.channels.adapters import get_adapter
from nekoflow.delivery.registry import destination_for
from nekoflow.platforms.qqbot.crypto import validation_answer, verify
from nekoflow.platforms.qqbot.rules import message_body, message_path
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from tests.corpus import CORPUS, corpus_event

CHAT_TYPES = {
    "C2C_MESSAGE_CREATE",
    "GROUP_AT_MESSAGE_CREATE",
    "DIRECT_MESSAGE_CREATE",
    "AT_MESSAGE_CREATE",
    "MESSAGE_CREATE",
}


def _events() -> list[tuple[str, dict[str, Any]]]:
    """(name, payload) of every corpus payload, docs' ``d`` bodies wrapped as op 0 dispatches."""
    if not CORPUS.is_dir():
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CORPUS.glob("qqbot_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "dispatch_d_payloads" in data:
            types = data["event_types_in_order"]
            for kind, item in zip(types, data["dispatch_d_payloads"], strict=True):
                out.append((f"{path.stem}:{kind}", {"op": 0, "t": kind, "d": item["d"]}))
            for i, payload in enumerate(data["gateway_payloads"]):
                out.append((f"{path.stem}:gateway{i}", payload))
        else:
            out += [(f"{path.stem}:{key}", event) for key, event in data.items()]
    return out


EVENTS = _events()
BY_NAME = dict(EVENTS)


def test_corpus_is_there() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent")
    assert len(EVENTS) >= 20


def _readable(event: dict[str, Any]) -> bool:
    """Text or an attachment, or an AT event (a mention of the bot): a turn by the protocol's
    fields; a C2C card/ark (empty content, no attachment) is none of these."""
    d = event["d"]
    if event["t"] in ("GROUP_AT_MESSAGE_CREATE", "AT_MESSAGE_CREATE"):
        return True
    return bool(str(d.get("content", "")).strip() or d.get("attachments"))


def _expected_destination(event: dict[str, Any]) -> tuple[str, str, str]:
    """(platform, send path, reply_to) by the protocol's rules."""
    t, d = event["t"], event["d"]
    if t == "C2C_MESSAGE_CREATE":
        return "qqbot", f"/v2/users/{d['author']['user_openid']}/messages", d["id"]
    if t in ("GROUP_AT_MESSAGE_CREATE", "GROUP_MESSAGE_CREATE"):
        return "qqbot", f"/v2/groups/{d['group_openid']}/messages", d["id"]
    if t == "DIRECT_MESSAGE_CREATE":
        return "qqbot-guild", f"/dms/{d['guild_id']}/messages", d["id"]
    return "qqbot-guild", f"/channels/{d['channel_id']}/messages", d["id"]


@pytest.mark.parametrize(("name", "event"), EVENTS, ids=[n for n, _ in EVENTS])
def test_corpus_event_parses_as_the_protocol_says(name: str, event: dict[str, Any]) -> None:
    adapter = get_adapter("qqbot")
    req = adapter.parse_event(event)
    if event.get("op") != 0 or event.get("t") not in CHAT_TYPES:
        assert req is None, name  # hello, ack, READY/RESUMED, validation, notices
        return
    if not _readable(event):
        assert req is None, name  # nothing the character can read: not a turn
        return
    assert req is not None, name
    d = event["d"]
    assert req.message_id == d["id"]
    assert req.content == str(d.get("content", "")).strip()
    platform, path, reply_to = _expected_destination(event)
    dest = destination_for("qqbot", req, "neko")
    assert dest is not None, name
    assert (dest.platform, message_path(dest), dest.reply_to) == (platform, path, reply_to)
    assert dest.extra["msg_ts"] == str(d["timestamp"])
    if platform == "qqbot":  # v2 passive reply: msg_id + msg_seq per chunk
        assert message_body(dest, 1, "喵") == {
            "content": "喵",
            "msg_type": 0,
            "msg_seq": 2,
            "msg_id": d["id"],
        }
        scene = "group" if "group_openid" in d else "private"
        assert req.scene == scene
        assert req.is_mentioned == (scene == "group")


def test_corpus_validation_request_is_answered_and_signed() -> None:
    validations = [e for _, e in EVENTS if e.get("op") == 13]
    if not validations:
        pytest.skip("no op 13 payload in the corpus")
    for event in validations:
        d = event["d"]
        answer = validation_answer("naOC0ocQE3shWLAfffVLB1rhYPG7", d["plain_token"], d["event_ts"])
        assert answer["plain_token"] == d["plain_token"]
        message = (d["event_ts"] + d["plain_token"]).encode()
        assert verify("naOC0ocQE3shWLAfffVLB1rhYPG7", answer["signature"], "", message) is False
        ts, rest = message[: len(d["event_ts"])], message[len(d["event_ts"]) :]
        assert verify("naOC0ocQE3shWLAfffVLB1rhYPG7", answer["signature"], ts.decode(), rest)


def _corpus(name: str) -> dict[str, Any]:
    return corpus_event(BY_NAME, name)


def test_card_without_text_is_skipped_not_answered(deps: TurnDeps) -> None:
    # a friend card sent in C2C: empty content, no attachment, only an ark the bot cannot read
    card = _corpus("qqbot_lrobot_lr232_captures:好友卡片")
    assert card["d"]["content"] == "" and "attachments" not in card["d"]
    assert get_adapter("qqbot").parse_event(card) is None
    handle = submit_turn(deps, "qqbot", card)
    assert (handle.status(), handle.reason) == ("skipped", "not a chat message")
    with Session(deps.engine) as s:
        assert s.exec(select(TurnRun)).all() == []
    # the same capture's text and image messages are still turns
    for name in ("群聊消息", "私聊图片"):
        handle = submit_turn(deps, "qqbot", _corpus(f"qqbot_lrobot_lr232_captures:{name}"))
        assert handle.status() == "queued", name
