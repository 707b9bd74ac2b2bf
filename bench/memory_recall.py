"""Benchmark: is what the user said in the prompt when a question needs it? Through real turns.

A bilingual conversation (``bench/data/memory_recall.json``: 65 facts stated in passing —
identity, dates, family and pets, work, places, likes, plans and promises, events, and changes
of earlier facts — among ``--filler`` turns of chit-chat from ``bench/data/filler.py``) goes
through the real chain's stages in-process (``submit_turn`` + ``run_inline``: dispatch,
before_turn, llm_call, memory_build, review with the default rules, apply_deltas; the summary
task after every 5th turn as the ``memory`` queue would) over ten simulated weeks (each
message carries its platform time). The model is a loopback that records the messages it
receives and answers a short line. Then the questions are asked, as turns, in several modes:

- ``window``: the history window alone (memory budgets 0, no rounds) — the baseline;
- ``default``: the default settings (rule review, rule summaries, no embeddings);
- ``embeddings``: default + a loopback embeddings endpoint (tests/memory/embeddings_server.py);
- ``perfect``: every user statement line stored as a memory (a perfect extractor);
- ``perfect+emb``: both.

Reported per mode and category: recall@prompt (every needle — the current value — in what
the model received), the current value's presence for changed facts, and how often only a
superseded value was shown. On SQLite and PostgreSQL. Question rounds are hidden after each
mode so one mode's questions do not answer the next's.

    python bench/memory_recall.py            # both databases, ~1,100 filler turns
    python bench/memory_recall.py --quick    # 300 filler turns, SQLite only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.data.filler import REPLIES_EN, REPLIES_ZH, filler_lines  # noqa: E402
from nekoflow.channels import CharacterRuntimeContextDispatcher  # noqa: E402
from nekoflow.events import RecordingEventBus  # noqa: E402
from nekoflow.llm.base import ChatResult  # noqa: E402
from nekoflow.memory.embeddings import OpenAIEmbedder  # noqa: E402
from nekoflow.memory.settings import MemorySettings  # noqa: E402
from nekoflow.memory.store import add_indexed  # noqa: E402
from nekoflow.memory.summaries import summarize_save  # noqa: E402
from nekoflow.memory.vectors import embed_scope  # noqa: E402
from nekoflow.review.autostate import InMemoryAutoState  # noqa: E402
from nekoflow.review.pipeline import ReviewPipeline  # noqa: E402
from nekoflow.settings import Settings  # noqa: E402
from nekoflow.storage import create_all, make_engine  # noqa: E402
from nekoflow.storage.dialogue import Line, Role, Save  # noqa: E402
from nekoflow.storage.memory import MemoryRound  # noqa: E402
from nekoflow.storage.turns import MemoryRecord  # noqa: E402
from nekoflow.turns.deps import TurnDeps  # noqa: E402
from nekoflow.turns.enqueue import submit_turn  # noqa: E402
from nekoflow.turns.runner import run_inline  # noqa: E402
from nekoflow.turns.stages import prompt as prompt_stage  # noqa: E402
from nekoflow.worldbook.cooldowns import InMemoryCooldowns  # noqa: E402
from tests.memory.embeddings_server import EmbeddingsServer  # noqa: E402

DATA = ROOT / "bench" / "data" / "memory_recall.json"
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DAYS = 70
WINDOW_ONLY = MemorySettings(prompt_tokens=0, summary_tokens=0, round_candidates=0)


class RecordingModel:
    """A loopback chat model: records the messages of each call, answers a short line."""

    name = "recording-loopback"

    def __init__(self) -> None:
        self.last: list[dict[str, Any]] = []
        self.calls = 0

    def complete(
        self,
        messages: Sequence[Any],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """Record ``messages``; answer a short reply in the user's language."""
        self.calls += 1
        self.last = [dict(m) for m in messages]
        user = str(self.last[-1].get("content", "")) if self.last else ""
        pool = REPLIES_EN if user.isascii() else REPLIES_ZH
        reply = pool[self.calls % len(pool)]
        return ChatResult(text=reply, model=self.name, prompt_tokens=1, completion_tokens=1)

    def received(self) -> str:
        """Everything the model received in its last call, as one lower-cased text."""
        return "\n".join(str(m.get("content", "")) for m in self.last).lower()


