"""Turns with imported character cards (the corpus and a card using every prompt field), inline:
macros rendered, greeting first, example dialogue, depth insert and post-history instructions
where the card specs put them; a retried before_turn renders the same prompt."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from sqlmodel import Session, delete, select

from nekoflow.characters import card_document, import_card_report
from nekoflow.storage.dialogue import Line
from nekoflow.storage.turns import TurnStage
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stages import before_turn, dispatch, llm_messages
from nekoflow.turns.stages.prompt import prompt_settings
from tests.corpus import corpus_file

CARDS = [
    "st_Aqua_v1.json",
    "st_Megumin_v1.png",
    "st_default_CodingSensei.png",
    "st_default_Seraphina.png",
    "lide_ai_v3.json",
]
LEFTOVER = re.compile(r"\{\{\s*(char|user|random|pick|time|date|weekday)\b|<(user|bot|char)>", re.I)


def event(text: str, name: str, session: str = "s1", **metadata: Any) -> dict:
    return {
        "session_id": session,
        "message": text,
        "user_id": "u1",
        "display_name": "莱姆",
        "character_id": name,
        "metadata": {"time": 1_764_079_500, **metadata},  # 2025-11-25 14:05 UTC
    }


def start_turn(deps, name: str, text: str = "你好", **metadata: Any) -> str:
    """A turn claimed and through before_turn (not yet at the model)."""
    handle = submit_turn(deps, "web", event(text, name, **metadata))
    dispatch(deps, handle.turn_id)
    before_turn(deps, handle.turn_id)
    return handle.turn_id


def retry_before_turn(deps, turn_id: str) -> list[dict[str, str]]:
    """Forget before_turn's stored result and run it again (what a lost result leads to)."""
    with Session(deps.engine) as s:
        s.exec(
            delete(TurnStage).where(TurnStage.turn_id == turn_id, TurnStage.stage == "before_turn")
        )
        s.commit()
    before_turn(deps, turn_id)
    return llm_messages(deps, turn_id)


@pytest.mark.parametrize("name", CARDS)
def test_each_corpus_card_renders_in_a_turn(deps, name: str) -> None:
    raw = corpus_file(name).read_bytes()
    doc = card_document(raw)
    data = doc.get("data", doc)
    role = import_card_report(deps.engine, raw).role
    turn_id = start_turn(deps, role.name)
    messages = llm_messages(deps, turn_id)
    system = messages[0]
    greeting = next(m for m in messages if m["role"] == "assistant")
    user = [m for m in messages if m["role"] == "user"][-1]
    assert system["role"] == "system" and user == {"role": "user", "content": "你好"}
    text = "\n".join(m["content"] for m in messages)
    assert not LEFTOVER.search(text), LEFTOVER.search(text)
    # the greeting is the first line of the conversation, macros rendered
    assert greeting["role"] == "assistant"
    first = data["first_mes"].replace("{{user}}", "莱姆").replace("{{char}}", role.name)
    assert greeting["content"].replace("\r", "") == first.strip().replace("\r", "")
    for field in ("description", "personality", "scenario"):
        value = (data.get(field) or "").strip()
        if value:
            rendered = value.replace("{{user}}", "莱姆").replace("{{char}}", role.name)
            assert rendered in system["content"]
    if (data.get("mes_example") or "").strip():
        assert "[Example Chat]" in system["content"]
        assert "莱姆: Hi, I heard you're the best mage in town." in system["content"]
    # a retry renders exactly the same prompt
    assert retry_before_turn(deps, turn_id) == messages
    assert run_inline(deps, turn_id, sleep=False) == "ok"
    with Session(deps.engine) as s:
        lines = s.exec(select(Line).order_by(Line.id)).all()
        assert [line.attribute for line in lines][:2] == ["assistant", "user"]
        assert lines[1].parent_line_id == lines[0].id


