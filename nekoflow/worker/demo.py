"""``nekoflow demo``: a scripted multi-turn role-play through the real chain.

Two channels (the Web and a QQ group over OneBot), a world book with an always-on rule, a
keyword entry with a two-turn cooldown and an event entry, a plot choice and a three-day gap.
With no ``NEKOFLOW_BROKER_URL`` it runs embedded (in-memory broker, in-process worker, a fresh
SQLite file, the scripted model); with one it enqueues to the real workers instead.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlmodel import Session, col, select

from nekoflow.characters import add_character
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.settings import Settings, get_settings
from nekoflow.startup import StartupError, check_broker, check_redis
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import STAGES, Relationship, TurnRun, TurnStage
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.handle import TurnHandle
from nekoflow.worldbook import WorldBook, WorldBookEntry
from nekoflow.worldbook.store import WorldBookStore

BOT_UIN = 10001
TURN_TIMEOUT = 60.0
"""Seconds the demo waits for one turn."""
PING_TIMEOUT = 2.0
"""Seconds the demo waits for a worker to answer a ping (broker mode)."""
WORKER_COMMAND = "celery -A nekoflow.worker worker -Q turns,llm,outbound,memory,speech -E"
CHARACTER = "钦灵"

WORLD_BOOK = WorldBook(
    id="demo-cat-cafe",
    name="海边猫咖",
    description="钦灵打工的海边猫咖",
    character_ids=[CHARACTER],
    entries=[
        WorldBookEntry(
            id="rule-cafe",
            name="世界基础规则",
            content="这里是一家开在海边的猫咖,店员都是猫娘;傍晚会有海风,夜里能看到很多星星。",
            always_on=True,
            entry_type="rule",
            priority=90,
        ),
        WorldBookEntry(
            id="catnip",
            name="猫薄荷",
            keywords=["猫薄荷"],
            content="钦灵闻到猫薄荷会变得晕乎乎的,说话带着撒娇的尾音。",
            priority=50,
            cooldown_turns=2,
        ),
        WorldBookEntry(
            id="stars",
            name="观星约定",
            keywords=["星星", "星空"],
            content="猫咖楼顶有一个小天台,钦灵一直想和重要的人一起在那里看星星。",
            entry_type="event",
            priority=60,
            trigger_sources=["user", "assistant_recent"],
        ),
    ],
)


def script(start: datetime) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, channel, raw event) for each demo turn; times are the platform's send times."""

    def web(text: str, at: datetime, **meta: Any) -> dict[str, Any]:
        return {
            "session_id": "demo-web",
            "user_id": "lime",
            "display_name": "莱姆",
            "message": text,
            "metadata": {"time": int(at.timestamp()), **meta},
        }

    qq_event = {
        "post_type": "message",
        "message_type": "group",
        "sub_type": "normal",
        "self_id": BOT_UIN,
        "group_id": 424242,
        "user_id": 777,
        "message_id": 90001,
        "time": int((start + timedelta(minutes=15)).timestamp()),
        "message": [
            {"type": "at", "data": {"qq": str(BOT_UIN)}},
            {"type": "text", "data": {"text": " 钦灵你好,我是群里的阿喵,今天猫咖开门吗?"}},
        ],
        "raw_message": f"[CQ:at,qq={BOT_UIN}] 钦灵你好,我是群里的阿喵,今天猫咖开门吗?",
        "sender": {"user_id": 777, "nickname": "阿喵", "card": "阿喵", "role": "member"},
    }
    qq_unmentioned = {
        **qq_event,
        "message_id": 90002,
        "message": [{"type": "text", "data": {"text": "大家晚上好"}}],
        "raw_message": "大家晚上好",
    }
    return [
        ("web: first contact", "web", web("你好呀钦灵!第一次来猫咖,请多关照~", start)),
        (
            "web: keyword entry",
            "web",
            web("我给你带了猫薄荷哦,谢谢你一直照顾我", start + timedelta(minutes=5)),
        ),
        (
            "web: same keyword, in cooldown",
            "web",
            web("猫薄荷好闻吗?", start + timedelta(minutes=8)),
        ),
        ("qq group: not mentioned (skipped)", "qq", qq_unmentioned),
        ("qq group: mentioned", "qq", qq_event),
        (
            "web: plot choice (important)",
            "web",
            web(
                "那今晚我们一起去天台看星星吧,我喜欢和你在一起",
                start + timedelta(minutes=30),
                choice={"level": "important", "text": "约定一起去天台看星星"},
            ),
        ),
        (
            "web: back after three days",
            "web",
            web("好久不见,我回来啦!有没有想我?", start + timedelta(days=3, hours=2)),
        ),
    ]


def seed(deps: TurnDeps) -> Role:
    """Create the demo character and world book (once per database)."""
    with Session(deps.engine) as s:
        role = s.exec(select(Role).where(Role.name == CHARACTER)).first()
    if role is None:
        role = add_character(
            deps.engine,
            CHARACTER,
            profile="你叫钦灵,是海边猫咖里的猫娘店员,活泼、嘴硬心软,喜欢甜食和星空。",
            relationship={"好感": 55, "信任": 50},
        )
    store = WorldBookStore(deps.engine)
    if store.get(WORLD_BOOK.id) is None:
        store.import_books([WORLD_BOOK])
    return role


def _stage(deps: TurnDeps, turn_id: str, stage: str) -> dict[str, Any]:
    with Session(deps.engine) as s:
        row = s.get(TurnStage, (turn_id, stage))
        return dict(row.result) if row else {}


