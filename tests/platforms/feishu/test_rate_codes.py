"""Feishu rate-limit codes against the loopback fake: a reply refused with 11232 (the
platform's peak-time limit) is retried later and then delivered once."""

from __future__ import annotations

import pytest

from nekoflow.delivery.base import Chunk, Destination, RetryLater
from nekoflow.platforms.feishu.client import FeishuError
from nekoflow.platforms.feishu.sender import FeishuSender
from tests.platforms.feishu.fake_feishu import FakeFeishu


def _dest(message_id: str) -> Destination:
    return Destination(
        platform="feishu", bot="neko", chat_type="group", chat_id="oc_1", reply_to=message_id
    )


def test_11232_is_retried_later_with_the_reset_wait(
    sender: FeishuSender, fake_fs: FakeFeishu
) -> None:
    chunk = Chunk(index=0, kind="text", payload={"content": "喵"})
    fake_fs.fail_next("om_1", 400, 11232, reset="2")
    with pytest.raises(RetryLater, match="error 11232") as err:
        sender.send(_dest("om_1"), chunk, key="t1:0")
    assert err.value.retry_after == 2.0 and fake_fs.texts("om_1") == []
    sender.send(_dest("om_1"), chunk, key="t1:0")
    assert fake_fs.texts("om_1") == ["喵"]


def test_other_codes_stay_permanent(sender: FeishuSender, fake_fs: FakeFeishu) -> None:
    fake_fs.fail_next("om_2", 400, 230002)
    with pytest.raises(FeishuError, match="bot not in the chat"):
        sender.send(_dest("om_2"), Chunk(index=0, kind="text", payload={"content": "喵"}), key="k")
