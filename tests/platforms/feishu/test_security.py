"""Feishu crypto and error mapping (pure): the docs' AES vector, round trips, wrong keys,
signatures, post/text content, and error codes → retry / permanent (never the msg text)."""

from __future__ import annotations

import json

import pytest

from nekoflow.delivery.base import RetryLater
from nekoflow.platforms.feishu.client import FeishuError, classify
from nekoflow.platforms.feishu.crypto import DecryptError, decrypt, encrypt, signature, token_ok
from nekoflow.platforms.feishu.sender import message_content


def test_decrypts_the_docs_example() -> None:
    assert decrypt("test key", "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=") == b"hello world"


def test_round_trip_and_wrong_keys() -> None:
    sealed = encrypt("k", "你好".encode())
    assert decrypt("k", sealed) == "你好".encode()
    with pytest.raises(DecryptError):
        decrypt("other", sealed)
    with pytest.raises(DecryptError):
        decrypt("k", "not base64!!")
    with pytest.raises(DecryptError):
        decrypt("k", "AAAA")


def test_signature_covers_every_part() -> None:
    base = signature("1", "n", "k", b"{}")
    assert len(base) == 64
    assert base != signature("2", "n", "k", b"{}")
    assert base != signature("1", "m", "k", b"{}")
    assert base != signature("1", "n", "j", b"{}")
    assert base != signature("1", "n", "k", b"{ }")
    assert token_ok("abc", "abc") and not token_ok("abd", "abc") and not token_ok(None, "abc")


def test_text_and_post_content() -> None:
    assert message_content("喵", "text") == ("text", json.dumps({"text": "喵"}, ensure_ascii=False))
    kind, content = message_content("**喵**", "post")
    assert kind == "post"
    assert json.loads(content) == {"zh_cn": {"content": [[{"tag": "md", "text": "**喵**"}]]}}


def test_error_codes() -> None:
    limited = classify("im", 429, {"code": 99991400, "msg": "secret words"}, "3")
    assert isinstance(limited, RetryLater) and limited.retry_after == 3.0
    assert isinstance(classify("im", 400, {"code": 230020}, None), RetryLater)
    peak = classify("im", 400, {"code": 11232, "msg": "frequency limited"}, "2")
    assert isinstance(peak, RetryLater) and peak.retry_after == 2.0  # peak-time rate limit
    assert isinstance(classify("im", 503, None, None), RetryLater)
    gone = classify("im", 400, {"code": 230002, "msg": "secret words"}, None)
    assert isinstance(gone, FeishuError) and "bot not in the chat" in gone.reason
    assert "secret words" not in gone.reason
