"""A PNG card is not a decompression bomb: only the card's own chunks are inflated, with a limit."""

from __future__ import annotations

import base64
import json
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from nekoflow.characters import parse_card
from nekoflow.errors import InputError
from nekoflow.worldbook.importers import parse_import
from nekoflow.worldbook.png import MAX_TEXT_BYTES, PNG_SIGNATURE, chunk, minimal_png

MiB = 1024 * 1024
CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Neko",
        "description": "a cat",
        "character_book": {"entries": [{"keys": ["fish"], "content": "likes fish"}]},
    },
}


def _deflate_zeros(size: int) -> bytes:
    """``size`` zero bytes zlib-compressed, built piecewise (never ``size`` bytes in memory)."""
    packer = zlib.compressobj(9)
    block = bytes(MiB)
    parts = [packer.compress(block) for _ in range(size // MiB)]
    return b"".join(parts) + packer.flush()


def _png(*extra: bytes, card_chunk: bytes | None = None) -> bytes:
    """A 1×1 PNG: ``extra`` chunks, then the card's ``chara`` tEXt chunk (or ``card_chunk``)."""
    plain = minimal_png({})
    head, tail = plain[: plain.index(b"IDAT") - 4], plain[plain.index(b"IDAT") - 4 :]
    text = base64.b64encode(json.dumps(CARD).encode()).decode()
    card = card_chunk or chunk(b"tEXt", b"chara\x00" + text.encode("latin-1"))
    assert head.startswith(PNG_SIGNATURE)
    return head + b"".join(extra) + card + tail


def _peak(call: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def bomb_png() -> bytes:
    """~0.5 MB: an unrelated zTXt chunk that inflates to 512 MiB, then a real card."""
    bomb = chunk(b"zTXt", b"Comment\x00\x00" + _deflate_zeros(512 * MiB))
    png = _png(bomb)
    assert len(png) < MiB
    return png


def test_an_unrelated_bomb_chunk_is_not_inflated(bomb_png: bytes) -> None:
    card, peak = _peak(lambda: parse_card(bomb_png))
    assert card.card.name == "Neko"
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB"

    report, peak = _peak(lambda: parse_import(bomb_png, fallback_name="card"))
    assert report.books[0].entries[0].content == "likes fish"
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("kind", [b"zTXt", b"iTXt"])
def test_a_card_chunk_past_the_limit_is_refused_naming_it(kind: bytes) -> None:
    head = b"chara\x00\x00" if kind == b"zTXt" else b"chara\x00\x01\x00\x00\x00"
    over = chunk(kind, head + _deflate_zeros(MAX_TEXT_BYTES + MiB))
    with pytest.raises(InputError) as err:
        parse_card(_png(card_chunk=over))
    assert err.value.field == "png"
    assert f"{kind.decode()} chunk 'chara' inflates to more than {MAX_TEXT_BYTES} bytes" in str(
        err.value
    )


def test_repeated_card_chunks_are_read_once() -> None:
    """Only the first ``chara`` chunk (any case) is decoded; later ones are skipped unread."""
    png = _png()
    at = png.index(b"IDAT") - 4  # after the card's chunk
    broken = chunk(b"zTXt", b"Chara\x00\x00" + b"not zlib")
    assert parse_card(png[:at] + broken + png[at:]).card.name == "Neko"


def test_a_card_in_a_compressed_chunk_still_imports() -> None:
    text = base64.b64encode(json.dumps(CARD).encode()).decode()
    for kind in (b"zTXt", b"iTXt"):
        assert parse_card(minimal_png({"chara": text}, kind=kind)).card.name == "Neko"
