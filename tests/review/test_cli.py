"""``nekoflow review`` on the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from nekoflow.cli import app

runner = CliRunner()


def test_review_json_output() -> None:
    res = runner.invoke(app, ["review", "谢谢你", "不客气", "--level", "important", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["relationship_delta"]["trust"] == 2
    assert out["plot_update"]["level"] == "important"


def test_review_table_output_shows_memory() -> None:
    res = runner.invoke(app, ["review", "我回来了", "欢迎", "--previous", "2020-01-01T00:00:00Z"])
    assert res.exit_code == 0, res.output
    assert "[short/short] 我回来了 (0.75)" in res.output and "review.finished" in res.output


def test_review_bad_level_is_a_clear_error() -> None:
    res = runner.invoke(app, ["review", "hi", "--level", "epic"])
    assert res.exit_code == 2
    assert "selected_choice.level" in res.output
