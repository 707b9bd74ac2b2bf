"""Streamed chat completions: the pure SSE assembly, and OpenAIChatModel.stream against a loopback
OpenAI-compatible server that really streams (chunked ``text/event-stream``), cuts, stalls and
errs; the scripted model's stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nekoflow.llm import (
    ChatResult,
    LLMBadResponseError,
    LLMClientError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    OpenAIChatModel,
    ScriptedChatModel,
    StreamingChatModel,
    complete_streaming,
)
from nekoflow.llm.streaming import SSEDecoder, StreamAssembler, assemble_lines
from tests.turns.llm_server import Answer, FakeLLM, completion

KEY = "sk-test-SECRET-stream-42"
TEXT = "【开心】你好呀莱姆<こんにちは>(摇尾巴)然后呢?"
MESSAGES = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "你好呀钦灵"},
]


def answer(text: str = TEXT, delay: float = 0.0) -> Answer:
    return 200, completion(text), {}, delay


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM(lambda body, n: answer()) as fake:
        yield fake


@pytest.fixture
def model(server: FakeLLM) -> Iterator[OpenAIChatModel]:
    m = OpenAIChatModel(server.base_url, "test-model", api_key=KEY, timeout=2, connect_timeout=1)
    yield m
    m.close()


class Collect(list):
    """An on_delta sink recording each delta."""

    def __call__(self, delta: str) -> None:
        self.append(delta)


# ------------------------------------------------------------------------------- pure parts


def test_sse_decoder_joins_data_lines_skips_comments_and_names_events() -> None:
    d = SSEDecoder()
    lines = [": keep-alive", 'data: {"a":', "data: 1}", "", "event: error", "data: x", "", ""]
    out = [e for line in lines for e in d.feed(line)]
    assert out == [("message", '{"a":\n1}'), ("error", "x")]
    assert list(d.feed("data:[DONE]")) == [] and list(d.flush()) == [("message", "[DONE]")]


def chunk(content: Any = None, finish: str | None = None, **extra: Any) -> str:
    import json

    delta = {} if content is None else {"content": content}
    body = {"model": "m1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return json.dumps({**body, **extra})


def test_assembler_builds_the_same_result_as_a_completion() -> None:
    a = StreamAssembler("fallback")
    got = [
        a.feed("message", chunk("")),
        a.feed("message", chunk("你好")),
        a.feed("message", chunk("呀")),
    ]
    assert got == ["", "你好", "呀"]
    a.feed("message", chunk(finish="stop"))
    a.feed("message", '{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}')
    a.feed("message", "[DONE]")
    r = a.result(latency_ms=12.0, first_token_ms=3.0)
    assert (r.text, r.model, r.finish_reason) == ("你好呀", "m1", "stop")
    assert (r.prompt_tokens, r.completion_tokens, r.total_tokens) == (5, 2, 7)
    assert r.first_token_ms == 3.0 and r.latency_ms == 12.0


def test_a_stream_cut_before_the_end_is_retryable_and_returns_nothing() -> None:
    seen = Collect()
    lines = [f"data: {chunk('你好')}", "", f"data: {chunk('呀')}", ""]
    with pytest.raises(LLMConnectionError) as info:
        assemble_lines(lines, seen)
    assert info.value.retryable and seen == ["你好", "呀"]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ('{"error": {"message": "overloaded", "type": "server_error"}}', LLMServerError),
        ('{"error": {"message": "slow down", "code": 429}}', LLMRateLimitError),
        ('{"error": {"message": "bad", "code": "invalid_request"}}', LLMBadResponseError),
        ("not json", LLMBadResponseError),
    ],
)
def test_error_events_are_typed(data: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        assemble_lines([f"data: {chunk('a')}", "", f"data: {data}", ""], Collect())


def test_a_finished_stream_without_text_is_a_bad_response() -> None:
    lines = [f"data: {chunk(finish='stop', **{'choices': []})}", "", "data: [DONE]", ""]
    with pytest.raises(LLMBadResponseError):
        assemble_lines(lines, Collect())


# ------------------------------------------------------------------ against a loopback server


def test_stream_sends_stream_options_and_matches_complete(
    server: FakeLLM, model: OpenAIChatModel
) -> None:
    assert isinstance(model, StreamingChatModel)
    seen = Collect()
    streamed = model.stream(MESSAGES, seen, temperature=0.3, max_tokens=64)
    plain = model.complete(MESSAGES, temperature=0.3, max_tokens=64)

    assert len(seen) > 3 and "".join(seen) == streamed.text == plain.text == TEXT
    for field in ("text", "model", "prompt_tokens", "completion_tokens", "finish_reason"):
        assert getattr(streamed, field) == getattr(plain, field), field
    assert streamed.prompt_tokens == 11 and streamed.completion_tokens == 7
    assert streamed.first_token_ms is not None and streamed.first_token_ms <= streamed.latency_ms
    body = server.calls[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.3 and body["max_tokens"] == 64
    assert "stream" not in server.calls[1]


def test_streamed_calls_reuse_the_connection(server: FakeLLM, model: OpenAIChatModel) -> None:
    for _ in range(3):
        assert model.stream(MESSAGES, Collect()).text == TEXT
    assert len(set(server.peers)) == 1, server.peers  # read to its end: back to the pool


def test_a_connection_cut_mid_stream_is_a_retryable_connection_error(
    server: FakeLLM, model: OpenAIChatModel
) -> None:
    server.cut_after[1] = 2
    seen = Collect()
    with pytest.raises(LLMConnectionError) as info:
        model.stream(MESSAGES, seen)
    assert info.value.retryable and "stream cut" in str(info.value)
    assert "".join(seen) == TEXT[:8]  # the two chunks sent; the call returned nothing
    assert KEY not in str(info.value) and KEY not in (info.value.detail or "")
    again = Collect()
    assert model.stream(MESSAGES, again).text == TEXT == "".join(again)


def test_a_stream_that_stalls_is_a_retryable_timeout() -> None:
    with FakeLLM(lambda body, n: answer(), chunk_delay=1.5) as fake:  # > the read timeout
        m = OpenAIChatModel(fake.base_url, "m", timeout=0.5, connect_timeout=0.5)
        seen = Collect()
        with pytest.raises(LLMTimeoutError) as info:
            m.stream(MESSAGES, seen)
        m.close()
    assert info.value.retryable and "stalled" in str(info.value)
    assert seen == [TEXT[:4]]  # the first piece came, then nothing within the timeout


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, LLMRateLimitError), (500, LLMServerError), (401, LLMClientError)],
)
def test_http_errors_are_typed_as_without_streaming(status: int, error: type[Exception]) -> None:
    def script(body: dict[str, Any], n: int) -> Answer:
        return status, {"error": {"message": f"nope {KEY}", "code": "x"}}, {}, 0.0

    with FakeLLM(script) as fake:
        m = OpenAIChatModel(fake.base_url, "m", api_key=KEY, timeout=2, connect_timeout=1)
        with pytest.raises(error) as info:
            m.stream(MESSAGES, Collect())
        m.close()
    assert info.value.status_code == status
    assert KEY not in str(info.value) and KEY not in (info.value.detail or "")


def test_a_server_that_ignores_stream_answers_one_delta(model: OpenAIChatModel) -> None:
    from pytest_httpserver import HTTPServer

    with HTTPServer() as http:
        http.expect_request("/v1/chat/completions").respond_with_json(completion(TEXT))
        m = OpenAIChatModel(http.url_for("/v1"), "m", timeout=2, connect_timeout=1)
        seen = Collect()
        result = m.stream(MESSAGES, seen)
        m.close()
    assert seen == [TEXT] and result.text == TEXT and result.prompt_tokens == 11


# ------------------------------------------------------------------------- other models


def test_scripted_model_streams_its_reply_in_pieces() -> None:
    model = ScriptedChatModel(seed=3)
    seen = Collect()
    streamed = model.stream(MESSAGES, seen)
    plain = model.complete(MESSAGES)
    assert len(seen) > 1 and "".join(seen) == streamed.text == plain.text
    assert streamed.model_dump(exclude={"latency_ms", "first_token_ms"}) == plain.model_dump(
        exclude={"latency_ms", "first_token_ms"}
    )


def test_complete_streaming_falls_back_to_one_delta() -> None:
    class Plain:
        name = "plain"

        def complete(self, messages: Any, **kw: Any) -> ChatResult:
            return ChatResult(text="整句话", model="plain")

    seen = Collect()
    assert complete_streaming(Plain(), MESSAGES, seen).text == "整句话" and seen == ["整句话"]
    scripted = Collect()
    result = complete_streaming(ScriptedChatModel(), MESSAGES, scripted)
    assert len(scripted) > 1 and "".join(scripted) == result.text