def show_turn(console: Console, deps: TurnDeps, label: str, handle: TurnHandle) -> TurnRun | None:
    """Print one turn: stages, injected entries, reply, deltas, memory; return its run."""
    console.rule(f"[bold]{escape(label)}")
    if handle.is_skipped:
        console.print(f"  skipped: {escape(handle.reason or '')}")
        return None
    try:
        rendered = handle.wait(timeout=TURN_TIMEOUT)
    except TimeoutError:
        raise StartupError(
            f"turn {handle.turn_id} did not finish within {TURN_TIMEOUT:.0f} s: are workers "
            f"for the turns, llm and outbound queues running? ({WORKER_COMMAND})"
        ) from None
    run = handle.run()
    assert run is not None
    with Session(deps.engine) as s:
        done = {
            st.stage
            for st in s.exec(select(TurnStage).where(TurnStage.turn_id == run.turn_id)).all()
        }
        stages = [stage for stage in STAGES if stage in done]
    console.print(f"  turn {run.turn_id} · scope {escape(run.scope_id or '')} · {run.status}")
    console.print(f"  stages: {' → '.join(stages)}")
    gap = _stage(deps, run.turn_id, "dispatch").get("real_time", {})
    console.print(f"  time since last turn: {escape(str(gap.get('elapsed_label', '')))}")
    injected = _stage(deps, run.turn_id, "before_turn").get("injected", [])
    names = ", ".join(f"{e['name']} ({'/'.join(e['sources'])}, {e['score']})" for e in injected)
    console.print(f"  world book: {escape(names or '—')}")
    for message in rendered:
        console.print(f"  [cyan]{CHARACTER}:[/cyan] {escape(str(message.get('content', '')))}")
    review = _stage(deps, run.turn_id, "review")
    delta = review.get("relationship_delta") or {}
    moved = ", ".join(f"{d} {delta[d]:+d}" for d in RELATIONSHIP_DIMENSIONS if delta.get(d))
    console.print(f"  deltas: {escape(moved or '—')}")
    for item in review.get("memory_items", []):
        console.print(escape(f"  memory: [{item['mem_type']}/{item['ttl']}] {item['title']}"))
    if review.get("plot_update"):
        console.print(f"  plot node: {escape(review['plot_update']['title'])}")
    if run.status == "failed":
        console.print(f"  [red]failed:[/red] {escape(run.reason or '')}")
    return run


def relationship_table(deps: TurnDeps, pairs: set[tuple[int, str]]) -> Table:
    """The final relationship of the character(s) that answered the demo with the demo's
    scopes (``pairs`` of role id and scope id) — not every relationship in the database."""
    labels = ("好感", "信任", "熟悉", "依赖", "安全感", "嫉妒")
    role_ids = sorted({role_id for role_id, _ in pairs})
    with Session(deps.engine) as s:
        names = [s.get(Role, rid).name for rid in role_ids if s.get(Role, rid) is not None]
        title = f"{' / '.join(names) or CHARACTER}'s relationships"
        table = Table("scope", *labels, "turns", title=title)
        rows = s.exec(select(Relationship).where(col(Relationship.role_id).in_(role_ids))).all()
        for rel in rows:
            if (rel.role_id, rel.scope_id) not in pairs:
                continue
            table.add_row(
                escape(rel.scope_id),
                *(str(getattr(rel, d)) for d in RELATIONSHIP_DIMENSIONS),
                str(rel.turns),
            )
    return table


@contextmanager
def demo_runtime(console: Console) -> Iterator[TurnDeps]:
    """Embedded (fresh SQLite, in-memory broker) unless NEKOFLOW_BROKER_URL is set."""
    from nekoflow.worker.embedded import broker_configured, embedded_worker

    base = get_settings()
    options = {**base.adapter_options, "qq": {"bot_uin": BOT_UIN}}
    if broker_configured():
        from nekoflow.worker.runtime import get_deps, set_deps

        check_broker(base.broker_url or "")
        if base.redis_configured:
            check_redis(base.redis_url)
        from nekoflow.worker.app import app

        if not app.control.ping(timeout=PING_TIMEOUT):
            raise StartupError(
                "no Celery worker answered on NEKOFLOW_BROKER_URL: start one with "
                f"`{WORKER_COMMAND}` (or unset NEKOFLOW_BROKER_URL to run the demo embedded)"
            )
        deps = get_deps()
        deps.settings = deps.settings.model_copy(update={"adapter_options": options})
        deps._adapters.clear()
        console.print(f"enqueueing to the workers at {escape(base.broker_url or '')}")
        try:
            yield deps
        finally:
            set_deps(None)
        return
    with tempfile.TemporaryDirectory(prefix="nekoflow-demo-") as tmp:
        db = Path(tmp) / "demo.db"
        settings: Settings = base.model_copy(
            update={
                "database_url": f"sqlite:///{db}",
                "llm_provider": "scripted",
                "adapter_options": options,
                "runtime_config_path": str(Path(tmp) / "config.ini"),
            }
        )
        console.print(
            "embedded mode: in-process worker, in-memory broker, scripted model, "
            f"SQLite at {db} (set NEKOFLOW_BROKER_URL to use real workers)"
        )
        with embedded_worker(settings) as deps:
            yield deps


def run_demo(console: Console | None = None) -> None:
    """Run the scripted role-play and print every turn and the final relationships."""
    from nekoflow.worker.turns import enqueue_turn

    console = console or Console()
    with demo_runtime(console) as deps:
        seed(deps)
        start = datetime.now(UTC) - timedelta(days=4)
        pairs: set[tuple[int, str]] = set()
        for label, channel, event in script(start):
            handle = enqueue_turn(channel, event)
            run = show_turn(console, deps, label, handle)
            if run is not None and run.role_id is not None and run.scope_id:
                pairs.add((run.role_id, run.scope_id))
        console.print(relationship_table(deps, pairs))
