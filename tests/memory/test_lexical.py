"""Lexical relevance: index terms (CJK bigrams, English words) and BM25."""

from __future__ import annotations

from nekoflow.memory.lexical import (
    CorpusStats,
    bm25,
    doc_terms,
    index_text,
    query_terms,
    scope_token,
    terms,
)


def test_chinese_text_becomes_characters_and_bigrams() -> None:
    assert terms("喜欢草莓") == ["喜", "欢", "草", "莓", "喜欢", "欢草", "草莓"]
    assert "雷" in set(terms("今晚有雷阵雨")) & set(terms("我怕打雷"))


def test_a_lone_cjk_character_is_its_own_term() -> None:
    assert terms("嗯,好") == ["嗯", "好"]


def test_english_words_are_lowercased_and_stop_words_dropped() -> None:
    assert terms("My favourite is Strawberry cake, OK? I a 3") == [
        "favourite",
        "strawberry",
        "cake",
        "ok",
        "3",
    ]
    assert terms("everyone calls me Teddy; glass bus") == [
        "everyone",
        "call",
        "teddy",
        "glass",
        "bus",
    ]


def test_mixed_text_and_full_width_forms_are_normalised() -> None:
    assert terms("小明。Call me ＢＯＢ") == ["小", "明", "小明", "call", "bob"]
    assert terms("") == []


def test_scope_token_is_stable_and_distinct_per_scope() -> None:
    a = scope_token(1, "web:alice")
    assert a == scope_token(1, "web:alice")
    assert a != scope_token(2, "web:alice") != scope_token(1, "web:bob")
    assert a.startswith("zq") and len(a) == 14


def test_index_text_leads_with_the_scope_token_and_doc_terms_drop_it() -> None:
    stored = index_text(1, "s", "生日", "五月三日")
    assert stored.split()[0] == scope_token(1, "s")
    assert doc_terms(stored) == [
        *["生", "日", "生日", "五", "月", "三", "日", "五月", "月三", "三日"],
        "zcbirthday",  # the concept the words name (nekoflow.memory.concepts)
    ]
    assert doc_terms(None) == []


def test_query_terms_weigh_the_message_over_context() -> None:
    q = query_terms("草莓", ["昨天吃了草莓和蛋糕"], context_weight=0.5)
    assert q["草莓"] == 1.0
    assert q["蛋糕"] == 0.5


def _stats(docs: list[list[str]]) -> CorpusStats:
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    return CorpusStats(docs=len(docs), avg_len=sum(map(len, docs)) / len(docs), df=df)


def test_bm25_ranks_the_document_holding_the_rare_query_term_first() -> None:
    docs = [
        terms("我最喜欢草莓蛋糕"),
        terms("今天天气很好,我们去公园散步"),
        terms("今天我们去了海边"),
    ]
    stats = _stats(docs)
    q = query_terms("你还记得我喜欢什么蛋糕吗")
    scores = [bm25(q, d, stats) for d in docs]
    assert scores[0] > 0
    assert scores[0] > scores[1] and scores[0] > scores[2]


def test_bm25_english_and_zero_cases() -> None:
    docs = [terms("Alice promised to bring the red umbrella"), terms("the weather was nice")]
    stats = _stats(docs)
    q = query_terms("Where is the umbrella?")
    assert bm25(q, docs[0], stats) > 0 == bm25(q, docs[1], stats)
    assert bm25({}, docs[0], stats) == 0.0
    assert bm25(q, [], stats) == 0.0


def test_idf_is_never_negative() -> None:
    stats = CorpusStats(docs=3, avg_len=4.0, df={"common": 5})
    assert stats.idf("common") > 0
    assert stats.idf("rare") > stats.idf("common")
