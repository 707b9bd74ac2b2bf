"""Prompt assembly (pure): the SPEC prompt for plain characters, card parts where the specs put
them, lore placement and depth inserts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from nekoflow.characters.card import CardData, DepthPrompt
from nekoflow.macros import MacroContext
from nekoflow.prompt import PromptStack
from nekoflow.turns.prompting import (
    REPLY_FORMAT,
    assemble_prompt,
    build_system_prompt,
    examples_within,
    lore_for_turn,
    place_depth_inserts,
    placement_from_entries,
    relationship_text,
    split_examples,
)
from nekoflow.worldbook import WorldBookEntry, inject_world_book
from nekoflow.worldbook.placement import DepthInsert, LorePlacement

REL = {"affection": 60, "trust": 50}
CTX = MacroContext(
    char="风堇", user="莱姆", now=datetime(2026, 11, 25, 14, 5, tzinfo=UTC), seed="t1"
)


def legacy_prompt(
    role_name: str,
    profile: str,
    scene: dict,
    label: str | None,
    continuity: str | None,
    memories: str,
    world_book: Sequence[WorldBookEntry],
    chars: int,
) -> str:
    """The seed's system prompt exactly as nekoflow built it before cards (the reference)."""
    stack = PromptStack()
    stack.add("behavior", REPLY_FORMAT, priority=PromptStack.PRIORITY_BEHAVIOR)
    stack.add("character.profile", profile, priority=PromptStack.PRIORITY_CHARACTER_PROFILE)
    if scene:
        state = ",".join(f"{k}: {v}" for k, v in scene.items())
        stack.add("character.runtime_state", f"当前场景 {state}", priority=40)
    if label and continuity and continuity != "continuous":
        text = (
            "这是你们的第一次对话。"
            if continuity == "first_contact"
            else f"距离上次对话已经过去{label}。"
        )
        stack.add("real_time.continuity", text, priority=41)
    stack.add("character.relationship", relationship_text(REL), priority=50)
    stack.add("character.memories", memories, priority=60)
    inject_world_book(stack, list(world_book), max_total_chars=chars)
    return stack.render(f"你是{role_name}。")


def test_plain_character_gets_the_seed_prompt() -> None:
    entries = [
        WorldBookEntry(id="a", name="白塔", keywords=["塔"], content="白塔是分别的地方"),
        WorldBookEntry(id="b", name="", keywords=["猫"], content="猫" * 2500),
        WorldBookEntry(id="c", name="大", keywords=["猫"], content="甲" * 900),
    ]
    for scene, label, cont, mem in (
        ({}, None, None, ""),
        ({"地点": "猫咖"}, "3天", "days", "- 记忆: 喜欢红茶"),
        ({}, "刚刚", "first_contact", ""),
    ):
        args = dict(scene=scene, memories=mem, world_book=entries)
        expected = legacy_prompt("钦灵", "你叫钦灵。", scene, label, cont, mem, entries, 3000)
        got = build_system_prompt(
            role_name="钦灵",
            profile="你叫钦灵。",
            real_time_label=label,
            continuity=cont,
            relationship=REL,
            world_book_chars=3000,
            **args,
        )
        assert got == expected


CARD = CardData(
    name="风堇",
    description="{{char}}是温柔的治疗师,会叫<USER>的名字。{{// 作者备注}}",
    personality="细心",
    scenario="{{user}}在白塔之下醒来",
    mes_example=(
        "<START>\n{{user}}: 你好\n{{char}}: 你好呀\n"
        "<start>\n{{user}}: 累吗\n{{char}}: 不累。" + "很" * 50 + "\n<START>\n<START>  \n"
    ),
    system_prompt="你在扮演{{char}}。{{original}}",
    post_history_instructions="保持{{char}}的口吻。{{original}}",
    depth_prompt=DepthPrompt(prompt="{{char}}很在意{{user}}", depth=2, role="user"),
)


def assemble(card: CardData | None = CARD, lore: LorePlacement | None = None, **kw):
    return assemble_prompt(
        role_name="风堇",
        profile="旧的简介",
        card=card,
        scene={},
        real_time_label=None,
        continuity=None,
        relationship=REL,
        memories="",
        lore=lore or LorePlacement(),
        macros=CTX,
        **kw,
    )


def test_card_parts_are_placed_and_rendered() -> None:
    p = assemble()
    assert p.system.startswith("你在扮演风堇。你是风堇。\n\n## behavior")  # {{original}}
    assert "旧的简介" not in p.system
    assert (
        "## character.profile\n角色描述:风堇是温柔的治疗师,会叫莱姆的名字。\n性格:细心" in p.system
    )
    assert "场景:莱姆在白塔之下醒来" in p.system
    assert "{{" not in p.system and "<USER>" not in p.system
    ex = p.system.index("## character.examples")
    assert p.system.index("## character.profile") < ex < p.system.index("## character.relationship")
    assert "[Example Chat]\n莱姆: 你好\n风堇: 你好呀" in p.system and p.examples == 2
    assert p.depth_inserts == [DepthInsert(depth=2, role="user", content="风堇很在意莱姆", order=1)]
    assert p.post_history == "保持风堇的口吻。"  # {{original}}: nekoflow has no other one


