"""Voice chunks through the QQ official bot and Feishu senders against their loopback fakes
(the Telegram and OneBot ones run end to end in ``test_voice_workers``): QQ uploads SILK as
rich media (file_type 3) and sends ``msg_type`` 7 deduplicated by ``msg_seq``; Feishu uploads
Ogg/Opus (file_type ``opus``) and sends ``msg_type`` audio deduplicated by ``uuid``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest

from nekoflow.delivery.base import Chunk, Destination, PermanentFailure
from nekoflow.platforms.feishu.sender import FeishuSender
from nekoflow.platforms.onebot.protocol import send_msg
from nekoflow.platforms.qqbot.client import QQBotClient, fetch_access_token
from nekoflow.platforms.qqbot.sender import QQBotSender
from nekoflow.platforms.tokens import LocalTokenCache
from nekoflow.speech.convert import wav_to_silk
from tests.platforms.feishu.conftest import fake_fs, sender  # noqa: F401  (fixtures)
from tests.platforms.feishu.fake_feishu import FakeFeishu
from tests.platforms.qqbot.conftest import APP_ID, SECRET
from tests.platforms.qqbot.fake_qq import FakeQQ
from tests.speech.speech_server import wav_bytes

NOW = 1_750_000_000.0
OPUS = b"OggS\x00\x02OpusHead" + b"\x00" * 32


def _voice(index: int, audio: bytes, fmt: str) -> Chunk:
    mime = "audio/silk" if fmt == "silk" else "audio/ogg"
    payload = {"type": "voice", "part": 0, "audio": audio, "format": fmt, "mime": mime}
    return Chunk(index=index, kind="voice", payload=payload | {"duration_ms": 1200})


@pytest.fixture
def fake_qq() -> Iterator[FakeQQ]:
    fake = FakeQQ(APP_ID, SECRET)
    yield fake
    fake.close()


@pytest.fixture
def qq_sender(fake_qq: FakeQQ) -> Iterator[QQBotSender]:
    http = httpx.Client(timeout=5)
    tokens = LocalTokenCache(lambda: fetch_access_token(http, fake_qq.token_url, APP_ID, SECRET))
    client = QQBotClient(tokens, base_url=fake_qq.url, timeout=5)
    yield QQBotSender(client, clock=lambda: NOW)
    client.close()
    http.close()


def test_qq_bot_voice_is_silk_rich_media_sent_once(fake_qq: FakeQQ, qq_sender: QQBotSender):
    dest = Destination(
        platform="qqbot",
        bot="neko",
        chat_type="c2c",
        chat_id="U1",
        reply_to="m1",
        extra={"msg_ts": str(NOW - 5)},
    )
    chunk = _voice(2, wav_to_silk(wav_bytes()), "silk")
    qq_sender.send(dest, chunk, key="t:2")
    qq_sender.send(dest, chunk, key="t:2")  # a resend (worker lost): the platform dedupes it
    (upload, _) = [c.body for c in fake_qq.calls("/v2/users/U1/files")]
    assert upload["file_type"] == 3 and upload["srv_send_msg"] is False
    assert base64.b64decode(upload["file_data"]).startswith(b"\x02#!SILK_V3")
    (message,) = fake_qq.sent("U1")
    assert message["msg_type"] == 7 and message["msg_seq"] == 3 and message["msg_id"] == "m1"
    assert message["media"]["file_info"] in fake_qq.state.files
    assert fake_qq.state.duplicates == 1
    with pytest.raises(PermanentFailure):  # not silk: refused before any upload
        qq_sender.send(dest, _voice(3, b"ID3", "mp3"), key="t:3")
    guild = dest.model_copy(update={"chat_type": "channel"})
    with pytest.raises(PermanentFailure):
        qq_sender.send(guild, chunk, key="t:4")


def test_feishu_voice_is_an_uploaded_opus_audio_message(
    fake_fs: FakeFeishu,  # noqa: F811
    sender: FeishuSender,  # noqa: F811
) -> None:
    dest = Destination(platform="feishu", bot="neko", chat_type="p2p", chat_id="oc_1")
    sender.send(dest, _voice(1, OPUS, "ogg_opus"), key="turn-f:1")
    sender.send(dest, _voice(1, OPUS, "ogg_opus"), key="turn-f:1")  # resent: same uuid
    (sent,) = fake_fs.chat_sends("oc_1")
    assert sent["msg_type"] == "audio" and sent["uuid"] == "turn-f:1"
    key = json.loads(sent["content"])["file_key"]
    assert fake_fs.state.files[key] == OPUS
    uploads = [b for m, p, b in fake_fs.state.calls if p == "/open-apis/im/v1/files"]
    assert uploads[0]["file_type"] == "opus" and uploads[0]["duration"] == "1200"


def test_onebot_voice_is_a_record_segment() -> None:
    dest = Destination(platform="onebot", bot="1", chat_type="group", chat_id="42", reply_to="9")
    params = send_msg(dest, _voice(1, b"ID3\x04mp3", "mp3"))
    assert params["message"] == [
        {"type": "record", "data": {"file": "base64://" + base64.b64encode(b"ID3\x04mp3").decode()}}
    ]  # the quote goes with the first text chunk only
    assert (params["message_type"], params["group_id"]) == ("group", 42)
