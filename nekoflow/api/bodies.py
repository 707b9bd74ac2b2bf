"""Request bodies: a size limit per route family (ASGI middleware) and safe JSON parsing.

:class:`BodyLimitMiddleware` answers 413 before reading a body whose ``Content-Length`` is over
its route family's limit, and stops a body without one (chunked) as soon as it passes the limit:
nothing past the limit is ever read. The families are the platform webhooks (events are small:
the largest real one in the corpus is ~8 KB, images are URLs), the world-book routes (a book may
be created with thousands of entries) and every other route. :func:`load_json_body` parses a
webhook's raw body: not JSON is a 422 naming the field, JSON nested too deeply for the parser a
400 naming the problem (never a 500 from ``RecursionError``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nekoflow.api.errors import ApiError, error_body
from nekoflow.errors import InputError

WEBHOOK_TAG = "platforms"
"""Routes with this OpenAPI tag are the webhook family."""


class BodyTooLarge(HTTPException):
    """A request body over its route family's limit (answered 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the {limit}-byte limit of this route")


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    """Refuse (413) a request body over ``limit_for(path)`` bytes, before reading past it."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then count what the app reads."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, limit)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await _refuse(send, limit)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps(error_body(BodyTooLarge(limit).detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def leaf_routes(routes: list[Any]) -> list[Any]:
    """Every route of the app, included routers walked (``original_router``)."""
    found: list[Any] = []
    stack = list(routes)
    while stack:
        route = stack.pop()
        inner = getattr(route, "original_router", None)
        if inner is not None:
            stack.extend(inner.routes)
        else:
            found.append(route)
    return found


def route_limits(
    routes: list[Any], *, webhook: int, world_books: int, default: int
) -> Callable[[str], int]:
    """``limit_for(path)``: ``webhook`` for the routes tagged :data:`WEBHOOK_TAG`,
    ``world_books`` under ``/api/world-books``, ``default`` for every other path."""
    webhook_paths: list[re.Pattern[str]] = [
        r.path_regex for r in leaf_routes(routes) if WEBHOOK_TAG in (getattr(r, "tags", None) or ())
    ]

    def limit_for(path: str) -> int:
        if any(p.match(path) for p in webhook_paths):
            return webhook
        if path == "/api/world-books" or path.startswith("/api/world-books/"):
            return world_books
        return default

    return limit_for


def load_json_body(raw: bytes, field: str = "body") -> Any:
    """``raw`` parsed as JSON: 422 (``field``) when it is not JSON, 400 when nested too deeply."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ApiError(400, f"{field}: JSON nested too deeply", field=field) from None
    except ValueError:
        raise InputError("is not JSON", field=field) from None


UNSIGNED_MAX_BYTES = 4096
"""Most a webhook reads of a body that comes without a signature header (QQ's op 13 validation
and Feishu's ``url_verification`` challenge are a few hundred bytes)."""


async def read_at_most(request: Any, limit: int) -> bytes | None:
    """The request's body, or None as soon as it passes ``limit`` bytes (the rest unread)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def first_unsafe_value(value: Any, path: str = "") -> str | None:
    """The first NaN / ±infinity or lone-surrogate string in parsed JSON, as ``"<path>: …"``
    (None when there is none). Such values break the recall's numbers and every UTF-8 encoder."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path or 'body'}: must be a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path or 'body'}: contains a lone surrogate (not valid Unicode)"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = str(key)
            where = f"{path}.{name}" if path else name
            if not _ok(name):
                return f"{path or 'body'}: a key contains a lone surrogate (not valid Unicode)"
            problem = first_unsafe_value(item, where)
            if problem:
                return problem
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problem = first_unsafe_value(item, f"{path}.{i}" if path else str(i))
            if problem:
                return problem
    return None


def _ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
