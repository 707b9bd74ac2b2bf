"""The vector candidates' exact scan: its size from the budget, the nearest first (pure)."""

from __future__ import annotations

from nekoflow.memory.embeddings import pack
from nekoflow.memory.semantic import best_by_vector, scan_size


def test_the_scan_is_bounded_by_multiplications_and_by_its_cap() -> None:
    assert scan_size(256, 500_000, 5000) == 1953
    assert scan_size(1536, 500_000, 5000) == 325
    assert scan_size(32, 500_000, 5000) == 5000  # small vectors: the cap
    assert scan_size(256, 0, 5000) == 0


def test_the_nearest_vectors_come_first_and_missing_ones_are_skipped() -> None:
    rows = [(1, pack([1.0, 0.0])), (2, pack([0.0, 1.0])), (3, None), (4, pack([0.6, 0.8]))]
    assert best_by_vector(rows, [0.0, 1.0], 2) == [2, 4]
    assert best_by_vector(rows, [1.0, 0.0], 5) == [1, 4, 2]
