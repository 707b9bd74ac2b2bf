"""Minimal PNG text-chunk reader/writer (``tEXt``, ``zTXt``, ``iTXt``) with struct and zlib only.

Enough to read SillyTavern character cards, whose ``chara`` (V2) or ``ccv3`` (V3) text chunk holds
base64-encoded JSON. CRCs are checked; a malformed file raises ``InputError(field="png")``.

A compressed chunk is a decompression bomb waiting to happen (0.5 MB of zTXt inflates to 512 MiB):
only the chunks whose keyword the caller asks for are decompressed — others are skipped unread —
and each is inflated to at most ``max_text_bytes``; a larger one is refused, naming the chunk.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Collection

from nekoflow.errors import InputError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

MAX_TEXT_BYTES = 32 * 1024 * 1024
"""The most one text chunk may inflate to (a real card's base64 JSON is well under 1 MiB)."""

CARD_KEYWORDS = ("ccv3", "chara")
"""The text chunks of a SillyTavern character card (V3, V2): the only ones a card import reads."""


def is_png(data: bytes) -> bool:
    """True when ``data`` starts with the PNG signature."""
    return data[:8] == PNG_SIGNATURE


def _bad(msg: str) -> InputError:
    return InputError(f"invalid PNG: {msg}", field="png")


def _inflate(data: bytes, limit: int, what: str) -> bytes:
    """``data`` zlib-decompressed, never past ``limit`` bytes (refused, naming ``what``)."""
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit:
        raise _bad(f"{what} inflates to more than {limit} bytes (refused)")
    if not inflater.eof:
        raise zlib.error("incomplete or truncated stream")
    return out


def _keyword(kind: bytes, body: bytes) -> tuple[str, bytes]:
    keyword, sep, rest = body.partition(b"\x00")
    if not sep:
        raise _bad(f"{kind.decode()} chunk without keyword separator")
    return keyword.decode("latin-1"), rest


def _decode_text_chunk(kind: bytes, key: str, rest: bytes, limit: int) -> str:
    what = f"{kind.decode()} chunk {key!r}"
    try:
        if kind == b"tEXt":
            return rest.decode("latin-1")
        if kind == b"zTXt":
            return _inflate(rest[1:], limit, what).decode("latin-1")
        # iTXt: compression flag, method, language\0, translated keyword\0, text (UTF-8)
        flag = rest[0]
        _lang, _, rest = rest[2:].partition(b"\x00")
        _translated, _, text = rest.partition(b"\x00")
        if flag:
            text = _inflate(text, limit, what)
        return text.decode("utf-8")
    except (zlib.error, UnicodeDecodeError, IndexError) as exc:
        raise _bad(f"unreadable {kind.decode()} chunk {key!r}: {exc}") from exc


def read_text_chunks(
    data: bytes,
    keywords: Collection[str] | None = None,
    *,
    max_text_bytes: int = MAX_TEXT_BYTES,
) -> dict[str, str]:
    """The text chunks of the PNG ``data`` as keyword → text (the first of each keyword wins).

    With ``keywords``, only chunks whose keyword lower-cased is one of them are decoded (and
    returned under that lower-cased keyword); any other chunk, and a repeat of a keyword already
    read, is skipped without decompressing it. No chunk inflates past ``max_text_bytes``.
    """
    wanted = None if keywords is None else {k.lower() for k in keywords}
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
            key, rest = _keyword(kind, body)
            if wanted is not None:
                key = key.lower()
            if key not in out and (wanted is None or key in wanted):
                out[key] = _decode_text_chunk(kind, key, rest, max_text_bytes)
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