FULL: dict[str, Any] = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "风堇",
        "description": "{{char}}是温柔的治疗师。今天她的心情是{{random::晴::雨::雪::雾}}。",
        "personality": "细心",
        "scenario": "{{user}}在{{weekday}} {{time}}醒来",
        "first_mes": "你醒啦,{{user}}",
        "alternate_greetings": ["又见面了,{{user}}", "欢迎回来,<USER>"],
        "mes_example": (
            "<START>\n{{user}}: 你好\n{{char}}: 你好呀\n<START>\n{{user}}: 累吗\n{{char}}: 不累"
        ),
        "system_prompt": "你在扮演{{char}}。{{original}}",
        "post_history_instructions": "始终保持{{char}}的口吻,不要替{{user}}说话。",
        "extensions": {
            "depth_prompt": {"prompt": "{{char}}暗暗担心{{user}}的伤", "depth": 1, "role": "system"}
        },
    },
}


def import_full(deps, **data: Any) -> str:
    doc = copy.deepcopy(FULL)
    doc["data"].update(data)
    return import_card_report(deps.engine, json.dumps(doc, ensure_ascii=False).encode()).role.name


def test_every_prompt_field_where_the_spec_puts_it(deps) -> None:
    name = import_full(deps)
    first = start_turn(deps, name, "我这是在哪")
    assert run_inline(deps, first, sleep=False) == "ok"
    turn_id = start_turn(deps, name, "谢谢你救了我")
    m = llm_messages(deps, turn_id)
    system = m[0]["content"]
    assert system.startswith("你在扮演风堇。你是风堇。")
    assert "场景:莱姆在Tuesday 2:05 PM醒来" in system
    assert "[Example Chat]\n莱姆: 你好\n风堇: 你好呀" in system
    roles = [x["role"] for x in m]
    # system, greeting, user 1, reply 1, [character's note at depth 1], user 2, post-history
    assert roles[:3] == ["system", "assistant", "user"]
    assert m[1]["content"] == "你醒啦,莱姆"
    assert m[-3] == {"role": "system", "content": "风堇暗暗担心莱姆的伤"}
    assert m[-2] == {"role": "user", "content": "谢谢你救了我"}
    assert m[-1] == {"role": "system", "content": "始终保持风堇的口吻,不要替莱姆说话。"}
    mood = re.search(r"心情是(.)", system).group(1)
    assert mood in "晴雨雪雾"
    assert retry_before_turn(deps, turn_id) == m  # same random pick on a retry


def test_random_differs_between_turns_but_not_retries(deps) -> None:
    name = import_full(deps, description="{{random::" + "::".join("ABCDEFGHIJKLMNOP") + "}}")
    picks = set()
    for n in range(6):
        handle = submit_turn(deps, "web", event(f"第{n}句", name, session=f"r{n}"))
        dispatch(deps, handle.turn_id)
        before_turn(deps, handle.turn_id)
        system = llm_messages(deps, handle.turn_id)[0]["content"]
        picks.add(re.search(r"角色描述:(.)", system).group(1))
        assert retry_before_turn(deps, handle.turn_id)[0]["content"] == system
    assert len(picks) > 1


def test_alternate_greeting_picked_by_metadata(deps) -> None:
    name = import_full(deps)
    turn_id = start_turn(deps, name, "嗨", greeting=2)
    assert llm_messages(deps, turn_id)[1] == {"role": "assistant", "content": "欢迎回来,莱姆"}
    assert run_inline(deps, turn_id, sleep=False) == "ok"
    # the greeting is written once per conversation: a later turn's choice changes nothing
    start_turn(deps, name, "嗨", greeting=1)
    # out of range: the first message
    third = submit_turn(deps, "web", event("嗨", name, session="s2", greeting=99))
    dispatch(deps, third.turn_id)
    before_turn(deps, third.turn_id)
    assert llm_messages(deps, third.turn_id)[1] == {"role": "assistant", "content": "你醒啦,莱姆"}
    with Session(deps.engine) as s:
        greetings = s.exec(select(Line).where(Line.turn_id.like("greeting:%"))).all()
    assert [g.content for g in greetings] == ["欢迎回来,莱姆", "你醒啦,莱姆"]


def test_example_budget_setting(deps, monkeypatch) -> None:
    monkeypatch.setenv("NEKOFLOW_PROMPT_EXAMPLE_CHARS", "20")
    prompt_settings.cache_clear()
    try:
        name = import_full(deps)
        turn_id = start_turn(deps, name)
        system = llm_messages(deps, turn_id)[0]["content"]
        assert "你好呀" in system and "不累" not in system  # whole examples only
    finally:
        prompt_settings.cache_clear()


