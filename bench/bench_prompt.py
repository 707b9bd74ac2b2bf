"""Benchmark: a card character's prompt assembly (macros in every part) vs the plain SPEC prompt.

Realistic data from the corpus: the Chinese V3 card (lide_ai_v3.json, 27-entry book, ~25k chars
of lore with ``<user>`` macros) and SillyTavern's Seraphina (long English description with
``{{user}}``/``{{char}}``), with example dialogue, a system prompt, a character's note and
post-history instructions added. For each, the whole book is the turn's lore (the worst case: every
entry reached the prompt) and 40 history messages take the depth inserts. The baseline, measured
in the same run, is the seed's plain prompt (``build_system_prompt``: PromptStack + injector, no
macros) over the same lore; the ratio says what card fidelity costs per turn.

    python bench/bench_prompt.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from nekoflow.characters import parse_card
from nekoflow.characters.card import DepthPrompt
from nekoflow.macros import MacroContext
from nekoflow.turns.prompting import (
    assemble_prompt,
    build_system_prompt,
    place_depth_inserts,
    placement_from_entries,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
REL = {"affection": 60, "trust": 50, "familiarity": 30, "dependency": 30, "security": 50}


def timed(fn: Callable[[], object], rounds: int = 200) -> float:
    """Median milliseconds per call."""
    fn()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def run(name: str) -> None:
    """Time one corpus card's prompt against the plain prompt over the same lore."""
    parsed = parse_card((CORPUS / name).read_bytes())
    card = parsed.card.model_copy(
        update={
            "mes_example": "<START>\n{{user}}: 你好\n{{char}}: {{random::你好呀::嗯?}}\n" * 6,
            "system_prompt": "{{original}} 你在扮演{{char}},现在是{{weekday}} {{time}}。",
            "post_history_instructions": "保持{{char}}的口吻,不要替{{user}}说话。",
            "depth_prompt": DepthPrompt(prompt="{{char}}在意{{user}}", depth=4),
        }
    )
    entries = parsed.book.entries if parsed.book else []
    lore_chars = sum(len(e.content) for e in entries)
    ctx = MacroContext(
        char=card.name, user="莱姆", now=datetime(2026, 11, 25, tzinfo=UTC), seed="turn-1"
    )
    history = [{"role": "user" if n % 2 else "assistant", "content": f"第{n}句"} for n in range(40)]

    def card_turn() -> object:
        p = assemble_prompt(
            role_name=card.name,
            profile="",
            card=card,
            scene={},
            real_time_label=None,
            continuity=None,
            relationship=REL,
            memories="",
            lore=placement_from_entries(entries),
            macros=ctx,
        )
        return place_depth_inserts(history, p.depth_inserts)

    def plain_turn() -> object:
        return build_system_prompt(
            role_name=card.name,
            profile=card.description,
            scene={},
            real_time_label=None,
            continuity=None,
            relationship=REL,
            memories="",
            world_book=entries,
            world_book_chars=10**9,
        )

    card_ms, plain_ms = timed(card_turn), timed(plain_turn)
    print(
        f"{name}: {len(entries)} lore entries, {lore_chars} chars of lore | "
        f"card prompt {card_ms:.3f} ms | plain SPEC prompt {plain_ms:.3f} ms | "
        f"ratio {card_ms / plain_ms:.2f}x"
    )


def main() -> None:
    print("machine: 2-core x86_64, shared with other jobs; median of 200 calls")
    for name in ("lide_ai_v3.json", "st_default_Seraphina.png"):
        run(name)


if __name__ == "__main__":
    main()
