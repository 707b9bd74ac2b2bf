"""Pure helpers of the OpenAI client: Retry-After parsing and chat-completion body parsing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nekoflow.llm import (
    LLMBadResponseError,
    LLMRateLimitError,
    LLMServerError,
    parse_chat_completion,
    parse_retry_after,
    retry_after_from_headers,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("12", 12.0),
        (" 3 ", 3.0),
        ("1.5", 1.5),
        ("Thu, 01 Jan 2026 12:00:30 GMT", 30.0),
        ("Thu, 01 Jan 2026 11:00:00 GMT", 0.0),
        ("-5", None),
        ("nan", None),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


@given(st.integers(min_value=0, max_value=10**6))
def test_delay_seconds_round_trip(seconds: int) -> None:
    assert parse_retry_after(str(seconds)) == float(seconds)


@given(st.integers(min_value=0, max_value=10**6))
def test_http_dates_give_the_seconds_until_then(seconds: int) -> None:
    when = format_datetime(NOW + timedelta(seconds=seconds), usegmt=True)
    assert parse_retry_after(when, now=NOW) == float(seconds)


@given(st.text())
def test_parse_retry_after_never_raises(value: str) -> None:
    result = parse_retry_after(value, now=NOW)
    assert result is None or result >= 0


def test_retry_after_ms_wins_and_headers_are_case_insensitive() -> None:
    assert retry_after_from_headers({"Retry-After-Ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after_from_headers({"retry-after-ms": "junk", "RETRY-AFTER": "9"}) == 9.0
    assert retry_after_from_headers({}) is None


def body(**choice_message: object) -> str:
    return json.dumps(
        {
            "model": "m-served",
            "choices": [{"message": {"role": "assistant", **choice_message}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
    )


def test_parse_a_minimal_completion() -> None:
    result = parse_chat_completion(body(content="hi"), default_model="m", latency_ms=12.5)
    assert (result.text, result.model, result.prompt_tokens, result.completion_tokens) == (
        "hi",
        "m-served",
        3,
        4,
    )
    assert result.finish_reason is None
    assert result.latency_ms == 12.5


def test_empty_string_content_is_a_valid_reply() -> None:
    assert parse_chat_completion(body(content="")).text == ""


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "3", "completion_tokens": -1},
        {"prompt_tokens": True, "completion_tokens": 1.5},
        "lots",
        None,
    ],
)
def test_unusable_usage_fields_become_none(usage: object) -> None:
    raw = json.dumps({"choices": [{"message": {"content": "x"}}], "usage": usage})
    result = parse_chat_completion(raw, default_model="m")
    assert result.prompt_tokens is None
    assert result.completion_tokens is None
    assert result.model == "m"


def test_integral_float_token_counts_are_accepted() -> None:
    raw = json.dumps({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 5.0}})
    assert parse_chat_completion(raw).prompt_tokens == 5


def test_refusal_is_a_bad_response_that_says_so() -> None:
    with pytest.raises(LLMBadResponseError, match="refused") as info:
        parse_chat_completion(body(content=None, refusal="I can't help with that"))
    assert info.value.detail == "I can't help with that"


def test_legacy_text_choice_is_accepted() -> None:
    raw = json.dumps({"choices": [{"text": "old style", "finish_reason": "length"}]})
    result = parse_chat_completion(raw)
    assert (result.text, result.finish_reason) == ("old style", "length")


def test_error_object_without_a_status_code_is_a_bad_response() -> None:
    with pytest.raises(LLMBadResponseError, match="error object") as info:
        parse_chat_completion(json.dumps({"error": {"message": "boom"}}))
    assert info.value.detail == "boom"
    with pytest.raises(LLMBadResponseError, match="error object") as info:
        parse_chat_completion(json.dumps({"error": "plain"}))
    assert info.value.detail == "plain"


def test_error_object_status_codes_map_like_http() -> None:
    with pytest.raises(LLMRateLimitError):
        parse_chat_completion(json.dumps({"error": {"code": 429, "message": "slow"}}))
    with pytest.raises(LLMServerError):
        parse_chat_completion(json.dumps({"error": {"code": 502, "message": "down"}}))


def test_bytes_payloads_and_utf8() -> None:
    raw = body(content="【开心】你好").encode("utf-8")
    assert parse_chat_completion(raw).text == "【开心】你好"
    with pytest.raises(LLMBadResponseError, match="not JSON"):
        parse_chat_completion(b"\xff\xfe\x00garbage")


@given(st.text(max_size=200))
def test_arbitrary_bodies_give_a_result_or_a_typed_error(raw: str) -> None:
    try:
        result = parse_chat_completion(raw)
    except (LLMBadResponseError, LLMServerError, LLMRateLimitError):
        return
    assert isinstance(result.text, str)