def test_macro_timezone_setting(deps, monkeypatch) -> None:
    monkeypatch.setenv("NEKOFLOW_MACRO_TIMEZONE", "Asia/Shanghai")
    prompt_settings.cache_clear()
    try:
        name = import_full(deps)
        system = llm_messages(deps, start_turn(deps, name))[0]["content"]
        assert "场景:莱姆在Tuesday 10:05 PM醒来" in system
        monkeypatch.setenv("NEKOFLOW_MACRO_TIMEZONE", "Mars/Olympus")
        prompt_settings.cache_clear()
        with pytest.raises(ValueError, match="macro_timezone"):
            prompt_settings()
    finally:
        prompt_settings.cache_clear()


def test_plain_character_prompt_has_no_card_parts(deps, role) -> None:
    turn_id = start_turn(deps, role.name, "你好")
    m = llm_messages(deps, turn_id)
    assert [x["role"] for x in m] == ["system", "user"]  # no greeting, no inserts, no tail
    assert m[0]["content"].startswith("你是钦灵。\n\n## behavior")
    assert "## character.profile\n你叫钦灵,是一只猫娘。" in m[0]["content"]


def test_card_lore_goes_where_its_entries_say(deps) -> None:
    raw = corpus_file("lide_ai_v3.json").read_bytes()
    result = import_card_report(deps.engine, raw)
    positions = {e.id: e.rules.position for e in result.book.entries}
    turn_id = start_turn(deps, result.role.name, "玄天宗今天热闹吗")
    messages = llm_messages(deps, turn_id)
    system = messages[0]["content"]
    inserts = "\n".join(m["content"] for m in messages[1:] if m["role"] == "system")
    with Session(deps.engine) as s:
        injected = s.get(TurnStage, (turn_id, "before_turn")).result["injected"]
    assert injected  # the greeting (history) and the message fire entries of the card's book
    assert not LEFTOVER.search("\n".join(m["content"] for m in messages))
    profile_end = system.index("## character.relationship")
    for entry in injected:
        head = f"【{entry['name']}】\n"
        where = positions[entry["id"]]
        if where == "before_char":  # before the character definition's sections
            start = system.index("## world_book.before_char\n")
            assert start < system.index(head) < profile_end
        elif where == "after_char":  # the world_book section after it
            assert system.index(head) > system.index("以下是在当前对话中触发的世界观设定")
        else:  # at a depth of the chat, as a message of its own role
            assert head not in system and head in inserts


@pytest.mark.parametrize("name", CARDS)
def test_each_corpus_card_with_the_v2_prompt_fields_it_lacks(deps, name: str) -> None:
    """The corpus cards leave system_prompt / post_history_instructions / mes_example /
    depth_prompt empty: filled in (the rest of the card as written), each lands where the
    V2 spec puts it."""
    doc = copy.deepcopy(dict(card_document(corpus_file(name).read_bytes())))
    data = doc.setdefault("data", doc) if "data" in doc else doc
    data.update(
        system_prompt="{{original}}(扮演{{char}})",
        post_history_instructions="只写{{char}}的下一句,不替{{user}}说话。",
        mes_example=(data.get("mes_example") or "") + "\n<START>\n{{user}}: 早\n{{char}}: 早安",
        extensions={
            **(data.get("extensions") or {}),
            "depth_prompt": {"prompt": "{{char}}记得{{user}}", "depth": 0, "role": "system"},
        },
    )
    role = import_card_report(deps.engine, json.dumps(doc, ensure_ascii=False).encode()).role
    turn_id = start_turn(deps, role.name, "早上好")
    m = llm_messages(deps, turn_id)
    system = m[0]["content"]
    assert system.startswith(f"你是{role.name}。(扮演{role.name})")
    assert f"[Example Chat]\n莱姆: 早\n{role.name}: 早安" in system
    assert m[-3] == {"role": "user", "content": "早上好"}
    # depth 0: after the user's message (with any lore of the card's book at depth 0, system)
    assert m[-2]["role"] == "system" and m[-2]["content"].endswith(f"{role.name}记得莱姆")
    assert m[-1] == {"role": "system", "content": f"只写{role.name}的下一句,不替莱姆说话。"}
    assert retry_before_turn(deps, turn_id) == m
