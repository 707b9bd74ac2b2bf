"""The character-runtime configuration: ``config.ini`` sections and plain mappings → RuntimeConfig.

``[character_runtime]`` holds ``default_enabled`` (default true) and ``default_character_id``;
``[character_runtime_<channel>]`` holds ``enabled``, ``trigger``, ``memory_scope``,
``trigger_keywords`` (comma-separated; the full-width ``，`` also separates),
``legacy_prompt_enabled``, ``default_character_id``, ``voice`` (``on``/``off``/``private``:
replies also as voice, never, or in private chats only; speech must be enabled) and
``voice_chats`` (per chat: ``<chat id>:<mode>``, comma-separated). A known channel whose
section is absent gets the seed's defaults (:data:`CHANNEL_DEFAULTS`); ``enabled`` is never
defaulted, so an absent section follows ``default_enabled``. The defaults are the seed's
channel table (QQ: group in groups, user in private chats); ``memory_scope = group_user`` in
the seed's config.ini example is a configuration choice that, when configured, wins over that
default. Unknown keys, triggers, scopes and bad booleans are :class:`ConfigError` naming
section and key.
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ConfigDict, Field

from nekoflow.channels.context import MappingAccess, MemoryScope, TriggerStrategy
from nekoflow.errors import ConfigError
from nekoflow.speech.plan import VoiceMode

GLOBAL_SECTION = "character_runtime"
CHANNEL_SECTION_PREFIX = "character_runtime_"


class ChannelDefaults(NamedTuple):
    """A channel's built-in trigger and memory scope."""

    trigger: TriggerStrategy
    memory_scope: MemoryScope


CHANNEL_DEFAULTS: dict[str, ChannelDefaults] = {
    "web": ChannelDefaults(TriggerStrategy.always, MemoryScope.conversation),
    "qq": ChannelDefaults(TriggerStrategy.mention_or_private, MemoryScope.group),
    "qqbot": ChannelDefaults(TriggerStrategy.mention_or_private, MemoryScope.group),
    "feishu": ChannelDefaults(TriggerStrategy.always, MemoryScope.group),
    # The seed's table says private_or_reply, which ignores @mentions (issue 30): a group bot
    # answers both @mentions (with the bot's username known) and replies to it.
    "telegram": ChannelDefaults(TriggerStrategy.mention_or_reply, MemoryScope.group),
}
# A channel with neither configuration nor built-in defaults: answer private chats and mentions.
FALLBACK_TRIGGER = TriggerStrategy.mention_or_private
FALLBACK_MEMORY_SCOPE = MemoryScope.conversation

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class _Section(MappingAccess):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class GlobalRuntimeSettings(_Section):
    """``[character_runtime]``: the global switch and the default character."""

    default_enabled: bool = True
    default_character_id: str | None = None


class ChannelRuntimeSettings(_Section):
    """``[character_runtime_<channel>]``: None means "not configured" for that key."""

    enabled: bool | None = None
    trigger: TriggerStrategy | None = None
    memory_scope: MemoryScope | None = None
    trigger_keywords: list[str] = Field(default_factory=list)
    legacy_prompt_enabled: bool = False
    default_character_id: str | None = None
    #: Voice replies: on, off or private chats only (None: on when speech is enabled).
    voice: VoiceMode | None = None
    #: Per chat (the platform's chat id) voice mode, overriding ``voice``.
    voice_chats: dict[str, VoiceMode] = Field(default_factory=dict)


class ChannelSection(_Section):
    """One channel's configuration, nested as SPEC's mapping shape has it."""

    character_runtime: ChannelRuntimeSettings = Field(default_factory=ChannelRuntimeSettings)


