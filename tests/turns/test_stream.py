"""Reply-token streaming of ``llm_call``: the pure writer/follower, then whole turns in process
against the real test Redis and a loopback OpenAI-compatible server that really streams.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from nekoflow.channels import CharacterRuntimeContextDispatcher
from nekoflow.events import RecordingEventBus
from nekoflow.llm import OpenAIChatModel
from nekoflow.review.autostate import InMemoryAutoState
from nekoflow.review.pipeline import ReviewPipeline
from nekoflow.settings import Settings
from nekoflow.storage.dialogue import Line
from nekoflow.storage.turns import TurnStage
from nekoflow.turns.deps import TurnDeps
from nekoflow.turns.enqueue import submit_turn
from nekoflow.turns.runner import run_inline
from nekoflow.turns.stream import StreamEvent, TokenFollower, TokenMessage, channel, follow
from nekoflow.turns.stream_publish import TokenWriter, publisher_for
from nekoflow.worldbook.cooldowns import InMemoryCooldowns
from tests.turns.llm_server import Answer, FakeLLM, completion

REPLY = "【开心】你好呀莱姆~\n<こんにちは>(摇尾巴) 今天🌸也要开心哦!【害羞】嗯……"


# ------------------------------------------------------------------------------ pure parts


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Wire(list):
    """A PUBLISH stand-in: records messages, reaches ``listeners`` subscribers."""

    def __init__(self, listeners: int = 1) -> None:
        super().__init__()
        self.listeners = listeners

    def __call__(self, channel_name: str, payload: str) -> int:
        self.append(TokenMessage.parse(payload))
        return self.listeners


def test_writer_sends_the_first_piece_at_once_and_coalesces_the_rest() -> None:
    wire, clock = Wire(), Clock()
    w = TokenWriter(wire, "c", attempt=1, flush_seconds=0.05, clock=clock)
    w("你")
    assert [(m.seq, m.offset, m.text) for m in wire] == [(0, 0, "你")]
    clock.now = 0.01
    w("好")
    w("呀")
    assert len(wire) == 1  # within 50 ms of the last publish: kept
    clock.now = 0.06
    w("!")
    w.finish()
    assert [(m.seq, m.offset, m.text, m.end) for m in wire] == [
        (0, 0, "你", False),
        (1, 1, "好呀!", False),
        (2, 4, "", True),
    ]


def test_writer_keeps_the_text_while_nobody_listens() -> None:
    wire, clock = Wire(listeners=0), Clock()
    w = TokenWriter(wire, "c", attempt=2, flush_seconds=0.05, clock=clock)
    w("一")
    clock.now = 0.1
    w("二")  # not yet due: nobody listened, next offer after IDLE_SECONDS
    assert len(wire) == 1
    clock.now = 0.3
    wire.listeners = 1
    w("三")
    w.finish()
    assert [(m.offset, m.text) for m in wire] == [(0, "一"), (0, "一二三"), (3, "")]
    assert all(m.attempt == 2 for m in wire)


def test_writer_costs_one_publish_for_a_whole_reply_nobody_reads() -> None:
    wire = Wire(listeners=0)
    w = TokenWriter(wire, "c", attempt=1)
    w("一整句回复")  # a server that does not stream: the whole text as one piece
    w.finish()
    w.abort()
    assert [(m.offset, m.text, m.end) for m in wire] == [(0, "一整句回复", False)]


def test_writer_survives_redis_errors_and_aborts_with_a_reset() -> None:
    errors: list[Exception] = []

    def broken(channel_name: str, payload: str) -> int:
        raise ConnectionError("redis down")

    w = TokenWriter(broken, "c", attempt=1, on_error=errors.append)
    w("a")
    w("b")
    w.finish()
    w.abort()
    assert w.dead and len(errors) == 1
    wire = Wire()
    w2 = TokenWriter(wire, "c", attempt=1)
    w2("半句")
    w2.abort()
    assert wire[-1].reset and wire[-1].attempt == 1


def test_follower_trims_resends_and_resets_on_a_new_attempt() -> None:
    f = TokenFollower()
    kinds = []
    for m in [
        TokenMessage(1, 0, 0, "一"),
        TokenMessage(1, 1, 0, "一二"),  # a resend from offset 0: only "二" is new
        TokenMessage(1, 2, 0, "", reset=True),
        TokenMessage(1, 3, 2, "晚到"),  # the failed attempt: ignored
        TokenMessage(2, 0, 0, "甲"),
        TokenMessage(3, 0, 0, "乙"),  # a newer attempt without a reset message
        TokenMessage(3, 1, 1, "", end=True),
    ]:
        kinds += [(e.kind, e.attempt, e.text) for e in f.feed(m)]
    assert kinds == [
        ("token", 1, "一"),
        ("token", 1, "二"),
        ("reset", 1, ""),
        ("token", 2, "甲"),
        ("reset", 3, ""),
        ("token", 3, "乙"),
        ("token", 3, ""),
    ]


# ------------------------------------------------------------- whole turns, real Redis


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    def script(body: dict[str, Any], n: int) -> Answer:
        return 200, completion(REPLY), {}, 0.0

    with FakeLLM(script, chunk_chars=3) as fake:
        yield fake


def make_deps(engine: Engine, redis_url: str, fake: FakeLLM, *, stream: bool) -> TurnDeps:
    settings = Settings(
        database_url=str(engine.url),
        redis_url=redis_url,
        redis_prefix="nfstream",
        llm_backoff_base=0.0,
        llm_backoff_max=0.0,
        llm_stream=stream,
        llm_stream_flush_ms=0,
    )
    bus = RecordingEventBus()
    return TurnDeps(
        settings=settings,
        engine=engine,
        chat_model=OpenAIChatModel(fake.base_url, "fake-model", timeout=5, connect_timeout=2),
        review=ReviewPipeline(event_bus=bus, autostate=InMemoryAutoState()),
        cooldowns=InMemoryCooldowns(),
        dispatcher=CharacterRuntimeContextDispatcher(),
        events=bus,
        publish=lambda run: None,
    )


def web_event(text: str, session: str) -> dict[str, str]:
    return {"session_id": session, "message": text, "user_id": "u1", "display_name": "莱姆"}


def stored(engine: Engine, turn_id: str, session: str = "") -> dict[str, Any]:
    """What a turn stored: the stage results (timings aside) and its dialogue lines, with the
    turn's session id replaced by ``SESSION``."""
    with Session(engine) as s:
        stages = {
            st.stage: st.result
            for st in s.exec(select(TurnStage).where(TurnStage.turn_id == turn_id)).all()
        }
        lines = s.exec(select(Line).where(Line.turn_id == turn_id).order_by(Line.id)).all()
        line_view = [(ln.attribute, ln.content) for ln in lines]
    stages["llm_call"].pop("latency_ms")
    view = {
        "llm_call": stages["llm_call"],
        "review": stages["review"],
        "segments": stages["memory_build"].get("segments"),
        "lines": line_view,
    }
    if not session:
        return view
    scope = json.dumps(f"web:conversation:{session}")
    return json.loads(json.dumps(view, ensure_ascii=False).replace(scope, '"SESSION"'))


