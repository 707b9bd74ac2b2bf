"""``nekoflow rereview`` through the CLI: embedded (inline), real Celery workers on the review
queue, resume of an interrupted job, apply and export."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, func, select
from typer.testing import CliRunner

from nekoflow.cli import app
from nekoflow.rereview.runner import run_batch
from nekoflow.rereview.store import JobFilters, create_job, fail_batch, progress
from nekoflow.storage.rereview import ReviewJob, ReviewRecord
from nekoflow.storage.turns import Relationship
from tests.rereview.conftest import build_history
from tests.rereview.test_job import VERSION, _expected, _records, _spec

runner = CliRunner()


def _count(engine) -> int:
    with Session(engine) as s:
        return s.exec(select(func.count()).select_from(ReviewRecord)).one()


def test_cli_inline_apply_and_export(engine, cli_env, role_id, tmp_path: Path) -> None:
    build_history(engine, role_id, scopes=3, turns=6)
    out = tmp_path / "records.jsonl"
    res = runner.invoke(
        app, ["rereview", "--inline", "--batch-size", "5", "--apply", "--export", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "turns reviewed" in res.output and "18" in res.output
    assert "delta totals per character" in res.output
    assert "applied 3 scopes" in res.output
    assert len(out.read_text().splitlines()) == 18
    with Session(engine) as s:
        assert len(s.exec(select(Relationship)).all()) == 3
    # the same job again writes nothing new
    res = runner.invoke(app, ["rereview", "--inline", "--character", "钦灵"])
    assert res.exit_code == 0, res.output
    assert "diff (not applied: use --apply)" in res.output
    assert _count(engine) == 18
    with Session(engine) as s:
        last = s.exec(select(ReviewJob).order_by(ReviewJob.id.desc())).first()
        assert last.status == "done"


def test_cli_rejects_bad_options(engine, cli_env) -> None:
    assert runner.invoke(app, ["rereview", "--mode", "smart"]).exit_code == 2
    assert runner.invoke(app, ["rereview", "--dry-run", "--apply"]).exit_code == 2
    res = runner.invoke(app, ["rereview", "--inline", "--character", "无名"])
    assert res.exit_code == 2 and "no character" in res.output
    res = runner.invoke(app, ["rereview", "--inline", "--export", "out.txt"])
    assert res.exit_code == 2 and "out.txt" in res.output
    with Session(engine) as s:  # checked before any work: no job was created
        assert s.exec(select(ReviewJob)).all() == []


def test_cli_on_real_workers(engine, cli_env, role_id, workers, tmp_path: Path) -> None:
    build_history(engine, role_id, scopes=4, turns=5)
    workers.start(queues="review", concurrency=2)
    out = tmp_path / "records.csv"
    res = runner.invoke(
        app, ["rereview", "--workers", "--batch-size", "5", "--export", str(out), "--poll", "0.1"]
    )
    assert res.exit_code == 0, res.output + workers.logs()
    assert _count(engine) == 20
    assert len(out.read_text().splitlines()) == 21
    assert "nekoflow.rereview.batch" in workers.logs()


def test_resume_interrupted_job_on_real_workers(engine, db_url, cli_env, role_id, workers) -> None:
    build_history(engine, role_id, scopes=4, turns=5)
    job = create_job(engine, JobFilters(), mode="rule", version=VERSION, batch_size=5)
    run_batch(engine, job.id, 0, _spec(db_url))  # done before the "crash"
    fail_batch(engine, job.id, 1, "worker lost")  # the batch that was running
    assert progress(engine, job.id).batches_done == 1
    workers.start(queues="review", concurrency=1)
    res = runner.invoke(app, ["rereview", "--resume", str(job.id), "--workers", "--poll", "0.1"])
    assert res.exit_code == 0, res.output + workers.logs()
    assert "3 to run" in res.output
    assert progress(engine, job.id).status == "done"
    assert _records(engine) == _expected(engine)


def test_export_refuses_other_suffixes(engine, cli_env, role_id, tmp_path: Path) -> None:
    build_history(engine, role_id, scopes=1, turns=2)
    res = runner.invoke(app, ["rereview", "--inline", "--export", str(tmp_path / "x.txt")])
    assert res.exit_code == 2 and ".jsonl or .csv" in res.output
