"""SPEC audit of the memory builder: the seed's examples exactly as a seed reader writes them.

Lines are the seed's own dicts (``line_id`` keys, explicit ``None`` values, optional keys left
out), seed-style ``Line`` rows, and rows stored in and loaded back from SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from nekoflow.errors import InputError
from nekoflow.memory import ReplySegment, build_memory, parse_reply
from nekoflow.memory.history import load_history, load_history_rows
from nekoflow.storage import session_scope
from nekoflow.storage.dialogue import Line, Role, Save
from tests.seed_data import SEED_EXAMPLE_1, SEED_EXAMPLE_2, SEED_MEMORY_1, SEED_MEMORY_2


def _seed_line(d: dict[str, Any], **extra: Any) -> Line:
    """A seed-style ``Line`` row built from an example dict (not stored)."""
    fields = {k: v for k, v in d.items() if k != "line_id"}
    if fields.get("script_role_id") is not None:
        fields["script_role_id"] = str(fields["script_role_id"])  # the column is a string
    return Line(save_id=1, **fields, **extra)


# --- the two worked examples, literally --------------------------------------------------------


def test_example_1_plain_dicts_without_an_identifier() -> None:
    assert build_memory(SEED_EXAMPLE_1) == SEED_MEMORY_1


@pytest.mark.parametrize(
    "target",
    [{"display_name": "钦灵"}, {"role_id": None, "script_role_id": None, "display_name": "钦灵"}],
)
def test_example_1_for_the_named_character(target: dict[str, Any]) -> None:
    assert build_memory(SEED_EXAMPLE_1, **target) == SEED_MEMORY_1


def test_example_1_reads_original_emotion_not_the_seed_typo() -> None:
    out = build_memory(SEED_EXAMPLE_1)
    assert out[2]["content"].startswith("【开心】")
    assert "开兴" not in "".join(m["content"] for m in out)


@pytest.mark.parametrize(
    "target",
    [
        {"role_id": 1},
        {"role_id": "1"},
        {"role_id": 1, "display_name": "钦灵"},
        {"role_id": 1, "script_role_id": None, "display_name": None},
    ],
)
def test_example_2_for_role_id_1(target: dict[str, Any]) -> None:
    assert build_memory(SEED_EXAMPLE_2, **target) == SEED_MEMORY_2


def test_examples_as_seed_line_rows() -> None:
    assert build_memory([_seed_line(d) for d in SEED_EXAMPLE_1]) == SEED_MEMORY_1
    assert build_memory([_seed_line(d) for d in SEED_EXAMPLE_2], role_id=1) == SEED_MEMORY_2


def test_example_2_as_a_generator_of_dicts() -> None:
    assert build_memory((dict(d) for d in SEED_EXAMPLE_2), role_id=1) == SEED_MEMORY_2


def test_the_builder_does_not_mutate_its_input() -> None:
    before = [dict(d) for d in SEED_EXAMPLE_2]
    build_memory(SEED_EXAMPLE_2, role_id=1)
    assert before == SEED_EXAMPLE_2


def test_every_message_is_a_role_content_dict() -> None:
    for out in (build_memory(SEED_EXAMPLE_1), build_memory(SEED_EXAMPLE_2, role_id=1)):
        for message in out:
            assert set(message) == {"role", "content"}
            assert message["role"] in {"system", "user", "assistant"}
            assert isinstance(message["content"], str) and message["content"]


# --- identities ---------------------------------------------------------------------------------


def test_script_role_id_1_is_a_different_character_than_role_id_1() -> None:
    out = build_memory(SEED_EXAMPLE_2, script_role_id=1)
    systems = [m["content"] for m in out if m["role"] == "system"]
    assert systems == ["你叫白小喵,进行角色扮演"]
    replies = [m["content"] for m in out if m["role"] == "assistant"]
    assert replies == [
        "【开心】你好呀莱姆,我在帮钦灵挑衣服呢~<こんにちは、ライム、きんりょうの服を選んでるんです~>",
        "【开心】不是啦,谁让你来这么巧刚准备换呢。"
        "<そういうわけじゃないですよ、きんりょうが服を変えるのを待ってたんです>",
    ]
    # 钦灵's lines are now other-speaker context: name:content, no emotion, no tts.
    assert "钦灵:哇,莱姆,你怎么来了?" in out[1]["content"]
    assert "【惊讶】" not in out[1]["content"] and "<ワア" not in out[1]["content"]
    # the history ends with the user run and 钦灵's line: all pending context, one final message
    assert out[-1] == {
        "role": "user",
        "content": "{莱姆:真是的...\n莱姆:钦灵酱,换好了吗?\n钦灵:好啦..}",
    }


def test_script_role_id_given_as_text_or_int_is_the_same_target() -> None:
    assert build_memory(SEED_EXAMPLE_2, script_role_id="1") == build_memory(
        SEED_EXAMPLE_2, script_role_id=1
    )


def test_no_identifier_makes_every_assistant_line_the_target() -> None:
    out = build_memory(SEED_EXAMPLE_2)
    assert [m["role"] for m in out][:3] == ["system", "system", "assistant"]
    assert all("{" not in m["content"] for m in out)  # nobody is "another speaker"
    assert out[2]["content"].startswith("圣诞节到了")  # the narrator line merges like any other


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role_id": 1.0}, "role_id"),
        ({"role_id": True}, "role_id"),
        ({"script_role_id": ["1"]}, "script_role_id"),
        ({"display_name": object()}, "display_name"),
    ],
)
def test_bad_identifier_is_an_input_error_naming_it(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError, match=field) as ei:
        build_memory(SEED_EXAMPLE_2, **kwargs)
    assert ei.value.field == field


# --- sparse lines (optional keys left out) ------------------------------------------------------


def test_lines_with_only_attribute_and_content() -> None:
    lines = [
        {"attribute": "system", "content": "设定"},
        {"attribute": "user", "content": "在吗"},
        {"attribute": "assistant", "content": "在"},
        {"attribute": "assistant", "content": "呢"},
    ]
    assert build_memory(lines) == [
        {"role": "system", "content": "设定"},
        {"role": "user", "content": "在吗"},
        {"role": "assistant", "content": "在呢"},
    ]


def test_nameless_lines_get_the_fallback_names_inside_the_braces() -> None:
    lines = [
        {"attribute": "assistant", "content": "风起了", "action_content": "远处传来钟声"},
        {"attribute": "user", "content": "谁?"},
        {"attribute": "assistant", "content": "是我", "display_name": "钦灵", "role_id": 1},
        {"attribute": "user", "content": "哦"},
        {"attribute": "assistant", "content": "嗯", "display_name": "白小喵"},
    ]
    assert build_memory(lines, role_id=1) == [
        {"role": "user", "content": "{未知:风起了(远处传来钟声)}\n谁?"},
        {"role": "assistant", "content": "是我"},
        {"role": "user", "content": "{用户:哦\n白小喵:嗯}"},
    ]


def test_a_missing_content_names_the_line_and_field() -> None:
    lines = [{"line_id": 1, "attribute": "user", "content": "hi"}, {"attribute": "assistant"}]
    with pytest.raises(InputError, match=r"lines\[1\]\.content"):
        build_memory(lines)


# --- stored and loaded back (the seed's get_chat_history, as one recursive CTE) -----------------


def _store_example_2(engine: Engine) -> int:
    """Store the seed's example 2 as a chain of Line rows; return the save id."""
    with session_scope(engine) as s:
        role = Role.new("钦灵", profile_prompt="你叫钦灵,进行角色扮演")
        s.add(role)
        s.flush()
        assert role.id is not None
        save = Save(role_id=role.id, scope_id="seed:example2")
        s.add(save)
        s.flush()
        assert save.id is not None
        parent: int | None = None
        for d in SEED_EXAMPLE_2:
            fields = {k: v for k, v in d.items() if k != "line_id"}
            if fields.get("role_id") == 1:
                fields["role_id"] = role.id
            if fields.get("script_role_id") is not None:
                fields["script_role_id"] = str(fields["script_role_id"])
            line = Line(save_id=save.id, parent_line_id=parent, **fields)
            s.add(line)
            s.flush()
            parent = line.id
        save.last_message_id = parent
        return save.id


