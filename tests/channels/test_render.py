"""render_result, split_text (hypothesis: every chunk fits, only whitespace is lost) and
Markdown stripping."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nekoflow.channels import (
    ChannelRenderPolicy,
    ChannelRuntimeContext,
    FeishuChannelAdapter,
    QQBotChannelAdapter,
    QQChannelAdapter,
    TelegramChannelAdapter,
    WebChannelAdapter,
    split_text,
    strip_markdown,
)
from nekoflow.errors import InputError

QQ_CTX = ChannelRuntimeContext(channel="qq", conversation_id="1", scene="group")


# --- render_result: the seed's 3 cases + shapes ----------------------------------------------


def test_render_result_normal_text() -> None:
    out = QQChannelAdapter().render_result(SimpleNamespace(text="你好呀"), QQ_CTX)
    assert out == [{"type": "text", "content": "你好呀"}]


def test_render_result_empty_text_is_empty_list() -> None:
    adapter = QQChannelAdapter()
    assert adapter.render_result(SimpleNamespace(text=""), QQ_CTX) == []
    assert adapter.render_result(SimpleNamespace(text="  \n "), QQ_CTX) == []
    assert adapter.render_result(SimpleNamespace(prompt_text="secret"), QQ_CTX) == []
    assert adapter.render_result(None, QQ_CTX) == []


def test_render_result_never_leaks_prompt_text() -> None:
    result = SimpleNamespace(text="回答", prompt_text="SYSTEM PROMPT SECRET", messages=["x"])
    for adapter in (
        QQChannelAdapter(),
        TelegramChannelAdapter(),
        FeishuChannelAdapter(),
        QQBotChannelAdapter(),
        WebChannelAdapter(),
    ):
        out = adapter.render_result(result, QQ_CTX)
        assert out == [{"type": "text", "content": "回答"}]
        assert "SECRET" not in repr(out)


def test_render_result_accepts_dict_and_str() -> None:
    adapter = TelegramChannelAdapter()
    assert adapter.render_result({"text": "a", "prompt_text": "p"}, QQ_CTX) == [
        {"type": "text", "content": "a"}
    ]
    assert adapter.render_result("plain", QQ_CTX) == [{"type": "text", "content": "plain"}]


def test_render_result_rejects_non_string_text() -> None:
    with pytest.raises(InputError) as err:
        QQChannelAdapter().render_result({"text": 42}, QQ_CTX)
    assert err.value.field == "text"


def test_render_policies_follow_the_seed_table() -> None:
    table = {
        QQChannelAdapter: (False, True, 4500),
        QQBotChannelAdapter: (False, True, 2000),
        TelegramChannelAdapter: (True, True, 4096),
        FeishuChannelAdapter: (True, True, 4000),
    }
    for cls, (markdown, image, limit) in table.items():
        policy = cls().get_render_policy(QQ_CTX)
        assert (policy.supports_markdown, policy.supports_image) == (markdown, image)
        assert (policy.max_text_length, policy.split_strategy) == (limit, "paragraph")
    assert ChannelRenderPolicy() == ChannelRenderPolicy(
        supports_stream=False,
        supports_markdown=True,
        supports_image=False,
        supports_file=False,
        supports_quote_reply=False,
        supports_at=False,
        max_text_length=None,
        split_strategy="paragraph",
    )


def test_long_reply_is_split_at_the_channel_limit() -> None:
    paragraph = "喵" * 1500
    text = "\n\n".join([paragraph] * 4)  # 6006 characters
    qqbot = QQBotChannelAdapter().render_result(SimpleNamespace(text=text), QQ_CTX)
    assert [len(m["content"]) for m in qqbot] == [1500] * 4  # paragraph + paragraph > 2000
    qq = QQChannelAdapter().render_result(SimpleNamespace(text=text), QQ_CTX)
    assert [len(m["content"]) for m in qq] == [3002, 3002]  # three paragraphs are 4504 > 4500
    web = WebChannelAdapter().render_result(SimpleNamespace(text=text), QQ_CTX)
    assert len(web) == 1


def test_render_sends_text_as_written_even_without_markdown_support() -> None:
    # SPEC: no text lost. Role-play replies use *动作* and ~~ as plain text on QQ.
    text = "# 标题\n*摇尾巴* 喵~~主人~~ [链接](https://example.com)"
    for adapter in (QQChannelAdapter(), QQBotChannelAdapter(), TelegramChannelAdapter()):
        assert adapter.render_result(text, QQ_CTX) == [{"type": "text", "content": text}]
    assert QQChannelAdapter().render_result("#", QQ_CTX) == [{"type": "text", "content": "#"}]


# --- split_text ---------------------------------------------------------------------------------


def test_split_prefers_paragraph_then_line_then_sentence_then_space_then_hard() -> None:
    assert split_text("aaaa bbbb\n\ncccc", 10) == ["aaaa bbbb", "cccc"]
    assert split_text("aaaa\nbbbb cccc", 10) == ["aaaa", "bbbb cccc"]
    assert split_text("你好。世界很大！再见", 8) == ["你好。世界很大！", "再见"]
    assert split_text("你好。世界很大！再见", 7) == ["你好。", "世界很大！再见"]
    assert split_text("One two. Three four", 12) == ["One two.", "Three four"]
    assert split_text("aaaa bbbb cccc", 10) == ["aaaa bbbb", "cccc"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_split_keeps_decimals_and_urls_whole() -> None:
    assert split_text("Pi is 3.14159 ok", 10) == ["Pi is", "3.14159 ok"]
    assert split_text("see example.com now", 12) == ["see", "example.com", "now"]


def test_split_takes_the_last_boundary_that_fits() -> None:
    text = "p1\n\np2\n\np3 is longer"
    assert split_text(text, 8) == ["p1\n\np2", "p3 is", "longer"]


def test_split_keeps_closing_quotes_with_the_sentence() -> None:
    assert split_text("他说：“好。”然后走了", 7) == ["他说：“好。”", "然后走了"]


def test_split_edge_cases() -> None:
    assert split_text("", 5) == []
    assert split_text("   \n\n  ", 5) == []
    assert split_text("  hi  ", 5) == ["hi"]
    assert split_text("anything", None) == ["anything"]
    with pytest.raises(InputError):
        split_text("abc", 0)


def _reassemble(text: str, chunks: list[str]) -> None:
    """text == ws + chunk + ws + chunk … + ws, with every ws whitespace-only."""
    pos = 0
    for chunk in chunks:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        assert text.startswith(chunk, pos), (text, chunks, pos)
        pos += len(chunk)
    assert text[pos:].strip() == ""


TEXT = st.text(
    alphabet=st.sampled_from(list("ab 猫。！？.!?\n\n\t”")) | st.characters(),
    max_size=400,
)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=60))
def test_split_property_fits_and_loses_only_boundary_whitespace(text: str, limit: int) -> None:
    chunks = split_text(text, limit)
    assert all(0 < len(chunk) <= limit for chunk in chunks)
    assert all(chunk == chunk.strip() for chunk in chunks)
    _reassemble(text, chunks)
    # only whitespace is ever dropped
    assert re.sub(r"\s", "", "".join(chunks)) == re.sub(r"\s", "", text)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="猫ab ", min_size=1, max_size=30), min_size=1, max_size=12))
def test_split_property_paragraphs_that_fit_stay_whole(paragraphs: list[str]) -> None:
    paragraphs = [p.strip() for p in paragraphs if p.strip()]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, 30)
    for paragraph in paragraphs:  # each paragraph (≤ 30) lies inside exactly one chunk
        assert any(paragraph in chunk for chunk in chunks)


# --- strip_markdown -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("## 第一章\n正文", "第一章\n正文"),
        ("**粗体** and __bold__ and *斜体* and _it_", "粗体 and bold and 斜体 and it"),
        ("~~删除~~", "删除"),
        ("这是*重点*内容", "这是重点内容"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("[官网](https://neko.example/a?b=1)", "官网 (https://neko.example/a?b=1)"),
        ("[https://x.y](https://x.y)", "https://x.y"),
        ("![猫](https://img.example/cat.png)", "猫 (https://img.example/cat.png)"),
        ("<https://auto.link>", "https://auto.link"),
        ("- 一\n- 二\n  * 嵌套\n1. 第一\n2. 第二", "• 一\n• 二\n  • 嵌套\n1. 第一\n2. 第二"),
        ("- [x] 完成\n- [ ] 未完成", "• ☑ 完成\n• ☐ 未完成"),
        ("> 引用 **强调**", "引用 强调"),
        ("```python\nx = **1**  # *not* emphasis\n```\n后文", "x = **1**  # *not* emphasis\n后文"),
        ("用 `a*b*c` 计算", "用 a*b*c 计算"),
        ("上文\n\n---\n\n下文", "上文\n\n\n\n下文"),
        ("| a | b |\n|---|:---:|\n| 1 | 2 |", "| a | b |\n\n| 1 | 2 |"),
        ("标题\n===\n内容", "标题\n内容"),
        (r"\*不是强调\*", "*不是强调*"),
        ("没有任何标记的普通文本。", "没有任何标记的普通文本。"),
    ],
)
def test_strip_markdown(markdown: str, plain: str) -> None:
    assert strip_markdown(markdown) == plain


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_strip_markdown_never_fails_and_render_chunks_fit(text: str) -> None:
    stripped = strip_markdown(text)
    assert isinstance(stripped, str)
    out = QQBotChannelAdapter().render_result(text * 8, QQ_CTX)
    assert all(0 < len(m["content"]) <= 2000 for m in out)