class Listener(threading.Thread):
    """Follows one turn's tokens with :func:`follow` (real Redis) in the background."""

    def __init__(self, deps: TurnDeps, turn_id: str) -> None:
        super().__init__(daemon=True)
        self.deps, self.turn_id = deps, turn_id
        self.events: list[StreamEvent] = []
        self.ready = threading.Event()

    def finished(self) -> str | None:
        self.ready.set()  # follow() subscribed before its first read
        with Session(self.deps.engine) as s:
            from nekoflow.storage.turns import FINISHED, TurnRun

            run = s.get(TurnRun, self.turn_id)
            return run.status if run is not None and run.status in FINISHED else None

    def run(self) -> None:
        s = self.deps.settings
        for event in follow(s.redis_url, s.redis_prefix, self.turn_id, self.finished, 30):
            self.events.append(event)


def test_streaming_on_and_off_store_the_same_turn(
    engine: Engine, redis_url: str, redis_client, fake_llm: FakeLLM, role
) -> None:
    results = []
    for stream, session in ((True, "on"), (False, "off")):
        deps = make_deps(engine, redis_url, fake_llm, stream=stream)
        handle = submit_turn(deps, "web", web_event("你好呀钦灵,谢谢你", session))
        listener = Listener(deps, handle.turn_id)
        listener.start()
        assert listener.ready.wait(10)  # subscribed before the turn runs
        assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
        listener.join(30)
        results.append((stored(engine, handle.turn_id, session), listener.events))
    (on, on_events), (off, off_events) = results
    assert on == off
    assert on["llm_call"]["text"] == REPLY
    assert [c.get("stream") for c in fake_llm.calls] == [True, None]
    tokens = [e for e in on_events if e.kind == "token"]
    assert len(tokens) > 5 and tokens[-1].end
    assert [e.seq for e in tokens] == list(range(len(tokens)))  # in order, none missing
    assert "".join(e.text for e in tokens) == on["llm_call"]["text"]
    assert on_events[-1] == StreamEvent("finished", status="done")
    assert [e.kind for e in off_events] == ["finished"]  # streaming off: no tokens


