"""Jobs end to end in process (SQLite and PostgreSQL): records, idempotency, resume after an
interruption, --apply equals a serial replay, dry runs and export."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from sqlmodel import Session, col, func, select

from nekoflow.memory.history import load_history_rows
from nekoflow.rereview import extract_turns, review_input, reviewer_version
from nekoflow.rereview.apply import apply_job, scope_diffs
from nekoflow.rereview.export import export_job
from nekoflow.rereview.runner import ReviewerSpec, run_batch, run_inline
from nekoflow.rereview.store import (
    JobFilters,
    create_job,
    get_job,
    pending_batches,
    progress,
    restart_job,
)
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.review.rules import run_rule_review
from nekoflow.storage.dialogue import Role, Save
from nekoflow.storage.rereview import ReviewBatch, ReviewRecord
from nekoflow.storage.turns import MemoryRecord, PlotNode, Relationship
from nekoflow.turns.characters import clamp_dimension, initial_relationship
from tests.rereview.conftest import add_turn_run, build_history, settings_for

VERSION = reviewer_version("rule")


def _spec(db_url: str) -> ReviewerSpec:
    return ReviewerSpec(mode="rule", settings=settings_for(db_url))


def _job(engine, batch_size: int = 8, **kw):
    return create_job(engine, JobFilters(**kw), mode="rule", version=VERSION, batch_size=batch_size)


def _run(engine, db_url, job) -> None:
    run_inline(engine, job.id, pending_batches(engine, job.id), _spec(db_url))


def _records(engine) -> list[tuple]:
    with Session(engine) as s:
        rows = s.exec(
            select(ReviewRecord).order_by(col(ReviewRecord.save_id), col(ReviewRecord.seq))
        )
        return [
            (
                r.save_id,
                r.line_id,
                r.reviewer_version,
                r.seq,
                r.skipped,
                r.memory_writes,
                r.plot_level,
                *(getattr(r, d) for d in RELATIONSHIP_DIMENSIONS),
                json.dumps(r.output),
            )
            for r in rows
        ]


def _expected(engine) -> list[tuple]:
    """A serial, one-turn-at-a-time re-review (the reference)."""
    out = []
    with Session(engine) as s:
        for save in s.exec(select(Save).order_by(col(Save.id))):
            role = s.get(Role, save.role_id)
            state = initial_relationship(role)
            path = load_history_rows(s, save.id)
            for turn in extract_turns(save.id, save.role_id, save.scope_id, path).turns:
                o = run_rule_review(review_input(turn, state))
                d = o.relationship_delta.as_dict()
                state = {k: clamp_dimension(state[k] + d[k]) for k in RELATIONSHIP_DIMENSIONS}
                out.append(
                    (
                        save.id,
                        turn.line_id,
                        VERSION,
                        turn.seq,
                        o.skipped,
                        len(o.memory_items) if o.should_write_memory else 0,
                        str(o.plot_update.level) if o.plot_update else None,
                        *(d[k] for k in RELATIONSHIP_DIMENSIONS),
                        json.dumps(o.model_dump(mode="json", exclude_defaults=True)),
                    )
                )
    return out


def test_job_writes_one_record_per_turn_and_is_idempotent(engine, db_url, role_id) -> None:
    build_history(engine, role_id, scopes=4, turns=7)
    job = _job(engine, batch_size=7)
    assert job.batches == 4 and job.estimated_turns == 28
    _run(engine, db_url, job)
    p = progress(engine, job.id)
    assert p.status == "done" and p.turns_done == 28 and p.batches_done == 4
    assert _records(engine) == _expected(engine)

    again = _job(engine)
    _run(engine, db_url, again)
    with Session(engine) as s:
        batches = s.exec(select(ReviewBatch).where(ReviewBatch.job_id == again.id)).all()
        assert sum(b.written for b in batches) == 0
        assert sum(b.turns for b in batches) == 28
        assert s.exec(select(func.count()).select_from(ReviewRecord)).one() == 28


def test_resume_after_interruption_equals_uninterrupted(engine, db_url, role_id) -> None:
    build_history(engine, role_id, scopes=5, turns=6)
    job = _job(engine, batch_size=6)
    spec = _spec(db_url)
    run_batch(engine, job.id, 0, spec)
    run_batch(engine, job.id, 0, spec)  # a redelivered batch does nothing
    calls = {"n": 0}

    class Crash(ReviewerSpec):
        def build(self):
            inner = super().build()

            def review(inp):
                calls["n"] += 1
                if calls["n"] == 4:
                    raise RuntimeError("worker died")
                return inner(inp)

            return review

    with pytest.raises(RuntimeError):
        run_batch(engine, job.id, 1, Crash(mode="rule", settings=spec.settings))
    p = progress(engine, job.id)
    assert p.status == "running" and p.batches_done == 1 and p.batches_failed == 1
    assert len(_records(engine)) == 6  # the crashed batch wrote nothing
    restart_job(engine, job.id)
    assert pending_batches(engine, job.id) == [1, 2, 3, 4]
    _run(engine, db_url, job)
    assert progress(engine, job.id).status == "done"
    assert _records(engine) == _expected(engine)


def _serial_apply(engine) -> dict:
    """Reference: replay every turn one at a time from the initial state."""
    from nekoflow.memory.fact_memory import fact_title

    result = {}
    with Session(engine) as s:
        for save in s.exec(select(Save).order_by(col(Save.id))):
            role = s.get(Role, save.role_id)
            state = initial_relationship(role)
            mems, plots = [], []
            path = load_history_rows(s, save.id)
            for turn in extract_turns(save.id, save.role_id, save.scope_id, path).turns:
                info = None
                if turn.turn_id:
                    from nekoflow.rereview.store import load_runs

                    info = load_runs(s, [turn.turn_id]).get(turn.turn_id)
                o = run_rule_review(review_input(turn, state, info))
                d = o.relationship_delta.as_dict()
                state = {k: clamp_dimension(state[k] + d[k]) for k in RELATIONSHIP_DIMENSIONS}
                if o.should_write_memory:
                    mems += [m.title for m in o.memory_items]
                mems += [fact_title(f.slot) for f in o.facts]  # stated facts: one memory each
                if o.plot_update:
                    plots.append(o.plot_update.title)
            # consolidation folds a restated memory (the same words again) into the first one
            result[(save.role_id, save.scope_id)] = (state, sorted(set(mems)), sorted(plots))
    return result


def _stored_state(engine) -> dict:
    out = {}
    with Session(engine) as s:
        for rel in s.exec(select(Relationship)):
            mems = s.exec(
                select(MemoryRecord.title).where(
                    MemoryRecord.role_id == rel.role_id, MemoryRecord.scope_id == rel.scope_id
                )
            ).all()
            plots = s.exec(
                select(PlotNode.title).where(
                    PlotNode.role_id == rel.role_id, PlotNode.scope_id == rel.scope_id
                )
            ).all()
            state = {d: getattr(rel, d) for d in RELATIONSHIP_DIMENSIONS}
            out[(rel.role_id, rel.scope_id)] = (state, sorted(mems), sorted(plots))
    return out


def test_apply_equals_serial_replay(engine, db_url, role_id) -> None:
    convos = build_history(engine, role_id, scopes=3, turns=9)
    c = convos[0]
    c.turn("我选择留下来陪你", "真的吗", turn_id="t-choice")
    add_turn_run(engine, "t-choice", c.scope_id, choice={"level": "turning_point", "text": "留下"})
    with Session(engine) as s:  # stale live state the re-review replaces
        s.add(Relationship(role_id=role_id, scope_id=c.scope_id, affection=3, turns=99))
        s.add(MemoryRecord(role_id=role_id, scope_id=c.scope_id, turn_id="t-choice", title="旧"))
        s.add(MemoryRecord(role_id=role_id, scope_id=c.scope_id, turn_id=None, title="手写"))
        s.commit()
    job = _job(engine, batch_size=5)
    _run(engine, db_url, job)
    diffs = {(d.role_id, d.scope_id): d for d in scope_diffs(engine, get_job(engine, job.id))}
    assert diffs[(role_id, c.scope_id)].old["affection"] == 3
    summary = apply_job(engine, get_job(engine, job.id), settings_for(db_url))
    assert summary.scopes == 3 and summary.memories_deleted == 1 and summary.plots_written >= 1
    expected = _serial_apply(engine)
    stored = _stored_state(engine)
    hand_written = stored[(role_id, c.scope_id)][1]
    assert "手写" in hand_written and "旧" not in hand_written
    hand_written.remove("手写")
    assert stored == expected
    for key, diff in diffs.items():
        assert diff.new == expected[key][0]  # the dry-run diff predicted the applied state
    with Session(engine) as s:
        rel = s.get(Relationship, (role_id, c.scope_id))
        assert rel.turns == 10
    again = apply_job(engine, get_job(engine, job.id), settings_for(db_url))
    assert (again.memories_written, again.memories_deleted, again.plots_written) == (0, 0, 0)
    assert _stored_state(engine) == {k: v for k, v in stored.items()} | {
        (role_id, c.scope_id): (
            expected[(role_id, c.scope_id)][0],
            sorted([*expected[(role_id, c.scope_id)][1], "手写"]),
            expected[(role_id, c.scope_id)][2],
        )
    }


def test_dry_run_writes_no_records_and_filters_select_saves(engine, db_url, role_id) -> None:
    convos = build_history(engine, role_id, scopes=3, turns=4)
    job = create_job(
        engine,
        JobFilters(scopes=["web:user:u1"]),
        mode="rule",
        version=VERSION,
        batch_size=100,
        dry_run=True,
    )
    assert job.saves == 1
    _run(engine, db_url, job)
    assert _records(engine) == []
    assert [d.scope_id for d in scope_diffs(engine, get_job(engine, job.id))] == ["web:user:u1"]
    assert _job(engine, channels=["qq"]).saves == 0
    assert _job(engine, scopes=["web:*"]).saves == 3
    assert _job(engine, save_ids=[convos[2].save_id]).saves == 1
    assert _job(engine, characters=["钦灵"]).saves == 3


def test_export_jsonl_and_csv(engine, db_url, role_id, tmp_path: Path) -> None:
    build_history(engine, role_id, scopes=2, turns=5)
    job = _job(engine)
    _run(engine, db_url, job)
    n = export_job(engine, job, tmp_path / "out.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert n == len(rows) == 10
    assert rows[0]["turn_key"] == f"{rows[0]['save_id']}:{rows[0]['line_id']}"
    assert rows[0]["output"]["relationship_delta"]["familiarity"] >= 1
    assert export_job(engine, job, tmp_path / "out.csv") == 10
    with (tmp_path / "out.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 10 and table[0]["reviewer_version"] == VERSION
    assert [r["turn_key"] for r in table] == [r["turn_key"] for r in rows]


def test_follow_resends_batches_no_worker_ever_started(engine, db_url, role_id) -> None:
    from nekoflow.rereview.cli import follow

    build_history(engine, role_id, scopes=4, turns=5)
    job = _job(engine, batch_size=6)
    assert job.batches >= 2
    resent: list[list[int]] = []

    def resend(batches: list[int]) -> None:  # the "broker" delivers the re-sent messages
        resent.append(batches)
        run_inline(engine, job.id, batches, _spec(db_url))

    # The first publication was lost: nothing runs, nothing finishes, until the re-send.
    p = follow(engine, job.id, poll=0.05, runner=None, resend=resend, stall_seconds=0.3)
    assert resent == [list(range(job.batches))]
    assert p.status == "done" and p.batches_done == job.batches
    assert _records(engine) == _expected(engine)


def test_follow_never_resends_while_a_batch_runs(engine, db_url, role_id) -> None:
    from nekoflow.rereview.cli import follow
    from nekoflow.rereview.store import progress, start_batch

    build_history(engine, role_id, scopes=2, turns=3)
    job = _job(engine, batch_size=3)
    start_batch(engine, job.id, 0)  # a long LLM batch, say: running, nothing finished yet
    calls: list[list[int]] = []

    def resend(batches: list[int]) -> None:
        calls.append(batches)

    import threading

    def finish_later() -> None:
        import time

        time.sleep(0.8)
        run_inline(engine, job.id, pending_batches(engine, job.id), _spec(db_url))

    t = threading.Thread(target=finish_later)
    t.start()
    p = follow(engine, job.id, poll=0.05, runner=None, resend=resend, stall_seconds=0.2)
    t.join()
    assert calls == [] and p.status == "done"
    assert progress(engine, job.id).batches_running == 0