class RuntimeConfig(_Section):
    """The whole character-runtime configuration (SPEC's mapping shape, validated)."""

    character_runtime: GlobalRuntimeSettings = Field(default_factory=GlobalRuntimeSettings)
    channels: dict[str, ChannelSection] = Field(default_factory=dict)

    def channel(self, name: str) -> ChannelRuntimeSettings:
        """The settings of channel ``name`` (all unset when it is not configured)."""
        section = self.channels.get(name.strip().lower())
        return section.character_runtime if section is not None else ChannelRuntimeSettings()

    @classmethod
    def from_parser(cls, parser: configparser.ConfigParser) -> RuntimeConfig:
        """The character_runtime sections of a parsed ini file (other sections are ignored)."""
        inherited = set(parser.defaults())
        data: dict[str, Any] = {}
        for name in parser.sections():
            if name == GLOBAL_SECTION or name.startswith(CHANNEL_SECTION_PREFIX):
                data[name] = {k: v for k, v in parser.items(name, raw=True) if k not in inherited}
        return cls.from_mapping(data)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RuntimeConfig:
        """Validate SPEC's mapping shape (or ini-style ``character_runtime_<channel>`` keys).

        Channel entries may be nested under ``character_runtime`` or given flat; values may be
        strings as in config.ini. Other top-level keys belong to other parts of the application
        config and are ignored (as other config.ini sections are); inside the character_runtime
        sections an unknown key is a :class:`ConfigError` naming section and key.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"runtime config must be a mapping, got {type(data).__name__}", field="config"
            )
        global_raw = data.get(GLOBAL_SECTION) or {}
        _expect_mapping(global_raw, GLOBAL_SECTION)
        config = cls(character_runtime=_global_settings(global_raw))
        channels_raw = data.get("channels") or {}
        _expect_mapping(channels_raw, "channels")
        for name, entry in channels_raw.items():
            channel = _channel_name(str(name))
            section = f"{CHANNEL_SECTION_PREFIX}{channel}"
            _expect_mapping(entry, section)
            inner = entry.get(GLOBAL_SECTION, entry)
            _expect_mapping(inner, section)
            config.channels[channel] = ChannelSection(
                character_runtime=_channel_settings(inner, section)
            )
        for key, value in data.items():
            key = str(key)
            if key.startswith(CHANNEL_SECTION_PREFIX):
                channel = _channel_name(key[len(CHANNEL_SECTION_PREFIX) :])
                _expect_mapping(value, key)
                config.channels[channel] = ChannelSection(
                    character_runtime=_channel_settings(value, key)
                )
        return config


def _expect_mapping(value: Any, section: str) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"[{section}] must be a mapping, got {type(value).__name__}", field=section
        )


def _channel_name(name: str) -> str:
    channel = name.strip().lower()
    if not channel:
        raise ConfigError("a channel section needs a channel name", field=CHANNEL_SECTION_PREFIX)
    return channel


def _bad(section: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"[{section}] {key}: {message}", field=f"{section}.{key}")


def _parse_bool(value: Any, section: str, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if not text:
            return None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise _bad(section, key, f"expected a boolean (true/false/yes/no/on/off/1/0), got {value!r}")


def _parse_choice(
    value: Any,
    choices: type[TriggerStrategy] | type[MemoryScope] | type[VoiceMode],
    section: str,
    key: str,
) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(section, key, f"expected a string, got {type(value).__name__}")
    text = value.strip().lower()
    if not text:
        return None
    try:
        return choices(text)
    except ValueError:
        allowed = ", ".join(member.value for member in choices)
        raise _bad(section, key, f"unknown value {value!r} (expected one of: {allowed})") from None


def _parse_keywords(value: Any, section: str, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.replace("，", ",").split(",")
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise _bad(section, key, f"expected a comma-separated string or a list, got {value!r}")
    keywords: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise _bad(section, key, f"keywords must be strings, got {item!r}")
        if item.strip():
            keywords.append(item.strip())
    return keywords


def _parse_voice_chats(value: Any, section: str, key: str) -> dict[str, VoiceMode]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = [f"{k}:{v}" for k, v in value.items()]
    elif isinstance(value, str):
        items = [i for i in value.replace("，", ",").split(",") if i.strip()]
    else:
        raise _bad(section, key, f"expected '<chat id>:<on|off|private>, …', got {value!r}")
    modes: dict[str, VoiceMode] = {}
    for item in items:
        chat, sep, mode = str(item).strip().rpartition(":")
        if not sep or not chat.strip():
            raise _bad(section, key, f"expected '<chat id>:<on|off|private>', got {item!r}")
        modes[chat.strip()] = _parse_choice(mode, VoiceMode, section, key) or VoiceMode.on
    return modes


def _parse_id(value: Any, section: str, key: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _bad(section, key, f"expected a string id, got {value!r}")
    return str(value).strip() or None


def _check_keys(raw: Mapping[str, Any], allowed: set[str], section: str) -> None:
    for key in raw:
        if key not in allowed:
            raise _bad(
                section, str(key), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
            )


def _global_settings(raw: Mapping[str, Any]) -> GlobalRuntimeSettings:
    section = GLOBAL_SECTION
    _check_keys(raw, {"default_enabled", "default_character_id"}, section)
    enabled = _parse_bool(raw.get("default_enabled"), section, "default_enabled")
    return GlobalRuntimeSettings(
        default_enabled=True if enabled is None else enabled,
        default_character_id=_parse_id(
            raw.get("default_character_id"), section, "default_character_id"
        ),
    )


def _channel_settings(raw: Mapping[str, Any], section: str) -> ChannelRuntimeSettings:
    _check_keys(raw, set(ChannelRuntimeSettings.model_fields), section)
    legacy = _parse_bool(raw.get("legacy_prompt_enabled"), section, "legacy_prompt_enabled")
    return ChannelRuntimeSettings(
        enabled=_parse_bool(raw.get("enabled"), section, "enabled"),
        trigger=_parse_choice(raw.get("trigger"), TriggerStrategy, section, "trigger"),
        memory_scope=_parse_choice(raw.get("memory_scope"), MemoryScope, section, "memory_scope"),
        trigger_keywords=_parse_keywords(raw.get("trigger_keywords"), section, "trigger_keywords"),
        legacy_prompt_enabled=bool(legacy),
        default_character_id=_parse_id(
            raw.get("default_character_id"), section, "default_character_id"
        ),
        voice=_parse_choice(raw.get("voice"), VoiceMode, section, "voice"),
        voice_chats=_parse_voice_chats(raw.get("voice_chats"), section, "voice_chats"),
    )


def default_runtime_config() -> RuntimeConfig:
    """The configuration of an empty config.ini: global defaults and every known channel's."""
    config = RuntimeConfig()
    _fill_channel_defaults(config)
    return config


