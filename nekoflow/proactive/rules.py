"""Platform rules for messages the bot starts (pure): the QQ official bot's active-message
quotas, and the delivery failures that mean the user or group can no longer be reached (blocked
the bot, left, removed it) — after one, nothing more is started there until the user writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from nekoflow.delivery.base import Destination

#: Delivery reasons (the senders' own words, see the platform clients) that mean the recipient
#: is gone: Telegram 403 "bot was blocked by the user" / "user is deactivated" / "bot was
#: kicked", 400 "chat not found"; Feishu 230002 (bot not in the chat), 230013, 230017.
RECIPIENT_GONE = (
    "bot blocked by the user",
    "user deactivated",
    "bot removed from the chat",
    "bot not in the chat",
    "chat not found",
    "user outside the bot's availability",
)

_QQ_MONTH = ZoneInfo("Asia/Shanghai")


@dataclass(frozen=True)
class Quota:
    """At most ``count`` bot-started messages per window starting at :meth:`since`."""

    count: int
    window: str  # "month" (calendar month, Beijing time) or "day"
    label: str

    def since(self, now: datetime) -> datetime:
        """The start of the window ``now`` falls in."""
        local = now.astimezone(_QQ_MONTH)
        start = local.replace(hour=0, minute=0, second=0, microsecond=0)
        if self.window == "month":
            start = start.replace(day=1)
        return start.astimezone(now.tzinfo)


def active_quota(dest: Destination) -> Quota | None:
    """The platform's quota on messages the bot starts to ``dest`` (None: none known).

    QQ official bot (send.html of the v2 API): C2C and group active messages, 4 per month per
    user / group; guild DMs, 2 per day per user. Telegram and Feishu have no count on them, only
    reachability (see :data:`RECIPIENT_GONE`).
    """
    if dest.platform == "qqbot-active" and dest.chat_type in ("c2c", "group"):
        who = "user" if dest.chat_type == "c2c" else "group"
        return Quota(4, "month", f"qqbot: 4 active messages per {who} per month")
    if dest.platform == "qqbot-guild" and dest.chat_type == "dm":
        return Quota(2, "day", "qqbot: 2 active direct messages per user per day")
    return None


def quota_refusal(quota: Quota | None, started: int) -> str | None:
    """Why one more bot-started message is refused after ``started`` in the window (None: it
    may go)."""
    if quota is None or started < quota.count:
        return None
    return f"{quota.label} used ({started})"


def recipient_gone(reason: str | None) -> bool:
    """True when a delivery failure says the user or group cannot be reached any more."""
    text = (reason or "").lower()
    return any(words in text for words in RECIPIENT_GONE)
