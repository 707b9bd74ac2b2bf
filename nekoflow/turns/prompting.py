"""The prompt of a turn (pure): a PromptStack of profile, state, relationship, memories and world
book in SPEC's priority order, plus a character card's parts where the card specs place them
(system prompt, example dialogue, character's note at depth, post-history instructions), with
SillyTavern macros rendered in every part."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nekoflow.macros import MacroContext, render_macros
from nekoflow.prompt import PromptStack
from nekoflow.worldbook import WorldBookEntry, WorldBookMatchResult, injected_entries
from nekoflow.worldbook.injector import HEADER, MAX_ENTRY_CHARS, PROMPT_KEY
from nekoflow.worldbook.placement import DepthInsert, LorePlacement, place_lore

REPLY_FORMAT = (
    "用角色的口吻回复。每句话写成【情绪】内容<日语配音>(动作)的格式:"
    "情绪、配音和动作都可以省略,可以连续写多句。"
)

RELATIONSHIP_LABELS = {
    "affection": "好感",
    "trust": "信任",
    "familiarity": "熟悉",
    "dependency": "依赖",
    "security": "安全感",
    "jealousy": "嫉妒",
}


def relationship_text(values: dict[str, int]) -> str:
    """``好感 50/100,信任 60/100,…`` in a fixed order."""
    return ",".join(
        f"{label} {values.get(dim, 0)}/100" for dim, label in RELATIONSHIP_LABELS.items()
    )


def memories_text(memories: Sequence[tuple[str, str]], budget: int) -> tuple[str, int]:
    """Memory lines (``- title: content``) in the given order while they fit ``budget`` chars."""
    lines: list[str] = []
    used = 0
    for title, content in memories:
        line = f"- {title}: {content}".replace("\n", " ")
        if used + len(line) > budget:
            continue
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines), len(lines)


EXAMPLES_HEADER = "以下是{char}的示例对话,只示范说话方式和语气,不是真实发生过的对话:"
EXAMPLE_MARK = "[Example Chat]"
_START = re.compile(r"<START>", re.IGNORECASE)


class CardParts(Protocol):
    """The character-card fields prompt assembly reads (``nekoflow.characters.card.CardData``)."""

    name: str
    nickname: str
    description: str
    personality: str
    scenario: str
    mes_example: str
    system_prompt: str
    post_history_instructions: str

    @property
    def depth_prompt(self) -> Any: ...


@dataclass
class AssembledPrompt:
    """A turn's prompt: the system message, inserts into the chat, the last instruction."""

    system: str
    depth_inserts: list[DepthInsert] = field(default_factory=list)
    post_history: str = ""
    examples: int = 0


def _section(name: str, content: str) -> str:
    content = content.strip()
    if len(content) > MAX_ENTRY_CHARS:
        content = content[:MAX_ENTRY_CHARS] + "..."
    return f"【{name}】\n{content}" if name and content else content


def lore_sections(entries: Iterable[WorldBookEntry]) -> list[str]:
    """Entries as the injector writes them (``【name】\ncontent``, cut at 2000 chars)."""
    return [s for s in (_section(e.name, e.content) for e in entries) if s]


def placement_from_entries(entries: Iterable[WorldBookEntry]) -> LorePlacement:
    """Entries as a LorePlacement the seed's way: every one after the character definition,
    in recall order."""
    return LorePlacement(after_char=lore_sections(entries))


def lore_for_turn(
    results: Sequence[WorldBookMatchResult], max_total_chars: int, *, positioned: bool
) -> tuple[LorePlacement, list[WorldBookMatchResult]]:
    """The turn's lore and the results that reached the prompt.

    Sections (``【name】\ncontent``, the entry's content as recall cut it) are taken in recall
    order while their total fits ``max_total_chars`` (one that does not is skipped, the next
    tried — the SPEC injector's rule). ``positioned`` (card characters) places each by its
    SillyTavern position (:func:`~nekoflow.worldbook.placement.place_lore`: before or after the
    character definition, or at a depth and role); otherwise every section goes after the
    character definition, exactly the seed's ``world_book`` section.
    """
    reached: list[tuple[WorldBookMatchResult, str]] = []
    total = 0
    for result in results:
        section = _section(result.entry.name, result.content)
        if not section or total + len(section) > max_total_chars:
            continue
        reached.append((result, section))
        total += len(section)
    if not positioned:
        return LorePlacement(after_char=[s for _, s in reached]), [r for r, _ in reached]
    shaped = [
        r.model_copy(update={"entry": r.entry.model_copy(update={"content": s}), "cut_to": None})
        for r, s in reached
    ]
    placement, _ = place_lore(shaped)
    return placement, [r for r, _ in reached]


def split_examples(mes_example: str) -> list[str]:
    """The example dialogues of a card: the text split at ``<START>``, blank ones dropped."""
    return [part.strip() for part in _START.split(mes_example or "") if part.strip()]


def examples_within(examples: Sequence[str], budget: int) -> list[str]:
    """Whole examples from the first, while their total length fits ``budget`` chars."""
    kept: list[str] = []
    used = 0
    for example in examples:
        if used + len(example) > budget:
            break
        kept.append(example)
        used += len(example)
    return kept


def place_depth_inserts(
    messages: Sequence[dict[str, str]], inserts: Sequence[DepthInsert]
) -> list[dict[str, str]]:
    """``messages`` with each insert ``depth`` messages before the end (0 = after the last;
    deeper than the chat = at its start); inserts of one depth and role become one message."""
    n = len(messages)
    groups: dict[tuple[int, str], list[str]] = {}
    for ins in sorted(inserts, key=lambda i: i.order):
        if ins.content.strip():
            groups.setdefault((min(ins.depth, n), ins.role), []).append(ins.content.strip())
    out: list[dict[str, str]] = []
    for index in range(n + 1):
        for (depth, role), contents in groups.items():
            if n - depth == index:
                out.append({"role": role, "content": "\n\n".join(contents)})
        if index < n:
            out.append(dict(messages[index]))
    return out


