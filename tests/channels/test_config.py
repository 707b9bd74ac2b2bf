"""load_runtime_config: the seed's config.ini, defaults for absent sections, invalid values."""

from __future__ import annotations

from pathlib import Path

import pytest

from nekoflow.channels import (
    ChannelRuntimeContext,
    CharacterRuntimeContextDispatcher,
    load_runtime_config,
)
from nekoflow.channels.config import CHANNEL_DEFAULTS, RuntimeConfig, parse_runtime_config
from nekoflow.errors import ConfigError
from tests.seed_data import SEED_CONFIG

SEED_INI = SEED_CONFIG


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.ini"
    path.write_text(text, encoding="utf-8")
    return path


def test_seed_config_ini_loads(tmp_path: Path) -> None:
    config = load_runtime_config(write(tmp_path, SEED_INI))
    assert config.character_runtime.default_enabled is True
    assert config.character_runtime.default_character_id is None
    qq = config.channel("qq")
    assert (qq.enabled, qq.trigger, qq.memory_scope) == (True, "mention_or_private", "group_user")
    assert qq.legacy_prompt_enabled is False
    assert config.channel("qqbot").memory_scope == "group"
    assert config.channel("feishu").trigger == "always"
    assert config.channel("telegram").trigger == "private_or_reply"
    # SPEC's mapping shape reads the same
    assert config["channels"]["qq"]["character_runtime"]["trigger"] == "mention_or_private"


def test_absent_sections_get_seed_defaults_and_follow_default_enabled(tmp_path: Path) -> None:
    config = load_runtime_config(
        write(
            tmp_path, "[character_runtime]\ndefault_enabled = false\ndefault_character_id = neko\n"
        )
    )
    for name, defaults in CHANNEL_DEFAULTS.items():
        section = config.channel(name)
        assert (section.trigger, section.memory_scope) == defaults
        assert section.enabled is None
    assert config.channel("qq").memory_scope == "group"  # the seed's channel table
    assert config.channel("web").trigger == "always"
    assert config.character_runtime.default_character_id == "neko"
    dispatcher = CharacterRuntimeContextDispatcher(config)
    assert not dispatcher.is_enabled(ChannelRuntimeContext("qq", "c", "group"))


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    config = load_runtime_config(write(tmp_path, ""))
    assert config.character_runtime.default_enabled is True
    assert set(config.channels) == set(CHANNEL_DEFAULTS)


def test_keywords_booleans_and_custom_channel(tmp_path: Path) -> None:
    config = load_runtime_config(
        write(
            tmp_path,
            "[character_runtime_my_channel]\nenabled = no\ntrigger = keyword\n"
            "trigger_keywords = 猫娘, Neko ,，喵\nlegacy_prompt_enabled = ON\n"
            "[other_section]\nanything = goes\n",
        )
    )
    mine = config.channel("my_channel")
    assert mine.enabled is False
    assert mine.trigger == "keyword"
    assert mine.trigger_keywords == ["猫娘", "Neko", "喵"]
    assert mine.legacy_prompt_enabled is True


def test_section_present_without_keys_leaves_them_unset(tmp_path: Path) -> None:
    config = load_runtime_config(write(tmp_path, "[character_runtime_telegram]\nenabled = true\n"))
    telegram = config.channel("telegram")
    assert telegram.trigger is None and telegram.memory_scope is None
    dispatcher = CharacterRuntimeContextDispatcher(config)
    assert dispatcher.get_trigger(ChannelRuntimeContext("telegram", "1", "group")) == (
        "mention_or_reply"  # the built-in default (issue 30: @mentions and replies)
    )