def test_examples_split_and_budget_keeps_whole_examples() -> None:
    examples = split_examples(CARD.mes_example)
    assert len(examples) == 2 and examples[0] == "{{user}}: 你好\n{{char}}: 你好呀"
    assert examples_within(examples, 10_000) == examples
    assert examples_within(examples, len(examples[0])) == examples[:1]
    assert examples_within(examples, 3) == []
    p = assemble(example_chars=20)
    assert p.examples == 1 and "不累" not in p.system
    assert assemble(example_chars=0).examples == 0
    assert "character.examples" not in assemble(example_chars=0).system


def test_lore_before_and_after_the_character_definition() -> None:
    lore = LorePlacement(
        before_char=["【世界】\n{{user}}来自远方"],
        after_char=["【白塔】\n白塔属于{{char}}"],
        at_depth=[DepthInsert(depth=0, role="system", content="<BOT>记得约定")],
    )
    p = assemble(lore=lore)
    before = p.system.index("## world_book.before_char\n【世界】\n莱姆来自远方")
    profile = p.system.index("## character.profile")
    after = p.system.index(
        "## world_book\n以下是在当前对话中触发的世界观设定:\n\n【白塔】\n白塔属于风堇"
    )
    assert before < profile < after
    assert DepthInsert(depth=0, role="system", content="风堇记得约定", order=0) in p.depth_inserts


def test_placement_adapter_keeps_todays_order_and_format() -> None:
    entries = [
        WorldBookEntry(id="a", name="甲", keywords=["x"], content=" 内容 "),
        WorldBookEntry(id="b", name="", keywords=["x"], content="乙" * 2100),
        WorldBookEntry(id="c", name="丙", keywords=["x"], content="   "),
    ]
    placed = placement_from_entries(entries)
    assert placed.before_char == [] and placed.at_depth == []
    assert placed.after_char == ["【甲】\n内容", "乙" * 2000 + "..."]


def msgs(*roles: str) -> list[dict[str, str]]:
    return [{"role": r, "content": f"{r}{n}"} for n, r in enumerate(roles)]


def test_depth_inserts() -> None:
    chat = msgs("assistant", "user", "assistant", "user")
    out = place_depth_inserts(
        chat,
        [
            DepthInsert(depth=0, role="system", content="D0"),
            DepthInsert(depth=2, role="user", content="D2a"),
            DepthInsert(depth=2, role="user", content="D2b"),
            DepthInsert(depth=2, role="system", content="D2s"),
            DepthInsert(depth=99, role="assistant", content="deep"),
            DepthInsert(depth=1, role="system", content="   "),
        ],
    )
    assert [m["content"] for m in out] == [
        "deep",
        "assistant0",
        "user1",
        "D2a\n\nD2b",
        "D2s",
        "assistant2",
        "user3",
        "D0",
    ]
    assert out[3]["role"] == "user" and out[0]["role"] == "assistant"
    assert place_depth_inserts(chat, []) == chat
    assert place_depth_inserts([], [DepthInsert(depth=4, role="system", content="x")]) == [
        {"role": "system", "content": "x"}
    ]


def test_prompt_assembly_is_pure() -> None:
    code = (
        "import sys\n"
        "import nekoflow.turns.prompting, nekoflow.macros\n"
        "bad = [m for m in ('redis', 'sqlalchemy', 'sqlmodel', 'celery') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_lore_for_turn_seed_way_and_positioned() -> None:
    from nekoflow.worldbook import WorldBookMatchResult
    from nekoflow.worldbook.rules import EntryRules

    def hit(id_: str, content: str, cut_to: int | None = None, **rules) -> WorldBookMatchResult:
        entry = WorldBookEntry(
            id=id_, name=id_, keywords=["x"], content=content, rules=EntryRules(**rules)
        )
        return WorldBookMatchResult(entry=entry, cut_to=cut_to, score=1)

    results = [
        hit("前", "甲" * 10, position="before_char"),
        hit("后", "乙" * 10, position="after_char"),
        hit("深", "丙" * 10, position="at_depth", depth=1, role="user"),
        hit("大", "丁" * 500),  # does not fit the section budget: skipped, the next tried
        hit("切", "戊" * 40, cut_to=5, position="after_char"),
        hit("空", "   "),
    ]
    seed, reached = lore_for_turn(results, 80, positioned=False)
    assert [r.entry.id for r in reached] == ["前", "后", "深", "切"]
    assert seed.before_char == [] and seed.at_depth == []
    assert seed.after_char == [
        "【前】\n" + "甲" * 10,
        "【后】\n" + "乙" * 10,
        "【深】\n" + "丙" * 10,
        "【切】\n" + "戊" * 5,
    ]
    placed, reached2 = lore_for_turn(results, 80, positioned=True)
    assert reached2 == reached
    assert placed.before_char == ["【前】\n" + "甲" * 10]
    assert placed.after_char == ["【后】\n" + "乙" * 10, "【切】\n" + "戊" * 5]
    assert [(d.depth, d.role, d.content) for d in placed.at_depth] == [
        (1, "user", "【深】\n" + "丙" * 10)
    ]