def schedule(facts: list[dict[str, Any]], filler: int, end: datetime) -> list[tuple[datetime, str]]:
    """(send time, text) of every conversation turn, oldest first: the facts on their days, the
    filler spread over the days (a heavier last day, so recent facts leave the window)."""
    start = (end - timedelta(days=DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    lines = filler_lines(filler)
    last_day = min(len(lines) // 8, 120)
    per_day = (len(lines) - last_day) / (DAYS - 1)
    by_day: dict[int, list[str]] = defaultdict(list)
    for i, line in enumerate(lines):
        day = DAYS - 1 if i >= len(lines) - last_day else min(int(i / per_day), DAYS - 2)
        by_day[day].append(line)
    for f in facts:
        chat = by_day[f["day"]]
        chat.insert(min(len(chat) // 3, 3), f["text"])  # said early in the day, in passing
    out: list[tuple[datetime, str]] = []
    for day in range(DAYS):
        chat = by_day[day]
        step = timedelta(hours=14) / max(len(chat), 1)
        for i, line in enumerate(chat):
            out.append((start + timedelta(days=day, hours=8) + step * i, line))
    return out


def question_time(now: datetime) -> datetime:
    """The questions' time: the last Monday 20:00 UTC at least a day before ``now`` (so "last
    Tuesday" and "昨天" in the set point at known days)."""
    at = (now - timedelta(days=1)).replace(hour=20, minute=0, second=0, microsecond=0)
    return at - timedelta(days=at.weekday())


class Rig:
    """One database: the deps, the character and the conversation's scope."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.model = RecordingModel()
        settings = Settings(database_url=str(engine.url), llm_backoff_base=0.0, llm_backoff_max=0.0)
        bus = RecordingEventBus()
        self.deps = TurnDeps(
            settings=settings,
            engine=engine,
            chat_model=self.model,
            review=ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()),
            cooldowns=InMemoryCooldowns(),
            dispatcher=CharacterRuntimeContextDispatcher(),
            events=bus,
            publish=lambda run: None,
        )
        with Session(engine) as s:
            role = Role.new("钦灵", profile_prompt="你叫钦灵,是海边猫咖的猫娘店员。")
            s.add(role)
            s.commit()
            self.role_id = int(role.id or 0)
        self.session = f"recall-{uuid.uuid4().hex[:8]}"
        self.turns = 0
        self.turn_ms: list[float] = []

    def say(self, at: datetime, message: str) -> str:
        """One turn through the real stages; returns its turn id."""
        event = {
            "session_id": self.session,
            "user_id": "u1",
            "display_name": "小满",
            "message": message,
            "metadata": {"time": int(at.timestamp())},
        }
        started = time.perf_counter()
        handle = submit_turn(self.deps, "web", event)
        outcome = run_inline(self.deps, handle.turn_id, sleep=False)
        self.turn_ms.append((time.perf_counter() - started) * 1000)
        if outcome != "ok":
            raise RuntimeError(f"turn ended {outcome}")
        self.turns += 1
        if self.turns % 5 == 0:  # the memory queue's summary task, as apply_deltas enqueues it
            summarize_save(self.engine, self.save_id(), MemorySettings(), model=None)
        return handle.turn_id

    def save_id(self) -> int:
        """The conversation's save."""
        with Session(self.engine) as s:
            save = s.exec(select(Save).where(Save.role_id == self.role_id)).first()
            assert save is not None and save.id is not None
            return save.id

    def scope_id(self) -> str:
        """The conversation's scope."""
        with Session(self.engine) as s:
            save = s.get(Save, self.save_id())
            assert save is not None
            return save.scope_id


@contextmanager
def memory_mode(settings: MemorySettings, embedder: Any = None) -> Iterator[None]:
    """The prompt stage reads these memory settings and this embedder for the duration."""
    saved = prompt_stage.get_memory_settings, prompt_stage.configured_embedder
    prompt_stage.get_memory_settings = lambda: settings  # type: ignore[assignment]
    prompt_stage.configured_embedder = lambda: embedder  # type: ignore[assignment]
    try:
        yield
    finally:
        prompt_stage.get_memory_settings, prompt_stage.configured_embedder = saved


def perfect_extractor(rig: Rig) -> int:
    """Store every user statement line (not a question) as a memory, dated as it was said."""
    scope = rig.scope_id()
    with Session(rig.engine) as s:
        lines = s.exec(
            select(Line).where(Line.save_id == rig.save_id(), col(Line.attribute) == "user")
        ).all()
        rows = [
            MemoryRecord(
                role_id=rig.role_id,
                scope_id=scope,
                turn_id=line.turn_id,
                title="",
                content=line.content,
                importance=0.5,
                ttl="permanent",
                created_at=line.created_at,
                updated_at=line.created_at,
            )
            for line in lines
            if line.content and not line.content.rstrip().endswith(("?", "?", "吗"))
        ]
        add_indexed(s, rows)
        s.commit()
    return len(rows)


def ask(
    rig: Rig, questions: list[dict[str, Any]], at: datetime, verbose: str = ""
) -> list[dict[str, Any]]:
    """Ask every question as a turn; what reached the model, per question. The questions'
    rounds are hidden afterwards (the next mode asks them again)."""
    results = []
    turn_ids = []
    for i, q in enumerate(questions):
        turn_ids.append(rig.say(at + timedelta(seconds=20 * i), q["text"]))
        seen = rig.model.received()
        needles = [n.lower() for n in q["needles"]]
        old = [n.lower() for n in q.get("superseded", [])]
        has = all(n in seen for n in needles)
        stale = bool(old) and any(o in seen for o in old) and not has
        if verbose and not has:
            print(
                f"   {verbose} miss [{q['cat']}] {q['text']}" + (" (stale alone)" if stale else "")
            )
        results.append(
            {
                "cat": q["cat"],
                "hit": has,
                "changed": bool(old),
                "stale_alone": stale,
            }
        )
    with Session(rig.engine) as s:
        s.execute(
            update(MemoryRound).where(col(MemoryRound.turn_id).in_(turn_ids)).values(hidden=1)
        )
        s.commit()
    return results


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall overall and per category, current-value presence and stale-alone counts."""
    cats: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        cats[r["cat"]].append(r["hit"])
    changed = [r for r in results if r["changed"]]
    return {
        "recall": sum(r["hit"] for r in results) / len(results),
        "hits": sum(r["hit"] for r in results),
        "n": len(results),
        "cats": {c: (sum(v), len(v)) for c, v in sorted(cats.items())},
        "current": (sum(r["hit"] for r in changed), len(changed)),
        "stale_alone": sum(r["stale_alone"] for r in results),
    }


def run(
    engine: Engine, label: str, data: dict[str, Any], filler: int, verbose: bool = False
) -> dict[str, Any]:
    """The conversation and every mode's questions on one database."""
    create_all(engine)
    rig = Rig(engine)
    asked = question_time(datetime.now(UTC))
    turns = schedule(data["facts"], filler, asked - timedelta(hours=1))
    began = time.perf_counter()
    for at, message in turns:
        rig.say(at, message)
    conv_s = time.perf_counter() - began
    with Session(engine) as s:
        n_lines = s.exec(select(Line).where(Line.save_id == rig.save_id())).all()
        memories = s.exec(select(MemoryRecord).where(MemoryRecord.role_id == rig.role_id)).all()
    out: dict[str, Any] = {
        "turns": len(turns),
        "lines": len(n_lines),
        "memories": sum(m.kind == "fact" for m in memories),
        "summaries": sum(m.kind == "summary" for m in memories),
        "turn_ms_p50": sorted(rig.turn_ms)[len(rig.turn_ms) // 2],
        "conversation_s": conv_s,
        "modes": {},
    }
    questions = data["questions"]
    day = timedelta(minutes=40)

    def v(mode: str) -> str:
        return f"{label} {mode}" if verbose else ""

    with memory_mode(WINDOW_ONLY):
        out["modes"]["window"] = summary(ask(rig, questions, asked))
    with memory_mode(MemorySettings()):
        out["modes"]["default"] = summary(ask(rig, questions, asked + day, v("default")))
    with EmbeddingsServer() as server:
        embedder = OpenAIEmbedder(server.base_url, "fake-embed", timeout=5)
        embed_scope(engine, embedder, rig.role_id, rig.scope_id(), batch=64, max_batches=10**6)
        with memory_mode(MemorySettings(), embedder):
            out["modes"]["embeddings"] = summary(ask(rig, questions, asked + 2 * day, v("emb")))
        out["perfect_memories"] = perfect_extractor(rig)
        with memory_mode(MemorySettings()):
            out["modes"]["perfect"] = summary(ask(rig, questions, asked + 3 * day, v("perfect")))
        embed_scope(engine, embedder, rig.role_id, rig.scope_id(), batch=64, max_batches=10**6)
        with memory_mode(MemorySettings(), embedder):
            out["modes"]["perfect+emb"] = summary(
                ask(rig, questions, asked + 4 * day, v("perfect+emb"))
            )
    report(label, out)
    return out


def report(label: str, out: dict[str, Any]) -> None:
    """Print one database's figures."""
    print(
        f"\n== {label}: {out['turns']} turns, {out['lines']} lines, {out['memories']} memories "
        f"from the rule review, {out['summaries']} summaries; turn p50 {out['turn_ms_p50']:.1f} ms"
        f" in-process; conversation {out['conversation_s']:.0f} s"
    )
    modes = out["modes"]
    cats = sorted({c for m in modes.values() for c in m["cats"]})
    head = f"{'category':<12}" + "".join(f"{name:>13}" for name in modes)
    print(head)
    for c in cats:
        row = f"{c:<12}"
        for m in modes.values():
            hit, n = m["cats"].get(c, (0, 0))
            row += f"{f'{hit}/{n}':>13}"
        print(row)
    print(f"{'recall':<12}" + "".join(f"{m['recall']:>13.2f}" for m in modes.values()))
    base = modes["window"]["recall"] or 1 / max(modes["window"]["n"], 1)
    print(f"{'× window':<12}" + "".join(f"{m['recall'] / base:>13.1f}" for m in modes.values()))
    print(
        f"{'current':<12}" + "".join(f"{'{}/{}'.format(*m['current']):>13}" for m in modes.values())
    )
    print(f"{'stale alone':<12}" + "".join(f"{m['stale_alone']:>13}" for m in modes.values()))


@contextmanager
def pg_engine(url: str) -> Iterator[Engine]:
    """A fresh PostgreSQL database for the run, dropped afterwards."""
    name = f"nekoflow_recall_{os.getpid()}"
    admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        c.execute(text(f"CREATE DATABASE {name}"))
    engine = make_engine(url.rsplit("/", 1)[0] + f"/{name}")
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as c:
            c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def main() -> None:
    """Run the benchmark and print its figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--filler", type=int, default=1100, help="chit-chat turns (2 lines each)")
    p.add_argument("--quick", action="store_true", help="300 filler turns, SQLite only")
    p.add_argument("--no-pg", action="store_true")
    p.add_argument("--no-sqlite", action="store_true")
    p.add_argument("--pg-url", default=os.environ.get("NEKOFLOW_BENCH_PG_URL", DEFAULT_PG_URL))
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("-v", "--verbose", action="store_true", help="list every mode's misses")
    args = p.parse_args()
    filler = 300 if args.quick else args.filler
    data = json.loads(DATA.read_text(encoding="utf-8"))
    print(
        f"memory recall through real turns: {len(data['facts'])} facts, "
        f"{len(data['questions'])} questions, {filler} filler turns; "
        f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    results: dict[str, Any] = {}
    # A tmpfs when there is one: the benchmark measures recall, not the disk's fsync.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory(dir=shm) as tmp:
            engine = make_engine(f"sqlite:///{tmp}/recall.db")
            results["sqlite"] = run(engine, "SQLite", data, filler, args.verbose)
            engine.dispose()
    if not (args.quick or args.no_pg):
        with pg_engine(args.pg_url) as engine:
            results["postgresql"] = run(engine, "PostgreSQL", data, filler, args.verbose)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