def test_example_2_stored_loaded_and_built(engine: Engine) -> None:
    save_id = _store_example_2(engine)
    with Session(engine) as s:
        role_id = s.get(Save, save_id).role_id  # type: ignore[union-attr]
        rows = load_history(s, save_id)
        assert build_memory(rows, role_id=role_id) == SEED_MEMORY_2
        assert build_memory(rows, role_id=str(role_id)) == SEED_MEMORY_2
        assert build_memory(load_history_rows(s, save_id), role_id=role_id) == SEED_MEMORY_2


def test_a_branch_off_the_active_path_is_not_in_the_memory(engine: Engine) -> None:
    save_id = _store_example_2(engine)
    with session_scope(engine) as s:
        save = s.get(Save, save_id)
        assert save is not None
        leaf = s.get(Line, save.last_message_id)
        assert leaf is not None
        # a regenerated reply: a sibling of the leaf that is NOT the active branch
        s.add(
            Line(
                save_id=save_id,
                parent_line_id=leaf.parent_line_id,
                attribute="assistant",
                content="才没有!",
                role_id=save.role_id,
                display_name="钦灵",
            )
        )
    with Session(engine) as s:
        role_id = s.get(Save, save_id).role_id  # type: ignore[union-attr]
        assert build_memory(load_history(s, save_id), role_id=role_id) == SEED_MEMORY_2


# --- parse_reply (the seed's LLM message format) -----------------------------------------------


def test_parse_reply_of_the_seeds_assistant_message() -> None:
    text = "【高兴】莱姆你来啦(开心的摇尾巴)【好奇】你今天想聊什么呀?"
    assert parse_reply(text) == [
        ReplySegment(emotion="高兴", content="莱姆你来啦", action="开心的摇尾巴"),
        ReplySegment(emotion="好奇", content="你今天想聊什么呀?"),
    ]


def test_parse_reply_inverts_the_builders_merged_reply() -> None:
    merged = SEED_MEMORY_1[2]["content"]
    segments = parse_reply(merged)
    assert [(s.emotion, s.content, s.tts, s.action) for s in segments] == [
        (
            d["original_emotion"],
            d["content"],
            d["tts_content"],
            d["action_content"],
        )
        for d in SEED_EXAMPLE_1[2:5]
    ]
