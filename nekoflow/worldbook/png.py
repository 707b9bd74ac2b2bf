"""Minimal PNG text-chunk reader/writer (``tEXt``, ``zTXt``, ``iTXt``) with struct and zlib only.

Enough to read SillyTavern character cards, whose ``chara`` (V2) or ``ccv3`` (V3) text chunk holds
base64-encoded JSON. CRCs are checked; a malformed file raises ``InputError(field="png")``.
"""

from __future__ import annotations

import struct
import zlib

from nekoflow.errors import InputError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def is_png(data: bytes) -> bool:
    """True when ``data`` starts with the PNG signature."""
    return data[:8] == PNG_SIGNATURE


def _bad(msg: str) -> InputError:
    return InputError(f"invalid PNG: {msg}", field="png")


def _decode_text_chunk(kind: bytes, body: bytes) -> tuple[str, str]:
    keyword, sep, rest = body.partition(b"\x00")
    if not sep:
        raise _bad(f"{kind.decode()} chunk without keyword separator")
    key = keyword.decode("latin-1")
    try:
        if kind == b"tEXt":
            return key, rest.decode("latin-1")
        if kind == b"zTXt":
            return key, zlib.decompress(rest[1:]).decode("latin-1")
        # iTXt: compression flag, method, language\0, translated keyword\0, text (UTF-8)
        flag = rest[0]
        _lang, _, rest = rest[2:].partition(b"\x00")
        _translated, _, text = rest.partition(b"\x00")
        if flag:
            text = zlib.decompress(text)
        return key, text.decode("utf-8")
    except (zlib.error, UnicodeDecodeError, IndexError) as exc:
        raise _bad(f"unreadable {kind.decode()} chunk {key!r}: {exc}") from exc


def read_text_chunks(data: bytes) -> dict[str, str]:
    """Every text chunk of the PNG ``data`` as keyword → text (the first of each keyword wins)."""
    if not is_png(data):
        raise _bad("missing PNG signature")
    out: dict[str, str] = {}
    pos = len(PNG_SIGNATURE)
    while pos < len(data):
        if pos + 8 > len(data):
            raise _bad("truncated chunk header")
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        end = pos + 8 + length
        if end + 4 > len(data):
            raise _bad(f"truncated {kind!r} chunk")
        body = data[pos + 8 : end]
        (crc,) = struct.unpack(">I", data[end : end + 4])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise _bad(f"CRC mismatch in {kind.decode('latin-1')} chunk")
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            key, text = _decode_text_chunk(kind, body)
            out.setdefault(key, text)
        pos = end + 4
        if kind == b"IEND":
            break
    return out


def chunk(kind: bytes, body: bytes) -> bytes:
    """One encoded PNG chunk (length, type, body, CRC)."""
    return (
        struct.pack(">I", len(body))
        + kind
        + body
        + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    )


def minimal_png(text_chunks: dict[str, str], *, kind: bytes = b"tEXt") -> bytes:
    """A valid 1×1 PNG carrying ``text_chunks`` (for tests and for exporting cards)."""
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00")
    parts = [PNG_SIGNATURE, chunk(b"IHDR", ihdr)]
    for key, text in text_chunks.items():
        if kind == b"tEXt":
            body = key.encode("latin-1") + b"\x00" + text.encode("latin-1")
        elif kind == b"zTXt":
            body = key.encode("latin-1") + b"\x00\x00" + zlib.compress(text.encode("latin-1"))
        else:
            body = (
                key.encode("latin-1")
                + b"\x00\x01\x00\x00\x00"
                + zlib.compress(text.encode("utf-8"))
            )
        parts.append(chunk(kind, body))
    parts += [chunk(b"IDAT", pixels), chunk(b"IEND", b"")]
    return b"".join(parts)
