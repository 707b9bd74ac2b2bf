"""Channel data models: the parsed request, the runtime context and the render policy.

``ChatRequest`` is what an adapter's ``parse_event`` produces from a platform event;
``ChannelRuntimeContext`` says which channel and conversation a message belongs to (seed
``channel-runtime.md``); ``ChannelRenderPolicy`` describes what a channel can display.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from nekoflow.errors import InputError

TIME_KEYS = ("time", "timestamp", "date", "create_time", "sent_at")
"""The ``ChatRequest.metadata`` keys adapters keep the platform's own send time in."""

# Scenes in which the bot talks with exactly one person: triggers treat them as private chats
# and memory scopes group/group_user fall back to user there.
PRIVATE_SCENES: frozenset[str] = frozenset({"private", "web_session"})


class TriggerStrategy(StrEnum):
    """When a message enters the character runtime (seed table "触发策略")."""

    always = "always"
    private_only = "private_only"
    mention_only = "mention_only"
    mention_or_private = "mention_or_private"
    private_or_reply = "private_or_reply"
    #: Private chats always; groups when the bot is @mentioned or a message replies to it.
    mention_or_reply = "mention_or_reply"
    keyword = "keyword"
    manual = "manual"


class MemoryScope(StrEnum):
    """How relationship state and memories are isolated (seed table "记忆作用域")."""

    conversation = "conversation"
    user = "user"
    group = "group"
    group_user = "group_user"
    chat_user = "chat_user"
    thread = "thread"


class _PositionalModel(BaseModel):
    """A model that also accepts its fields positionally, like the seed's dataclasses."""

    def __init__(self, *args: Any, **data: Any) -> None:
        if args:
            names = list(type(self).model_fields)
            if len(args) > len(names):
                raise TypeError(
                    f"{type(self).__name__} takes at most {len(names)} positional arguments"
                )
            for name, value in zip(names, args, strict=False):
                if name in data:
                    raise TypeError(f"{type(self).__name__} got field {name!r} twice")
                data[name] = value
        super().__init__(**data)


