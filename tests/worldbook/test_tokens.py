"""The token estimate: CJK and Latin counts, and the pluggable tokenizer."""

from __future__ import annotations

import pytest

from nekoflow.tokens import HeuristicTokenizer, estimate_tokens, get_tokenizer, set_tokenizer


def test_cjk_char_is_one_token() -> None:
    assert estimate_tokens("白塔旧誓") == 4
    assert estimate_tokens("こんにちは") == 5


def test_latin_words_count_per_four_chars() -> None:
    assert estimate_tokens("the") == 1
    assert estimate_tokens("forest") == 2
    assert estimate_tokens("Tell me about the forest") == 1 + 1 + 2 + 1 + 2


def test_punctuation_and_mixed_text() -> None:
    assert estimate_tokens("Hi, 白塔!") == 1 + 1 + 2 + 1
    assert estimate_tokens("") == 0
    assert estimate_tokens("   \n ") == 0


def test_estimate_is_near_real_ratios() -> None:
    english = "Seraphina is a guardian of the Eldoria forest who heals travellers. " * 20
    # English prose runs ~4.2 characters per token in BPE tokenizers.
    assert 3.0 < len(english) / estimate_tokens(english) < 6.0


class _Words:
    def count(self, text: str) -> int:
        return len(text.split())


def test_pluggable_tokenizer() -> None:
    set_tokenizer(_Words())
    try:
        assert estimate_tokens("a bb ccc dddd") == 4
        assert isinstance(get_tokenizer(), _Words)
    finally:
        set_tokenizer(None)
    assert isinstance(get_tokenizer(), HeuristicTokenizer)
    assert estimate_tokens("a bb", tokenizer=_Words()) == 2


def test_bad_tokenizer_rejected() -> None:
    with pytest.raises(TypeError, match="count"):
        set_tokenizer(object())  # type: ignore[arg-type]
