"""Scope ids reach monitoring (task args, hence Flower) hashed unless the operator opts out."""

from __future__ import annotations

from nekoflow.redact import scope_label
from nekoflow.settings import Settings

SCOPE = "qq:private:30009"


def test_scope_ids_are_hashed_by_default() -> None:
    settings = Settings(database_url="postgresql://nekoflow:pw@db:5432/nekoflow")
    key = settings.scope_hash_key
    assert key is not None
    label = scope_label(SCOPE, key=key)
    assert label is not None and label.startswith("h:") and "30009" not in label
    # the same in every process of the deployment (same settings), a turn's stages group
    again = Settings(database_url="postgresql://nekoflow:pw@db:5432/nekoflow")
    assert scope_label(SCOPE, key=again.scope_hash_key) == label
    # another deployment (other database, other secret) hashes differently
    other = Settings(database_url="postgresql://nekoflow:other@db:5432/nekoflow")
    assert scope_label(SCOPE, key=other.scope_hash_key) != label


def test_a_configured_key_is_used_and_a_blank_one_is_unset() -> None:
    keyed = Settings(monitoring_hash_key="a-long-random-secret")
    assert keyed.scope_hash_key == b"a-long-random-secret"
    blank = Settings(monitoring_hash_key="  ")
    assert blank.monitoring_hash_key is None and blank.scope_hash_key is not None


def test_plain_ids_only_when_chosen() -> None:
    settings = Settings(monitoring_scope_ids="plain")
    assert settings.scope_hash_key is None
    assert scope_label(SCOPE, key=settings.scope_hash_key) == SCOPE
