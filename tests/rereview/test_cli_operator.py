"""``nekoflow rereview`` as a new operator meets it (issue 15): the resume hint keeps the output
options, no review worker ends the wait, characters by name, skipped explained, ids whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nekoflow.cli import app
from nekoflow.rereview import cli as rereview_cli
from tests.rereview.conftest import build_history

runner = CliRunner()


def test_summary_names_characters_explains_skips_and_keeps_scope_ids_whole(
    engine, cli_env, role_id
) -> None:
    build_history(engine, role_id, scopes=2, turns=6)
    res = runner.invoke(app, ["rereview", "--inline", "--batch-size", "5"], terminal_width=80)
    assert res.exit_code == 0, res.output
    assert f"钦灵 ({role_id})" in res.output  # the delta totals name the character
    if "skipped:" in res.output:
        assert "their relationship deltas still count" in res.output.replace("\n", " ")
    lines = res.output.splitlines()
    assert (
        f"  钦灵 ({role_id})  web:user:u0" in lines or f"  钦灵 ({role_id})  web:user:u1" in lines
    )


def test_interrupt_hint_keeps_export_and_inline(
    engine, cli_env, role_id, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_history(engine, role_id, scopes=1, turns=3)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(rereview_cli, "follow", interrupted)
    # no batch work in the background while the test's schema is dropped
    monkeypatch.setattr(rereview_cli, "run_inline", lambda *args, **kwargs: None)
    out = tmp_path / "records.jsonl"
    res = runner.invoke(app, ["rereview", "--inline", "--export", str(out)])
    assert res.exit_code == 130
    assert f"--export {out} --inline" in res.output.replace("\n", "")


def test_no_review_worker_ends_the_wait_with_a_resume_hint(
    engine,
    cli_env,
    role_id,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_url: str,
    redis_client,
) -> None:
    build_history(engine, role_id, scopes=1, turns=3)
    monkeypatch.setenv("NEKOFLOW_BROKER_URL", redis_url)
    monkeypatch.setattr(rereview_cli, "NO_WORKER_HINT_SECONDS", 0.2)
    monkeypatch.setattr(rereview_cli, "NO_WORKER_GIVE_UP_SECONDS", 1.0)
    out = tmp_path / "records.csv"
    res = runner.invoke(
        app, ["rereview", "--workers", "--export", str(out), "--poll", "0.1"], terminal_width=200
    )
    assert res.exit_code == 1, res.output
    assert "no review worker started a batch" in res.output
    assert "-Q review" in res.output
    assert f"nekoflow rereview --resume 1 --export {out} --workers" in res.output
    redis_client.flushdb()  # the unconsumed batch messages must not reach a later test's worker
