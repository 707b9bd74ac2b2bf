"""Bilingual concept terms: a question meets what was said in other words (pure)."""

from __future__ import annotations

from nekoflow.memory.concepts import concept_terms
from nekoflow.memory.lexical import (
    CONCEPT_WEIGHT,
    CorpusStats,
    bm25,
    doc_terms,
    index_text,
    query_terms,
)


def test_a_question_and_a_statement_in_other_words_share_a_concept() -> None:
    pairs = [
        ("where do I work these days?", "now I'm a QA lead at a game studio", "zcwork"),
        ("我姐姐和我弟弟都在哪?", "my little brother just started college", "zcsibling"),
        ("which insects scare me?", "说出来有点丢人,我特别怕蛾子", "zcfear"),
        ("我现在住在哪?", "上周末终于搬家了,搬到了文三路", "zchome"),
        ("what's my mom's birthday?", "我妈的生日是腊月初八", "zcbirthday"),
    ]
    for question, said, concept in pairs:
        assert concept in concept_terms(question), question
        assert concept in concept_terms(said), said


def test_words_inside_other_words_name_no_concept() -> None:
    assert concept_terms("homework and workshop") == []  # English words match whole
    assert "zcplant" not in concept_terms("我对花生过敏")  # 花生 is no flower
    assert concept_terms("") == []


def test_the_concept_ranks_the_paraphrase_above_an_unrelated_line() -> None:
    said = doc_terms(index_text(1, "s", "", "I quit, now I'm a QA lead at a game studio"))
    other = doc_terms(index_text(1, "s", "", "the sunset was lovely these days"))
    stats = CorpusStats(docs=100, avg_len=12.0, df={"zcwork": 5, "these": 20, "day": 30})
    query = query_terms("where do I work now?")
    assert query["zcwork"] == CONCEPT_WEIGHT == 2.0  # a concept of the message: twice a word
    assert bm25(query, said, stats) > bm25(query, other, stats)


def test_a_run_and_a_broken_phone_are_named_in_other_words() -> None:
    assert "zcexercise" in concept_terms("on Tuesday I finally beat my 5k personal best")
    assert "zcexercise" in concept_terms("what did I tell you about my run?")
    assert "zcbroken" in concept_terms("手机掉进西湖里了,捞上来已经开不了机")
    assert "zcbroken" in concept_terms("我的手机是怎么坏的?")