def _render_all(texts: Sequence[str], ctx: MacroContext, part: str) -> list[str]:
    return [render_macros(t, ctx, part=f"{part}.{n}") for n, t in enumerate(texts)]


def assemble_prompt(
    *,
    role_name: str,
    profile: str,
    card: CardParts | None,
    scene: dict[str, object],
    real_time_label: str | None,
    continuity: str | None,
    relationship: dict[str, int],
    memories: str,
    lore: LorePlacement,
    macros: MacroContext,
    example_chars: int = 2000,
) -> AssembledPrompt:
    """The turn's prompt from the SPEC's PromptStack plus the card's parts, macros rendered.

    Without a card this is exactly the SPEC prompt: ``你是{name}。`` then the sections by
    priority, the lore after the character definition as the ``world_book`` section (65). With
    a card: its ``system_prompt`` replaces the base line (``{{original}}`` = that line), the
    character definition is description / personality / scenario (30), lore placed before it
    (25, ``world_book.before_char``) or after it (65), example dialogue within ``example_chars``
    (35, whole examples only), the character's note a depth insert, and
    ``post_history_instructions`` the last instruction after the chat.
    """
    base = f"你是{role_name}。"
    inserts: list[DepthInsert] = []
    post_history = ""
    n_examples = 0
    stack = PromptStack()
    stack.add("behavior", REPLY_FORMAT, priority=PromptStack.PRIORITY_BEHAVIOR)
    if card is None:
        definition = render_macros(profile, macros, part="profile")
    else:
        if card.system_prompt.strip():
            ctx = macros.with_values(original=base)
            base = render_macros(card.system_prompt, ctx, part="system_prompt")
        parts = [
            (card.description, "角色描述:", "description"),
            (card.personality, "性格:", "personality"),
            (card.scenario, "场景:", "scenario"),
        ]
        definition = "\n".join(
            label + render_macros(text.strip(), macros, part=key)
            for text, label, key in parts
            if text.strip()
        )
        examples = examples_within(
            _render_all(split_examples(card.mes_example), macros, "mes_example"), example_chars
        )
        n_examples = len(examples)
        if examples:
            header = EXAMPLES_HEADER.format(char=macros.char or role_name)
            body = "\n\n".join(f"{EXAMPLE_MARK}\n{e}" for e in examples)
            stack.add("character.examples", f"{header}\n\n{body}", priority=35)
        note = card.depth_prompt
        if note is not None and note.prompt.strip():
            text = render_macros(note.prompt, macros, part="depth_prompt")
            inserts.append(DepthInsert(depth=note.depth, role=note.role, content=text, order=1))
        if card.post_history_instructions.strip():
            ctx = macros.with_values(original="")
            post_history = render_macros(
                card.post_history_instructions, ctx, part="post_history_instructions"
            ).strip()
    stack.add("character.profile", definition, priority=PromptStack.PRIORITY_CHARACTER_PROFILE)
    before = _render_all(lore.before_char, macros, "lore.before")
    if before:
        stack.add("world_book.before_char", "\n\n".join(before), priority=25, scope="turn")
    if scene:
        state = ",".join(f"{k}: {v}" for k, v in scene.items())
        stack.add(
            "character.runtime_state",
            f"当前场景 {state}",
            priority=PromptStack.PRIORITY_RUNTIME_STATE,
        )
    if real_time_label and continuity and continuity != "continuous":
        text = (
            "这是你们的第一次对话。"
            if continuity == "first_contact"
            else (f"距离上次对话已经过去{real_time_label}。")
        )
        stack.add("real_time.continuity", text, priority=PromptStack.PRIORITY_REAL_TIME_CONTINUITY)
    stack.add(
        "character.relationship",
        relationship_text(relationship),
        priority=PromptStack.PRIORITY_RELATIONSHIP,
    )
    stack.add("character.memories", memories, priority=PromptStack.PRIORITY_MEMORIES)
    after = _render_all(lore.after_char, macros, "lore.after")
    if after:
        text = HEADER + "\n\n" + "\n\n".join(after)
        stack.add(PROMPT_KEY, text, priority=PromptStack.PRIORITY_WORLD_BOOK, scope="turn")
    for n, ins in enumerate(lore.at_depth):
        content = render_macros(ins.content, macros, part=f"lore.depth.{n}")
        inserts.append(DepthInsert(depth=ins.depth, role=ins.role, content=content, order=0))
    return AssembledPrompt(
        system=stack.render(base),
        depth_inserts=inserts,
        post_history=post_history,
        examples=n_examples,
    )


def build_system_prompt(
    *,
    role_name: str,
    profile: str,
    scene: dict[str, object],
    real_time_label: str | None,
    continuity: str | None,
    relationship: dict[str, int],
    memories: str,
    world_book: Sequence[WorldBookEntry],
    world_book_chars: int,
) -> str:
    """Render the system prompt of a character without a card (base line + sections)."""
    reached = injected_entries(list(world_book), world_book_chars)
    return assemble_prompt(
        role_name=role_name,
        profile=profile,
        card=None,
        scene=scene,
        real_time_label=real_time_label,
        continuity=continuity,
        relationship=relationship,
        memories=memories,
        lore=placement_from_entries(reached),
        macros=MacroContext(char=role_name),
    ).system
