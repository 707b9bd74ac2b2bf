"""OneBot v11 rules in plain Python (no sockets, Redis or SQL): handshake auth, event kinds,
the ``send_msg`` action of a chunk, event signatures and what an action's response means.

References: OneBot v11 ``communication/ws-reverse.md`` (``X-Self-ID``, ``X-Client-Role``,
``Authorization: Bearer``), ``communication/http-post.md`` (``X-Signature: sha1=…``, HMAC-SHA1 of
the body) and ``api/public.md`` (``send_msg``; ``retcode`` 0 ok, 1 async, 14xx request errors).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nekoflow.delivery.base import Chunk, Destination, PermanentFailure

ROLES = frozenset({"universal", "event", "api"})

#: retcodes that retrying cannot fix: OneBot's 1400/1401/1403/1404, go-cqhttp's 100/102/103/104
#: and NapCat's generic 200/201 (a rejected message; resending could duplicate it). Any other
#: non-zero retcode is implementation-defined (OneBot v11 ``api/public.md``: ``failed`` with a
#: retcode other than 0/1, see the implementation's logs) and does not say the message was not
#: sent — NapCat/Lagrange answer e.g. -1 or 1200 when the send timed out inside the client.
PERMANENT_RETCODES = frozenset({100, 102, 103, 104, 200, 201, 1400, 1401, 1403, 1404})


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization`` header (``Bearer <t>`` or OneBot's ``Token <t>``)."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not token.strip():
        return None
    return token.strip()


def token_matches(given: str | None, expected: str | None) -> bool:
    """Constant-time check of a presented token; no expected token means none is needed."""
    if expected is None:
        return True
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def signature_matches(body: bytes, header: str | None, secret: str) -> bool:
    """``X-Signature: sha1=<hex HMAC-SHA1 of the raw body>`` checked in constant time."""
    if not header or not header.startswith("sha1="):
        return False
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha1).hexdigest()
    return hmac.compare_digest(header[5:].strip().lower().encode(), expected.encode())


def sign(body: bytes, secret: str) -> str:
    """The ``X-Signature`` value of ``body`` (what an implementation sends)."""
    return "sha1=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha1).hexdigest()


def client_role(header: str | None) -> str | None:
    """The connection's role (universal/event/api); None when the header names no valid one."""
    role = (header or "universal").strip().lower()
    return role if role in ROLES else None


def is_response(frame: Mapping[str, Any]) -> bool:
    """True for an action response (``status``/``retcode``/``echo``) rather than an event."""
    return "post_type" not in frame and ("retcode" in frame or "echo" in frame)


def is_meta(frame: Mapping[str, Any]) -> bool:
    """True for heartbeat and lifecycle meta events (never turns)."""
    return frame.get("post_type") == "meta_event"


def send_msg(dest: Destination, chunk: Chunk) -> dict[str, Any]:
    """The ``send_msg`` params of a chunk: segment array, a reply segment on the first chunk."""
    segments: list[dict[str, Any]] = []
    if dest.reply_to and chunk.index == 0:
        segments.append({"type": "reply", "data": {"id": str(dest.reply_to)}})
    if chunk.kind == "text":
        text = str(chunk.payload.get("content") or chunk.payload.get("text") or "")
        if not text.strip():
            raise PermanentFailure(f"chunk {chunk.index}: empty text")
        segments.append({"type": "text", "data": {"text": text}})
    elif chunk.kind == "image":
        file = chunk.payload.get("url") or chunk.payload.get("file")
        if not file:
            raise PermanentFailure(f"chunk {chunk.index}: image without url or file")
        segments.append({"type": "image", "data": {"file": str(file)}})
    elif chunk.kind == "voice":
        audio = chunk.payload.get("audio")
        if not isinstance(audio, bytes | bytearray) or not audio:
            raise PermanentFailure(f"chunk {chunk.index}: voice without audio")
        # OneBot v11 record segment: the implementation transcodes mp3/wav to QQ's SILK itself
        file = "base64://" + base64.b64encode(bytes(audio)).decode("ascii")
        segments.append({"type": "record", "data": {"file": file}})
    else:
        raise PermanentFailure(f"chunk {chunk.index}: kind {chunk.kind!r} not supported")
    params: dict[str, Any] = {"message": segments}
    if dest.chat_type == "group":
        params |= {"message_type": "group", "group_id": _num(dest.chat_id)}
    else:
        params |= {"message_type": "private", "user_id": _num(dest.chat_id)}
    return params


def _num(value: str) -> int | str:
    return int(value) if value.isdigit() else value


@dataclass(frozen=True)
class Verdict:
    """What an action response means: ``sent`` (with the message id), ``unconfirmed`` (an
    implementation-defined failure retcode: maybe sent), ``retry`` or ``failed``."""

    kind: Literal["sent", "unconfirmed", "retry", "failed"]
    message_id: str | None = None
    reason: str = ""


def judge(response: Mapping[str, Any]) -> Verdict:
    """Classify a ``send_msg`` response (reason: codes only, never the implementation's text)."""
    retcode = response.get("retcode")
    status = response.get("status")
    if retcode in (0, 1) or (retcode is None and status in ("ok", "async")):
        data = response.get("data")
        mid = data.get("message_id") if isinstance(data, Mapping) else None
        return Verdict("sent", None if mid is None else str(mid))
    if isinstance(retcode, int) and not isinstance(retcode, bool):
        if retcode in PERMANENT_RETCODES:
            return Verdict("failed", reason=f"onebot retcode {retcode}")
        # answered, but with an implementation-defined code: not a "not sent", so never resend
        # blindly (send_msg has no idempotency key)
        return Verdict("unconfirmed", reason=f"onebot retcode {retcode}")
    return Verdict("retry", reason="onebot response without retcode")
