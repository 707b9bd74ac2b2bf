"""A reply to a message the user recalled (code 230011) goes to the chat as a plain send with
the same uuid, so it arrives once even when resent; other reply errors stay as they were."""

from __future__ import annotations

import pytest

from nekoflow.delivery.base import Chunk, Destination
from nekoflow.platforms.feishu.client import FeishuError
from nekoflow.platforms.feishu.sender import FeishuSender
from tests.platforms.feishu.fake_feishu import FakeFeishu


def _dest(message_id: str, thread: str | None = None) -> Destination:
    return Destination(
        platform="feishu",
        bot="neko",
        chat_type="group",
        chat_id="oc_9",
        reply_to=message_id,
        thread_id=thread,
    )


def _chunk(i: int) -> Chunk:
    return Chunk(index=i, kind="text", payload={"content": f"喵{i}"})


def test_reply_to_a_recalled_message_goes_to_the_chat(
    sender: FeishuSender, fake_fs: FakeFeishu
) -> None:
    fake_fs.recall("om_gone")
    ids = [sender.send(_dest("om_gone", "omt_1"), _chunk(i), key=f"t9:{i}") for i in (0, 1)]
    assert all(r.platform_message_id for r in ids)
    assert fake_fs.replies("om_gone") == []
    sent = fake_fs.chat_sends("oc_9")
    assert [b["uuid"] for b in sent] == ["t9:0", "t9:1"]
    assert [b["receive_id"] for b in sent] == ["oc_9", "oc_9"]
    assert all("reply_in_thread" not in b for b in sent)
    # a resend of the fallback (dead worker) carries the same uuid and arrives once
    again = sender.send(_dest("om_gone"), _chunk(0), key="t9:0")
    assert again.platform_message_id == ids[0].platform_message_id
    assert len(fake_fs.chat_sends("oc_9")) == 2


def test_other_reply_errors_do_not_fall_back(sender: FeishuSender, fake_fs: FakeFeishu) -> None:
    fake_fs.fail_next("om_3", 400, 230002)
    with pytest.raises(FeishuError, match="bot not in the chat"):
        sender.send(_dest("om_3"), _chunk(0), key="t10:0")
    assert fake_fs.chat_sends("oc_9") == []