@pytest.mark.parametrize(
    ("ini", "section", "key"),
    [
        ("[character_runtime_qq]\ntrigger = loudly\n", "character_runtime_qq", "trigger"),
        ("[character_runtime_qq]\nmemory_scope = moon\n", "character_runtime_qq", "memory_scope"),
        ("[character_runtime_feishu]\nenabled = maybe\n", "character_runtime_feishu", "enabled"),
        ("[character_runtime]\ndefault_enabled = 2\n", "character_runtime", "default_enabled"),
        ("[character_runtime_qq]\ntrigers = always\n", "character_runtime_qq", "trigers"),
        (
            "[character_runtime_qq]\nlegacy_prompt_enabled = sure\n",
            "character_runtime_qq",
            "legacy_prompt_enabled",
        ),
    ],
)
def test_invalid_values_name_section_and_key(
    tmp_path: Path, ini: str, section: str, key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_runtime_config(write(tmp_path, ini))
    assert f"[{section}]" in str(err.value)
    assert key in str(err.value)
    assert err.value.field == f"{section}.{key}"


def test_missing_file_is_a_clear_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ini"
    with pytest.raises(ConfigError, match="not found") as err:
        load_runtime_config(missing)
    assert str(missing) in str(err.value)
    assert load_runtime_config(missing, missing_ok=True).channel("qq").trigger == (
        "mention_or_private"
    )


def test_broken_ini_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a valid ini"):
        load_runtime_config(write(tmp_path, "trigger = always\n"))


def test_default_path_comes_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nekoflow.settings import get_settings

    path = write(tmp_path, "[character_runtime]\ndefault_enabled = false\n")
    monkeypatch.setenv("NEKOFLOW_RUNTIME_CONFIG_PATH", str(path))
    get_settings.cache_clear()
    try:
        assert load_runtime_config().character_runtime.default_enabled is False
    finally:
        get_settings.cache_clear()


def test_plain_mapping_matches_loaded_file(tmp_path: Path) -> None:
    mapping = {
        "character_runtime": {"default_enabled": True, "default_character_id": "neko"},
        "channels": {
            "qq": {
                "character_runtime": {
                    "enabled": False,
                    "trigger": "keyword",
                    "memory_scope": "group",
                    "trigger_keywords": ["喵"],
                }
            }
        },
    }
    from_mapping = RuntimeConfig.from_mapping(mapping)
    from_file = parse_runtime_config(
        "[character_runtime]\ndefault_enabled = true\ndefault_character_id = neko\n"
        "[character_runtime_qq]\nenabled = false\ntrigger = keyword\nmemory_scope = group\n"
        "trigger_keywords = 喵\n"
    )
    assert from_mapping.channel("qq") == from_file.channel("qq")
    assert from_mapping.character_runtime == from_file.character_runtime
    # ini-style keys and flat channel entries are accepted too
    flat = RuntimeConfig.from_mapping({"character_runtime_qq": {"enabled": "false"}})
    assert flat.channel("qq").enabled is False
    nested_flat = RuntimeConfig.from_mapping({"channels": {"qq": {"trigger": "always"}}})
    assert nested_flat.channel("qq").trigger == "always"


def test_mapping_rejects_wrong_shapes() -> None:
    with pytest.raises(ConfigError):
        RuntimeConfig.from_mapping({"channels": ["qq"]})
    with pytest.raises(ConfigError, match="trigger_keywords"):
        RuntimeConfig.from_mapping({"channels": {"qq": {"trigger_keywords": 5}}})
    with pytest.raises(ConfigError, match="surprise"):
        RuntimeConfig.from_mapping({"channels": {"qq": {"surprise": 1}}})


def test_mapping_ignores_other_parts_of_the_app_config() -> None:
    # A whole application config (other sections next to the runtime's) is read like config.ini,
    # whose unrelated sections are ignored too.
    config = RuntimeConfig.from_mapping(
        {"llm": {"model": "x"}, "character_runtime": {"default_enabled": False}}
    )
    assert config.character_runtime.default_enabled is False


def test_dispatcher_accepts_configparser() -> None:
    import configparser

    parser = configparser.ConfigParser()
    parser.read_string("[character_runtime_qq]\nenabled = false\n[unrelated]\nx = 1\n")
    dispatcher = CharacterRuntimeContextDispatcher(parser)
    assert not dispatcher.is_enabled(ChannelRuntimeContext("qq", "c", "group"))


def test_inline_comments_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "config.ini"
    path.write_text(
        "[character_runtime_qq]\ntrigger = always  # 全部回复\nmemory_scope = user ; 按用户\n",
        encoding="utf-8-sig",
    )
    qq = load_runtime_config(path).channel("qq")
    assert (qq.trigger, qq.memory_scope) == ("always", "user")
