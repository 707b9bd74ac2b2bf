"""The generated settings reference gives every setting a meaning (fast: no processes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    """``docs/gen_reference.py`` as a module (it is a script, not part of the package)."""
    path = REPO / "docs" / "gen_reference.py"
    spec = importlib.util.spec_from_file_location("gen_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_setting_and_json_key_has_a_meaning() -> None:
    """Each settings field, and each key of a ``*_BOTS`` / ``*_APPS`` item, says what it is for."""
    missing: list[str] = []
    page = _generator().render_settings(missing)
    assert missing == []
    for key in ("NEKOFLOW_ONEBOT_BOTS", "NEKOFLOW_QQBOT_BOTS", "NEKOFLOW_TELEGRAM_BOTS"):
        assert f"(in `{key}`)" in page, key