def _fill_channel_defaults(config: RuntimeConfig) -> None:
    for name, defaults in CHANNEL_DEFAULTS.items():
        if name not in config.channels:
            config.channels[name] = ChannelSection(
                character_runtime=ChannelRuntimeSettings(
                    trigger=defaults.trigger, memory_scope=defaults.memory_scope
                )
            )


def parse_runtime_config(text: str, *, source: str = "<string>") -> RuntimeConfig:
    """Parse config.ini text (only the character_runtime sections are read)."""
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    try:
        parser.read_string(text, source=source)
    except configparser.Error as exc:
        raise ConfigError(f"{source}: not a valid ini file: {exc}", field="path") from exc
    config = RuntimeConfig.from_parser(parser)
    _fill_channel_defaults(config)
    return config


def load_runtime_config(
    path: str | Path | None = None, *, missing_ok: bool = False
) -> RuntimeConfig:
    """Read ``config.ini`` at ``path`` (default: settings ``runtime_config_path``).

    A missing file is a :class:`ConfigError` unless ``missing_ok``, which gives
    :func:`default_runtime_config`.
    """
    if path is None:
        from nekoflow.settings import get_settings

        path = get_settings().runtime_config_path
    file = Path(path)
    if not file.is_file():
        if missing_ok:
            return default_runtime_config()
        raise ConfigError(f"runtime config file not found: {file}", field="path")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read runtime config {file}: {exc}", field="path") from exc
    return parse_runtime_config(text, source=str(file))
