"""The frames of Feishu's long connection: protobuf ``pbbp2.Frame`` encoded and decoded by hand.

``message Frame { required uint64 SeqID = 1; required uint64 LogID = 2; required int32 service
= 3; required int32 method = 4; repeated Header headers = 5; optional string payload_encoding =
6; optional string payload_type = 7; optional bytes payload = 8; optional string LogIDNew = 9; }``
with ``message Header { required string key = 1; required string value = 2; }``. ``method`` 0 is
a control frame (header ``type`` = ``ping`` / ``pong``), 1 a data frame (``type`` = ``event`` /
``card``; a large payload is split into ``sum`` parts numbered by ``seq`` under one
``message_id``). Only varints and length-delimited fields are written; fixed-width fields are
skipped when read. Pure Python: no ``protobuf`` dependency for one message type.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace

CONTROL = 0
DATA = 1
_U64 = (1 << 64) - 1
_MAX_HEADERS = 256
_MAX_PARTS = 64
_MAX_PENDING = 256


class FrameError(ValueError):
    """Bytes that are not a well-formed Frame (says which field)."""


def _varint(value: int) -> bytes:
    value &= _U64  # negative int32/int64 are written as 10-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise FrameError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & _U64, pos
        shift += 7
        if shift >= 70:
            raise FrameError("varint too long")


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _varint(len(value)) + value


def _fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field, in order."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise FrameError("field number 0")
        if wire == 0:
            value, pos = _read_varint(data, pos)
            out.append((number, wire, value))
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise FrameError(f"field {number}: truncated")
            out.append((number, wire, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > len(data):
                raise FrameError(f"field {number}: truncated")
        else:
            raise FrameError(f"field {number}: unsupported wire type {wire}")
    return out


def _text(number: int, value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise FrameError(f"field {number}: expected a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError(f"field {number}: not UTF-8") from None


def _number(number: int, value: int | bytes) -> int:
    if isinstance(value, bytes):
        raise FrameError(f"field {number}: expected a number")
    return value


@dataclass
class Frame:
    """One ``pbbp2.Frame``; ``headers`` keep their order (and repeats)."""

    seq_id: int = 0
    log_id: int = 0
    service: int = 0
    method: int = CONTROL
    headers: list[tuple[str, str]] = field(default_factory=list)
    payload_encoding: str | None = None
    payload_type: str | None = None
    payload: bytes | None = None
    log_id_new: str | None = None

    def header(self, key: str) -> str | None:
        """The first header called ``key``, or None."""
        return next((v for k, v in self.headers if k == key), None)

    def encode(self) -> bytes:
        """The protobuf bytes (required fields always written)."""
        out = bytearray()
        out += _key(1, 0) + _varint(self.seq_id)
        out += _key(2, 0) + _varint(self.log_id)
        out += _key(3, 0) + _varint(self.service)
        out += _key(4, 0) + _varint(self.method)
        for k, v in self.headers:
            header = _bytes_field(1, k.encode()) + _bytes_field(2, v.encode())
            out += _bytes_field(5, header)
        if self.payload_encoding is not None:
            out += _bytes_field(6, self.payload_encoding.encode())
        if self.payload_type is not None:
            out += _bytes_field(7, self.payload_type.encode())
        if self.payload is not None:
            out += _bytes_field(8, self.payload)
        if self.log_id_new is not None:
            out += _bytes_field(9, self.log_id_new.encode())
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> Frame:
        """Parse protobuf bytes; :class:`FrameError` names what is wrong."""
        frame = cls()
        seen: set[int] = set()
        for number, _wire, value in _fields(bytes(data)):
            seen.add(number)
            if number == 1:
                frame.seq_id = _number(1, value)
            elif number == 2:
                frame.log_id = _number(2, value)
            elif number == 3:
                frame.service = _int32(_number(3, value))
            elif number == 4:
                frame.method = _int32(_number(4, value))
            elif number == 5:
                if not isinstance(value, bytes):
                    raise FrameError("field 5 (headers): expected a message")
                if len(frame.headers) >= _MAX_HEADERS:
                    raise FrameError("field 5 (headers): too many")
                frame.headers.append(_header(value))
            elif number == 6:
                frame.payload_encoding = _text(6, value)
            elif number == 7:
                frame.payload_type = _text(7, value)
            elif number == 8:
                if not isinstance(value, bytes):
                    raise FrameError("field 8 (payload): expected bytes")
                frame.payload = value
            elif number == 9:
                frame.log_id_new = _text(9, value)
        missing = {1, 2, 3, 4} - seen
        if missing:
            raise FrameError(f"missing required field(s) {sorted(missing)}")
        return frame

    def ack(self, code: int, started: float | None = None) -> Frame:
        """The answer to a data frame: the same frame, payload ``{"code": …}`` and ``biz_rt``."""
        headers = list(self.headers)
        if started is not None:
            headers.append(("biz_rt", str(max(0, int((time.monotonic() - started) * 1000)))))
        body = json.dumps({"code": code}, separators=(",", ":")).encode()
        return replace(self, headers=headers, payload=body)


def _header(data: bytes) -> tuple[str, str]:
    key = value = None
    for number, _wire, raw in _fields(data):
        if number == 1:
            key = _text(1, raw)
        elif number == 2:
            value = _text(2, raw)
    if key is None or value is None:
        raise FrameError("field 5 (headers): a header needs key and value")
    return key, value


def ping_frame(service: int) -> Frame:
    """The client's ping (a control frame of type ``ping`` for the connection's service id)."""
    return Frame(service=service, method=CONTROL, headers=[("type", "ping")])


class Reassembler:
    """Joins the parts of a split data frame (``sum`` > 1), forgetting incomplete ones after
    ``ttl`` seconds (as the SDK does) and never holding more than a few hundred."""

    def __init__(self, ttl: float = 5.0) -> None:
        self.ttl = ttl
        self._parts: dict[str, tuple[float, list[bytes | None]]] = {}

    def add(self, message_id: str, total: int, seq: int, payload: bytes) -> bytes | None:
        """Store part ``seq`` of ``total``; the whole payload once every part is in."""
        if total == 1:
            return payload  # not split (its seq does not matter)
        if not 1 <= total <= _MAX_PARTS:
            raise FrameError(f"header sum: {total} is not 1-{_MAX_PARTS}")
        if not 0 <= seq < total:
            raise FrameError(f"header seq: {seq} is not within sum {total}")
        if not message_id:
            raise FrameError("header message_id: missing on a split payload")
        now = time.monotonic()
        self._parts = {k: v for k, v in self._parts.items() if v[0] > now}
        _deadline, parts = self._parts.get(message_id, (0.0, [None] * total))
        if len(parts) != total:
            raise FrameError(f"header sum: changed for message {message_id}")
        parts[seq] = payload
        if any(p is None for p in parts):
            if message_id not in self._parts and len(self._parts) >= _MAX_PENDING:
                self._parts.pop(next(iter(self._parts)))
            self._parts[message_id] = (now + self.ttl, parts)
            return None
        self._parts.pop(message_id, None)
        return b"".join(p for p in parts if p is not None)

    def __len__(self) -> int:
        return len(self._parts)