def test_a_stream_cut_mid_way_is_retried_and_subscribers_see_a_reset(
    engine: Engine, redis_url: str, redis_client, fake_llm: FakeLLM, role
) -> None:
    fake_llm.cut_after[1] = 4
    deps = make_deps(engine, redis_url, fake_llm, stream=True)
    handle = submit_turn(deps, "web", web_event("在吗", "cut"))
    listener = Listener(deps, handle.turn_id)
    listener.start()
    assert listener.ready.wait(10)
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    listener.join(30)
    kinds = [e.kind for e in listener.events]
    assert "reset" in kinds, kinds
    after = listener.events[kinds.index("reset") + 1 :]
    assert all(e.attempt == 2 for e in after if e.kind == "token")
    assert "".join(e.text for e in after if e.kind == "token") == REPLY
    assert stored(engine, handle.turn_id)["llm_call"]["text"] == REPLY
    assert stored(engine, handle.turn_id)["llm_call"]["attempts"] == 2
    assert len(fake_llm.calls) == 2


def test_redis_down_never_fails_the_turn(
    engine: Engine, fake_llm: FakeLLM, role, caplog: pytest.LogCaptureFixture
) -> None:
    closed = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    deps = make_deps(engine, closed, fake_llm, stream=True)
    # a fresh publisher (they are per process, keyed by URL and prefix), so a fresh outage
    deps.settings = deps.settings.model_copy(update={"redis_prefix": f"nf{uuid.uuid4().hex}"})
    turn_ids = []
    with caplog.at_level("WARNING", logger="nekoflow.turns.stream_publish"):
        for session in ("a", "b", "c"):
            handle = submit_turn(deps, "web", web_event("你好", session))
            assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
            turn_ids.append(handle.turn_id)
            publisher = publisher_for(deps.settings)
            assert publisher is not None
            publisher._down_until = 0.0  # as if DOWN_SECONDS had passed: Redis is tried again
    assert [stored(engine, t)["llm_call"]["text"] for t in turn_ids] == [REPLY] * 3
    warnings = [r for r in caplog.records if "not streamed" in r.getMessage()]
    assert len(warnings) == 1  # logged once per outage
    assert REPLY[:4] not in caplog.text  # never the text


def test_nothing_is_stored_in_redis(
    engine: Engine, redis_url: str, redis_client, fake_llm: FakeLLM, role
) -> None:
    deps = make_deps(engine, redis_url, fake_llm, stream=True)
    handle = submit_turn(deps, "web", web_event("你好", "keys"))
    redis_client.flushdb()
    assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
    assert not [k for k in redis_client.keys("*") if b"turn-tokens" in k]
    assert channel("nfstream", handle.turn_id) == f"nfstream:turn-tokens:{handle.turn_id}"


def test_turn_handle_tokens_for_adapter_authors(
    engine: Engine, redis_url: str, redis_client, role
) -> None:
    def script(body: dict[str, Any], n: int) -> Answer:
        return 200, completion(REPLY), {}, 0.0

    with FakeLLM(script, chunk_chars=2) as fake:
        deps = make_deps(engine, redis_url, fake, stream=True)
        handle = submit_turn(deps, "web", web_event("你好呀", "adapter"))
        events: list[StreamEvent] = []
        subscribed = threading.Event()
        read_status = handle._final_status

        def final_status() -> str | None:  # follow() reads the turn only once subscribed
            subscribed.set()
            return read_status()

        handle._final_status = final_status  # type: ignore[method-assign]
        follower = threading.Thread(target=lambda: events.extend(handle.tokens(timeout=30)))
        follower.start()
        assert subscribed.wait(10)
        assert run_inline(deps, handle.turn_id, sleep=False) == "ok"
        follower.join(30)
    assert events[-1] == StreamEvent("finished", status="done")
    text = "".join(e.text for e in events if e.kind == "token")
    assert text == stored(engine, handle.turn_id)["llm_call"]["text"] == REPLY


def test_follow_async_yields_published_pieces_then_the_end(redis_url: str, redis_client) -> None:
    import asyncio

    from nekoflow.turns.notify import channel as finished_channel
    from nekoflow.turns.stream import follow_async

    turn_id = uuid.uuid4().hex
    state = {"reads": 0}

    async def finished() -> str | None:
        state["reads"] += 1
        if state["reads"] == 1:  # subscribed: now the worker side publishes
            for m in (
                TokenMessage(1, 0, 0, "一二"),
                TokenMessage(1, 1, 0, "", reset=True),
                TokenMessage(2, 0, 0, "甲乙", end=True),
            ):
                redis_client.publish(channel("nfa", turn_id), m.to_json())
            redis_client.publish(finished_channel("nfa", turn_id), "done")
            return None
        return "done"

    async def collect() -> list[StreamEvent]:
        return [e async for e in follow_async(redis_url, "nfa", turn_id, finished, 10)]

    events = asyncio.run(collect())
    assert [(e.kind, e.text) for e in events] == [
        ("token", "一二"),
        ("reset", ""),
        ("token", "甲乙"),
        ("finished", ""),
    ]
    assert events[-1].status == "done"
