"""OpenAIChatModel against a real chat-completions server on loopback (pytest-httpserver).

Covers success (request body, usage, model name), 429 with Retry-After, 5xx, non-retryable 4xx,
timeout, connection refused, malformed 200 bodies, no SDK retries, and that the API key never
appears in an error message.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from nekoflow.errors import ConfigError, InputError
from nekoflow.llm import (
    ChatModel,
    LLMBadResponseError,
    LLMClientError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    OpenAIChatModel,
)
from nekoflow.llm.openai_client import NO_KEY_PLACEHOLDER
from nekoflow.settings import Settings

PATH = "/v1/chat/completions"
KEY = "sk-test-SECRET-0123456789"
MESSAGES = [
    {"role": "system", "content": "你叫钦灵,进行角色扮演"},
    {"role": "user", "content": "你好呀钦灵"},
]


def completion(
    content: Any = "【开心】你好呀莱姆<こんにちは>(摇尾巴)",
    *,
    model: str = "served-model-v2",
    usage: Any = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@pytest.fixture
def model(httpserver: HTTPServer) -> Iterator[OpenAIChatModel]:
    m = OpenAIChatModel(
        base_url=httpserver.url_for("/v1"),
        model="test-model",
        api_key=KEY,
        timeout=0.5,
        connect_timeout=0.5,
    )
    yield m
    m.close()


def requests_seen(httpserver: HTTPServer) -> list[Request]:
    return [req for req, _ in httpserver.log]


def sent_body(httpserver: HTTPServer) -> dict[str, Any]:
    reqs = requests_seen(httpserver)
    assert len(reqs) == 1
    return json.loads(reqs[0].get_data())


# -- success ---------------------------------------------------------------------------------


def test_is_a_chat_model(model: OpenAIChatModel) -> None:
    assert isinstance(model, ChatModel)
    assert model.name == "openai:test-model"


def test_success_returns_text_model_usage_and_sends_the_request(
    httpserver: HTTPServer, model: OpenAIChatModel
) -> None:
    httpserver.expect_request(PATH, method="POST").respond_with_json(
        completion(usage={"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30})
    )
    result = model.complete(MESSAGES, temperature=0.3, max_tokens=64)

    assert result.text == "【开心】你好呀莱姆<こんにちは>(摇尾巴)"
    assert result.model == "served-model-v2"
    assert result.prompt_tokens == 21
    assert result.completion_tokens == 9
    assert result.total_tokens == 30
    assert result.finish_reason == "stop"
    assert result.latency_ms > 0

    body = sent_body(httpserver)
    assert body["model"] == "test-model"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 64
    assert "response_format" not in body
    assert body.get("stream") in (None, False)
    assert set(body) == {"model", "messages", "temperature", "max_tokens"}  # nothing more
    req = requests_seen(httpserver)[0]
    assert req.headers["Authorization"] == f"Bearer {KEY}"


def test_json_mode_sends_response_format(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion('{"ok": true}'))
    result = model.complete(MESSAGES, json_mode=True, temperature=0.0)
    assert json.loads(result.text) == {"ok": True}
    body = sent_body(httpserver)
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0


def test_unset_options_are_not_sent_and_instance_defaults_apply(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion())
    bare = OpenAIChatModel(httpserver.url_for("/v1"), "m1", timeout=0.5)
    bare.complete(MESSAGES)
    body = sent_body(httpserver)
    assert "temperature" not in body
    assert "max_tokens" not in body

    httpserver.clear_log()
    tuned = OpenAIChatModel(
        httpserver.url_for("/v1"), "m1", timeout=0.5, temperature=0.8, max_tokens=100
    )
    tuned.complete(MESSAGES)
    body = sent_body(httpserver)
    assert body["temperature"] == 0.8
    assert body["max_tokens"] == 100
    tuned.complete(MESSAGES, temperature=0.1, max_tokens=5)  # per-call values win
    later = json.loads(requests_seen(httpserver)[-1].get_data())
    assert (later["temperature"], later["max_tokens"]) == (0.1, 5)


def test_missing_usage_gives_none(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion(usage=None))
    result = model.complete(MESSAGES)
    assert result.prompt_tokens is None
    assert result.completion_tokens is None
    assert result.total_tokens is None


def test_missing_model_in_response_falls_back_to_configured(
    httpserver: HTTPServer, model: OpenAIChatModel
) -> None:
    body = completion()
    del body["model"]
    httpserver.expect_request(PATH).respond_with_json(body)
    assert model.complete(MESSAGES).model == "test-model"


def test_no_key_sends_placeholder_for_local_servers(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion())
    local = OpenAIChatModel(httpserver.url_for("/v1"), "llama", timeout=0.5)
    assert not local.has_api_key
    local.complete(MESSAGES)
    assert requests_seen(httpserver)[0].headers["Authorization"] == f"Bearer {NO_KEY_PLACEHOLDER}"


def test_from_settings_reads_every_llm_setting(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json(completion())
    settings = Settings(
        llm_provider="openai",
        llm_base_url=httpserver.url_for("/v1"),
        llm_model="deepseek-chat",
        llm_api_key=SecretStr(KEY),
        llm_timeout=0.5,
        llm_connect_timeout=0.25,
        llm_temperature=1.1,
        llm_max_tokens=77,
    )
    m = OpenAIChatModel.from_settings(settings)
    assert (m.model, m.timeout, m.connect_timeout) == ("deepseek-chat", 0.5, 0.25)
    assert m.name == "openai:deepseek-chat"
    m.complete(MESSAGES)
    body = sent_body(httpserver)
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("deepseek-chat", 1.1, 77)
    assert requests_seen(httpserver)[0].headers["Authorization"] == f"Bearer {KEY}"


def test_from_settings_rejects_a_bad_base_url() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="llm_base_url"):  # refused when read
        Settings(llm_provider="openai", llm_base_url="localhost:8000", llm_api_key="k")
    good = Settings(llm_provider="openai", llm_base_url="http://localhost:8000", llm_api_key="k")
    settings = good.model_copy(update={"llm_base_url": "localhost:8000"})  # and by the client
    with pytest.raises(ConfigError, match="NEKOFLOW_LLM_BASE_URL") as info:
        OpenAIChatModel.from_settings(settings)
    assert info.value.field == "NEKOFLOW_LLM_BASE_URL"


# -- HTTP errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past
        ({"retry-after-ms": "1500"}, 1.5),
        ({}, None),
    ],
)
def test_429_is_retryable_with_retry_after(
    httpserver: HTTPServer,
    model: OpenAIChatModel,
    headers: dict[str, str],
    expected: float | None,
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "Rate limit reached", "type": "requests"}},
        status=429,
        headers=headers,
    )
    with pytest.raises(LLMRateLimitError) as info:
        model.complete(MESSAGES)
    err = info.value
    assert err.retryable
    assert err.status_code == 429
    assert err.retry_after == expected
    assert err.detail is not None and "Rate limit reached" in err.detail
    assert "Rate limit reached" not in str(err)  # the server's words stay out of the message
    assert len(httpserver.log) == 1  # the SDK did not retry


def test_429_with_http_date_in_the_future(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "slow down"}},
        status=429,
        headers={"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"},
    )
    with pytest.raises(LLMRateLimitError) as info:
        model.complete(MESSAGES)
    assert info.value.retry_after is not None
    assert info.value.retry_after > 3600


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_a_retryable_server_error(
    httpserver: HTTPServer, model: OpenAIChatModel, status: int
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "upstream overloaded"}}, status=status
    )
    with pytest.raises(LLMServerError) as info:
        model.complete(MESSAGES)
    assert info.value.retryable
    assert info.value.status_code == status
    assert f"HTTP {status}" in str(info.value)
    assert len(httpserver.log) == 1


def test_5xx_with_a_non_json_body(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    httpserver.expect_request(PATH).respond_with_data(
        "<html>502 Bad Gateway</html>", status=502, content_type="text/html"
    )
    with pytest.raises(LLMServerError) as info:
        model.complete(MESSAGES)
    assert info.value.status_code == 502


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_is_not_retryable(
    httpserver: HTTPServer, model: OpenAIChatModel, status: int
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": f"problem {status}", "type": "invalid_request_error"}},
        status=status,
    )
    with pytest.raises(LLMClientError) as info:
        model.complete(MESSAGES)
    assert not info.value.retryable
    assert info.value.status_code == status
    assert f"problem {status}" in (info.value.detail or "")
    assert f"problem {status}" not in str(info.value)
    assert len(httpserver.log) == 1


def test_error_messages_never_contain_the_api_key(
    httpserver: HTTPServer, model: OpenAIChatModel
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": f"Incorrect API key provided: {KEY}."}}, status=401
    )
    with pytest.raises(LLMClientError) as info:
        model.complete(MESSAGES)
    assert KEY not in str(info.value)
    assert KEY not in repr(info.value)
    assert KEY not in (info.value.detail or "")
    assert "Incorrect API key provided: ***" in (info.value.detail or "")
    assert info.value.__cause__ is None
    assert KEY not in repr(model)


def test_base_url_credentials_are_masked_in_messages(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json({"error": {"message": "no"}}, status=500)
    url = httpserver.url_for("/v1").replace("http://", "http://alice:pa55word@")
    m = OpenAIChatModel(url, "m", timeout=0.5)
    with pytest.raises(LLMServerError) as info:
        m.complete(MESSAGES)
    assert "pa55word" not in str(info.value)
    assert "pa55word" not in (info.value.detail or "")
    assert "pa55word" not in repr(m)


# -- transport failures ----------------------------------------------------------------------


def test_timeout_is_retryable_and_not_retried(httpserver: HTTPServer) -> None:
    release = threading.Event()
    hits: list[int] = []

    def stall(_request: Request) -> Response:
        hits.append(1)
        release.wait(5)
        return Response(json.dumps(completion()), content_type="application/json")

    httpserver.expect_request(PATH).respond_with_handler(stall)
    m = OpenAIChatModel(httpserver.url_for("/v1"), "m", timeout=0.3, connect_timeout=0.3)
    try:
        with pytest.raises(LLMTimeoutError) as info:
            m.complete(MESSAGES)
    finally:
        release.set()
    assert info.value.retryable
    assert hits == [1]


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_a_retryable_connection_error() -> None:
    m = OpenAIChatModel(
        f"http://127.0.0.1:{closed_port()}/v1", "m", api_key=KEY, timeout=0.5, connect_timeout=0.5
    )
    with pytest.raises(LLMConnectionError) as info:
        m.complete(MESSAGES)
    assert info.value.retryable
    assert info.value.status_code is None
    assert not isinstance(info.value, LLMTimeoutError)
    assert KEY not in str(info.value)


# -- malformed 200 bodies --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("this is not json", "not JSON"),
        ('{"choices": [', "not JSON"),
        ("[1, 2, 3]", "not an object"),
        ('{"id": "x", "object": "chat.completion"}', "no choices"),
        ('{"choices": []}', "no choices"),
        ('{"choices": "nope"}', "no choices"),
        ('{"choices": [42]}', "not an object"),
        ('{"choices": [{"index": 0}]}', "no message"),
        (json.dumps(completion(None)), "content is NoneType"),
        (json.dumps(completion(17)), "content is int"),
        (json.dumps(completion({"text": "hi"})), "content is dict"),
        ("", "not JSON"),
    ],
)
def test_unusable_200_is_a_bad_response(
    httpserver: HTTPServer, model: OpenAIChatModel, body: str, why: str
) -> None:
    httpserver.expect_request(PATH).respond_with_data(body, content_type="application/json")
    with pytest.raises(LLMBadResponseError, match=why) as info:
        model.complete(MESSAGES)
    assert not info.value.retryable
    assert len(httpserver.log) == 1


def test_200_with_an_error_object_maps_its_code(
    httpserver: HTTPServer, model: OpenAIChatModel
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"code": 503, "message": "provider unavailable"}}
    )
    with pytest.raises(LLMServerError, match="error object") as info:
        model.complete(MESSAGES)
    assert info.value.detail == "provider unavailable"


def test_content_parts_are_joined(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    parts = [{"type": "text", "text": "【开心】你好"}, {"type": "text", "text": "呀"}]
    httpserver.expect_request(PATH).respond_with_json(completion(parts))
    assert model.complete(MESSAGES).text == "【开心】你好呀"


# -- bad configuration and input -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base_url": "ftp://x/v1"}, "base_url"),
        ({"base_url": "   "}, "base_url"),
        ({"model": ""}, "model"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"connect_timeout": -1}, "connect_timeout"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_bad_configuration_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **kwargs}
    with pytest.raises(ConfigError, match=field) as info:
        OpenAIChatModel(**args)
    assert info.value.field == field


def test_no_base_url_means_the_official_endpoint() -> None:
    m = OpenAIChatModel(None, "gpt-4o-mini", api_key=KEY)
    assert m.base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("messages", "kwargs", "field"),
    [
        ([], {}, "messages"),
        ("hello", {}, "messages"),
        ([{"role": "robot", "content": "x"}], {}, "messages[0].role"),
        ([{"role": "user", "content": "x"}, {"role": "user"}], {}, "messages[1].content"),
        ([{"role": "user", "content": "x"}], {"temperature": -0.5}, "temperature"),
        ([{"role": "user", "content": "x"}], {"max_tokens": "ten"}, "max_tokens"),
    ],
)
def test_bad_input_is_rejected_before_any_request(
    httpserver: HTTPServer,
    model: OpenAIChatModel,
    messages: Any,
    kwargs: dict[str, Any],
    field: str,
) -> None:
    with pytest.raises(InputError) as info:
        model.complete(messages, **kwargs)
    assert info.value.field == field
    assert field in str(info.value)
    assert not isinstance(info.value, LLMError)
    assert httpserver.log == []


def test_429_insufficient_quota_is_not_retryable(
    httpserver: HTTPServer, model: OpenAIChatModel
) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}},
        status=429,
    )
    with pytest.raises(LLMClientError, match="quota") as info:
        model.complete(MESSAGES)
    assert not info.value.retryable
    assert info.value.status_code == 429


def test_408_is_a_retryable_timeout(httpserver: HTTPServer, model: OpenAIChatModel) -> None:
    httpserver.expect_request(PATH).respond_with_json({"error": {"message": "slow"}}, status=408)
    with pytest.raises(LLMTimeoutError) as info:
        model.complete(MESSAGES)
    assert info.value.retryable
    assert info.value.status_code == 408
    assert len(httpserver.log) == 1


def test_sdk_client_has_retries_off_and_split_timeouts(model: OpenAIChatModel) -> None:
    sdk = model.sdk()
    assert sdk.max_retries == 0
    assert sdk.timeout.connect == 0.5
    assert sdk.timeout.read == 0.5
    assert model.sdk() is sdk  # reused within a process


def test_sdk_client_is_recreated_after_a_fork(model: OpenAIChatModel) -> None:
    before = model.sdk()
    model._client_pid = -1  # as seen from a forked child: the parent's pid
    after = model.sdk()
    assert after is not before
    assert model._client_pid == os.getpid()


def test_the_sdk_is_imported_on_the_first_call_not_when_the_model_is_built(
    httpserver: HTTPServer,
) -> None:
    """A process that builds the model but never calls it (the ``turns`` worker reviewing by
    rules) does not import the SDK (~15 MiB, 0.25 s per prefork child)."""
    import subprocess
    import sys

    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        completion("喵")
    )
    code = f"""
import sys
from nekoflow.llm.factory import make_chat_model
from nekoflow.settings import Settings
model = make_chat_model(Settings(llm_provider="openai", llm_api_key="sk-test",
                                 llm_base_url={httpserver.url_for("/v1")!r}))
assert "openai" not in sys.modules, "built"
assert model.complete([{{"role": "user", "content": "hi"}}]).text == "喵"
assert "openai" in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
