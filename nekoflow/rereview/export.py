"""``--export``: write a job's review records as JSON Lines or CSV (chosen by the file suffix)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from nekoflow.errors import InputError
from nekoflow.rereview import store
from nekoflow.review.models import RELATIONSHIP_DIMENSIONS
from nekoflow.storage.rereview import ReviewJob, ReviewRecord

CSV_FIELDS: tuple[str, ...] = (
    "turn_key",
    "reviewer_version",
    "save_id",
    "line_id",
    "role_id",
    "scope_id",
    "seq",
    "turn_id",
    "sent_at",
    "source",
    "skipped",
    "fallback_reason",
    *RELATIONSHIP_DIMENSIONS,
    "memory_value",
    "memory_writes",
    "plot_level",
)


def row(rec: ReviewRecord) -> dict[str, Any]:
    """A record as a flat dict (the CSV columns)."""
    out: dict[str, Any] = {"turn_key": rec.turn_key}
    for name in CSV_FIELDS[1:]:
        value = getattr(rec, name)
        out[name] = value.isoformat() if name == "sent_at" else value
    return out


def check_export_path(path: Path) -> str:
    """The export format (``.jsonl`` or ``.csv``) of ``path``; anything else is an InputError."""
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise InputError(f"--export must end in .jsonl or .csv, got {path.name!r}", field="export")
    return suffix


def export_job(engine: Engine, job: ReviewJob, path: Path) -> int:
    """Write the job's records (its saves, its reviewer version) to ``path``; rows written."""
    suffix = check_export_path(path)
    assert job.id is not None
    records = store.iter_records(engine, store.job_save_ids(engine, job.id), job.reviewer_version)
    n = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        if suffix == ".csv":
            writer = csv.DictWriter(fh, fieldnames=list(CSV_FIELDS))
            writer.writeheader()
            for rec in records:
                writer.writerow(row(rec))
                n += 1
        else:
            for rec in records:
                fh.write(json.dumps({**row(rec), "output": rec.output}, ensure_ascii=False) + "\n")
                n += 1
    return n
