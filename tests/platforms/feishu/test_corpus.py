"""Every Feishu event of the shared corpus (``../shared/corpus/feishu_*.json``: nonebot's
samples and the official docs' ``im.*`` examples) parses as the protocol says — also after the
encrypt-and-sign round trip Feishu applies with an Encrypt Key — and every received message
gets a reply destination naming its message id. Expectations come from the raw JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlmodel import Session, select

from nekoflow.channels.adapters import get_adapter
from nekoflow.delivery.registry import destination_for
from nekoflow.platforms.feishu.crypto import decrypt, encrypt, signature, signature_ok
from nekoflow.storage.turns import TurnRun
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from tests.corpus import CORPUS, corpus_event


def _events() -> list[tuple[str, dict[str, Any]]]:
    if not CORPUS.is_dir():
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CORPUS.glob("feishu_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data.items() if isinstance(data, dict) else enumerate(data)
        out += [(f"{path.stem}:{key}", event) for key, event in items]
    return out


EVENTS = _events()
BY_NAME = dict(EVENTS)


def test_corpus_is_there() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent")
    assert len(EVENTS) >= 15


@pytest.mark.parametrize(("name", "event"), EVENTS, ids=[n for n, _ in EVENTS])
def test_corpus_event_parses_as_the_protocol_says(name: str, event: dict[str, Any]) -> None:
    body = json.dumps({"encrypt": encrypt("k3y", json.dumps(event).encode())}).encode()
    sig = signature("1700000000", "nonce", "k3y", body)
    assert signature_ok(sig, "1700000000", "nonce", "k3y", body)
    assert not signature_ok(sig, "1700000001", "nonce", "k3y", body)
    plain = json.loads(decrypt("k3y", json.loads(body)["encrypt"]))
    assert plain == event
    if plain.get("type") == "url_verification":
        assert get_adapter("feishu").parse_event(plain) is None
        assert get_adapter("feishu").parse_challenge(plain) == event["challenge"]
        return
    header = plain["header"]
    message = plain.get("event", {}).get("message")
    mentions = (message or {}).get("mentions") or []
    bot_id = mentions[0]["id"]["open_id"] if mentions else None
    req = get_adapter("feishu", bot_open_id=bot_id).parse_event(plain)
    if header["event_type"] != "im.message.receive_v1":
        assert req is None, name
        return
    assert req is not None
    assert req.message_id == message["message_id"]
    assert req.conversation_id == message["chat_id"]
    assert req.scene == ("private" if message["chat_type"] == "p2p" else "group")
    assert req.is_mentioned == (bool(mentions) and message["chat_type"] != "p2p")
    assert "@_user_1" not in req.content
    dest = destination_for("feishu", req, "neko")
    assert dest is not None
    assert (dest.platform, dest.chat_id, dest.reply_to) == (
        "feishu",
        message["chat_id"],
        message["message_id"],
    )
    assert dest.thread_id == (message.get("thread_id") or None)


#: Message types the adapter does not read, with content as Feishu's "receive message content"
#: documents it (a merge_forward's content also comes as the bare, non-JSON string).
UNREADABLE = [
    ("share_chat", json.dumps({"chat_id": "oc_0dd200d32fda15216d2c2ef1ddb32f76"})),
    ("share_user", json.dumps({"user_id": "ou_0dd200d32fda15216d2c2ef1ddb32f76"})),
    (
        "interactive",
        json.dumps(
            {"title": "", "elements": [[{"tag": "button", "text": "查看"}]]}, ensure_ascii=False
        ),
    ),
    (
        "location",
        json.dumps(
            {"name": "故宫博物院", "longitude": "116.397755", "latitude": "39.916345"},
            ensure_ascii=False,
        ),
    ),
    ("merge_forward", json.dumps({"content": "Merged and Forwarded Message"})),
    ("merge_forward", "Merged and Forwarded Message"),
]


def _receive_event() -> dict[str, Any]:
    return corpus_event(BY_NAME, "feishu_official_doc_events:Test_ImMessageReceiveV1EventBodyDto")


@pytest.mark.parametrize(("message_type", "content"), UNREADABLE)
def test_message_without_anything_readable_is_skipped(
    deps: TurnDeps, message_type: str, content: str
) -> None:
    event = _receive_event()
    message = event["event"]["message"]
    message["message_type"] = message_type
    message["content"] = content
    message.pop("mentions")  # only text and post messages carry mentions
    assert get_adapter("feishu").parse_event(event) is None
    handle = submit_turn(deps, "feishu", event)
    assert (handle.status(), handle.reason) == ("skipped", "not a chat message")
    with Session(deps.engine) as s:
        assert s.exec(select(TurnRun)).all() == []


def test_the_corpus_text_message_is_still_a_turn(deps: TurnDeps) -> None:
    handle = submit_turn(deps, "feishu", _receive_event())
    assert handle.status() == "queued"
    assert handle.run().request["content"] == "@Tom hello"