class ChannelRuntimeContext(_PositionalModel):
    """Which channel and conversation one message belongs to (seed ``ChannelRuntimeContext``).

    ``channel`` selects the configuration (qq/qqbot/telegram/feishu/web); ``scene`` (private,
    group, thread, web_session) drives triggers and memory scopes. Ids given as ints become str;
    None for a text field means "" and None metadata means {} (``build_scope_id`` then applies
    its fallbacks).
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, validate_assignment=True)

    channel: str
    conversation_id: str
    scene: str
    user_id: str = ""
    user_display_name: str = ""
    group_id: str = ""
    group_name: str = ""
    thread_id: str = ""
    raw_event_id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _none_is_empty(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = {k: ({} if k == "metadata" else "") if v is None else v for k, v in data.items()}
        return data

    @property
    def is_private(self) -> bool:
        """True in a one-to-one chat (scene ``private`` or ``web_session``)."""
        return self.scene in PRIVATE_SCENES

    def to_dict(self) -> dict[str, Any]:
        """The context as a plain dict (the seed's serialisation)."""
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChannelRuntimeContext:
        """Rebuild a context from :meth:`to_dict` output (missing scene → ``private``)."""
        return cls.model_validate(
            {"channel": "", "conversation_id": "", "scene": "private", **data}
        )


class ChannelRenderPolicy(_PositionalModel):
    """What a channel can display (seed ``ChannelRenderPolicy``); drives ``render_result``.

    ``max_text_length`` None means unlimited; otherwise replies longer than it are split. Mutable
    like the seed's dataclass (assignments are validated); adapters hand out copies, so changing
    one never changes the channel's policy.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    supports_stream: bool = False
    supports_markdown: bool = True
    supports_image: bool = False
    supports_file: bool = False
    supports_quote_reply: bool = False
    supports_at: bool = False
    max_text_length: int | None = Field(default=None, ge=1)
    split_strategy: str = "paragraph"

    def to_dict(self) -> dict[str, Any]:
        """The policy as a plain dict (the seed's serialisation)."""
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChannelRenderPolicy:
        """Rebuild a policy from :meth:`to_dict` output (missing keys take the defaults)."""
        return cls.model_validate(dict(data))


class MappingAccess(BaseModel):
    """Lets callers that treat these records as dicts (as the seed's adapters return them) read
    them with ``[]``, ``get`` and ``in``."""

    def _has_key(self, key: object) -> bool:
        return isinstance(key, str) and (
            key in type(self).model_fields or key in (self.model_extra or {})
        )

    def __getitem__(self, key: str) -> Any:
        if not self._has_key(key):
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return self._has_key(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The field's value, or ``default`` for a name that is not a field."""
        return getattr(self, key) if self._has_key(key) else default


class Attachment(MappingAccess):
    """One non-text part of a message: an image, a file, audio, video or a sticker.

    ``url`` is a download address when the platform gives one; ``file_id`` is the platform's own
    handle (OneBot ``file``, Telegram ``file_id``, Feishu ``image_key``/``file_key``). Other keys
    a platform or caller adds (``source``, ``file``…) are kept as extra fields.
    """

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    type: str
    url: str | None = None
    file_id: str | None = None
    name: str | None = None
    mime_type: str | None = None
    size: int | None = None


class ChatSender(MappingAccess):
    """Who sent a message: platform user id, the name to show, group role, bot flag.

    The seed's requests carry the sender as a plain name, so a sender also compares equal to the
    string of its ``display_name`` and ``str(sender)`` is that name.
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    user_id: str = ""
    display_name: str = ""
    role: str | None = None
    is_bot: bool = False

    def __str__(self) -> str:
        return self.display_name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.display_name == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class ChatRequest(MappingAccess):
    """One chat message, parsed from a platform event by an adapter's ``parse_event``.

    ``is_mentioned``, ``is_reply_to_bot`` and ``character_mode`` are None when the source does
    not say; adapters set them and mirror them into ``metadata`` (seed "触发数据来源").
    ``sender`` also accepts a plain display-name string. Fields read as attributes or, like the
    seed's dict results, as ``request["content"]`` / ``request.get("metadata")``.
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, validate_assignment=True)

    channel: str
    conversation_id: str
    user_id: str = ""
    sender: ChatSender = Field(default_factory=ChatSender)
    content: str = ""
    message_id: str = ""
    attachments: list[Attachment] = Field(default_factory=list)
    is_mentioned: bool | None = None
    is_reply_to_bot: bool | None = None
    character_mode: bool | None = None
    scene: str = ""
    group_id: str = ""
    group_name: str = ""
    thread_id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("sender", mode="before")
    @classmethod
    def _sender_from_name(cls, value: Any) -> Any:
        if value is None:
            return ChatSender()
        if isinstance(value, str):
            return ChatSender(display_name=value)
        return value


def as_runtime_context(context: Any) -> ChannelRuntimeContext:
    """``context`` as a :class:`ChannelRuntimeContext`: models pass through; a dict or any object
    with the same attribute names (e.g. ``SimpleNamespace``) is read field by field, missing
    fields counting as empty. None or a value of the wrong type is an ``InputError``."""
    if isinstance(context, ChannelRuntimeContext):
        return context
    if context is None or isinstance(context, str | bytes | int | float):
        raise InputError(
            f"context must be a ChannelRuntimeContext, got {type(context).__name__}",
            field="context",
        )
    if isinstance(context, Mapping):
        data = {k: context.get(k) for k in ChannelRuntimeContext.model_fields}
    else:
        data = {k: getattr(context, k, None) for k in ChannelRuntimeContext.model_fields}
    if not isinstance(data["metadata"], Mapping):
        data["metadata"] = {}
    try:
        return ChannelRuntimeContext.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "context"
        raise InputError(f"context.{where}: {first['msg']}", field=f"context.{where}") from exc


def request_field(chat_request: Any, key: str, default: Any = None) -> Any:
    """Read ``key`` from a request: its attribute (or dict key) when not None, else its metadata.

    Works on :class:`ChatRequest`, plain objects (e.g. ``SimpleNamespace``) and dicts; a
    missing or non-mapping ``metadata`` counts as empty. Returns ``default`` when neither has it.
    """
    if chat_request is None:
        return default
    if isinstance(chat_request, Mapping):
        value = chat_request.get(key)
        metadata = chat_request.get("metadata")
    else:
        value = getattr(chat_request, key, None)
        metadata = getattr(chat_request, "metadata", None)
    if value is not None:
        return value
    if isinstance(metadata, Mapping):
        meta_value = metadata.get(key)
        if meta_value is not None:
            return meta_value
    return default


def _as_text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str | int):
        return str(value)
    return ""


def context_from_request(
    chat_request: Any,
    *,
    channel: str | None = None,
    default_scene: str | None = None,
) -> ChannelRuntimeContext:
    """Build a :class:`ChannelRuntimeContext` from any request shape (model, object or dict).

    Fields are read with :func:`request_field`; an empty attribute also defers to metadata (so
    ``ChatRequest(..., metadata={"group_id": "g"})`` is a group message). The scene is
    the request's ``scene`` (or metadata ``channel_type`` when that names a scene), else
    ``default_scene``, else ``group`` when a group id is present and ``private`` otherwise.
    """

    def text(key: str) -> str:
        value = _as_text(request_field(chat_request, key))
        if not value:  # an empty attribute (ChatRequest's default) defers to metadata
            metadata = request_field(chat_request, "metadata")
            if isinstance(metadata, Mapping):
                value = _as_text(metadata.get(key))
        return value

    group_id = text("group_id")
    scene = text("scene")
    if not scene:
        channel_type = text("channel_type")
        if channel_type in {"private", "group", "thread", "web_session"}:
            scene = channel_type
    if not scene:
        scene = default_scene or ("group" if group_id else "private")

    sender = request_field(chat_request, "sender")
    display_name = text("user_display_name")
    if not display_name:
        if isinstance(sender, str):
            display_name = sender
        elif isinstance(sender, ChatSender):
            display_name = sender.display_name
        elif isinstance(sender, Mapping):
            display_name = _as_text(sender.get("display_name") or sender.get("nickname"))

    metadata = request_field(chat_request, "metadata")
    meta = dict(metadata) if isinstance(metadata, Mapping) else {}
    for flag in ("is_mentioned", "is_reply_to_bot", "character_mode"):
        value = request_field(chat_request, flag)
        if value is not None:
            meta[flag] = value

    return ChannelRuntimeContext(
        channel=channel or text("channel"),
        conversation_id=text("conversation_id"),
        scene=scene,
        user_id=text("user_id"),
        user_display_name=display_name,
        group_id=group_id,
        group_name=text("group_name"),
        thread_id=text("thread_id"),
        raw_event_id=text("message_id") or text("raw_event_id"),
        metadata=meta,
    )
