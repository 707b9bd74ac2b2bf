"""The pure decisions of ``nekoflow doctor``: what the probes' answers mean, and the fix."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from nekoflow.queues import WORKER_APP

OPTIONAL_QUEUES = {"review": "only `nekoflow rereview` batches use it"}
"""Queues a deployment may leave without a consumer, and why."""

SPEECH_OFF = {"speech": "voice replies are off (NEKOFLOW_SPEECH_ENABLED)"}
"""The speech queue, optional while voice replies are off."""


@dataclass(frozen=True)
class Check:
    """One line of the report: the part checked, whether it is fine, what was seen, the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        """``✓ name: detail`` or ``✗ name: detail — fix: …``."""
        if self.ok:
            return f"✓ {self.name}: {self.detail}"
        return f"✗ {self.name}: {self.detail}" + (f" — fix: {self.fix}" if self.fix else "")

    def as_dict(self) -> dict[str, Any]:
        """The check as JSON-ready fields."""
        return asdict(self)


def routed_queues(default_queue: str, routes: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Every queue the Celery routes (and the default queue) send tasks to, in route order."""
    queues = [default_queue]
    for route in routes.values():
        queue = route.get("queue")
        if queue and queue not in queues:
            queues.append(queue)
    return queues


def queue_consumers(
    queues: Iterable[str],
    active: Mapping[str, Iterable[Mapping[str, Any]]] | None,
    optional: Mapping[str, str] = OPTIONAL_QUEUES,
) -> list[Check]:
    """One check per queue from ``inspect().active_queues()`` (worker → its queues; None or
    empty: no worker answered); ``optional`` queues may go without a consumer (why)."""
    consumers: dict[str, list[str]] = {}
    for worker, worker_queues in (active or {}).items():
        for q in worker_queues or ():
            consumers.setdefault(str(q.get("name")), []).append(worker)
    out = []
    for queue in queues:
        workers = sorted(consumers.get(queue, []))
        if workers:
            out.append(Check(f"queue {queue}", True, f"consumed by {', '.join(workers)}"))
        elif queue in optional:
            out.append(Check(f"queue {queue}", True, f"no consumer ({optional[queue]})"))
        else:
            out.append(
                Check(
                    f"queue {queue}",
                    False,
                    "no worker consumes it" if active else "no worker answered",
                    f"start a worker with it: celery -A {WORKER_APP} worker -Q {queue} "
                    "(or add it to a running worker's -Q)",
                )
            )
    return out


def beat_alive(last_sweep: float | None, now: float, interval: float) -> Check:
    """Beat is alive when the sweeper ran within three intervals (at least a minute)."""
    fix = f"run beat once: celery -A {WORKER_APP} beat (or -B on one worker)"
    if last_sweep is None:
        return Check("beat", False, "the sweeper has not run (no record in Redis)", fix)
    age = now - last_sweep
    if age > max(3 * interval, 60.0):
        return Check("beat", False, f"the sweeper last ran {age:.0f} s ago", fix)
    return Check("beat", True, f"the sweeper ran {max(age, 0):.0f} s ago")


def lease_coherence(
    *,
    turn_lease: float,
    llm_lease: float,
    llm_timeout: float,
    sweep_interval: float,
    visibility_timeout: float,
    uses_redis_broker: bool,
) -> Check:
    """The lease and timeout settings agree with each other (the first problem, named)."""
    if sweep_interval > turn_lease:
        return Check(
            "leases",
            False,
            f"sweep interval {sweep_interval:g} s is longer than the turn lease {turn_lease:g} s",
            "set NEKOFLOW_SWEEP_INTERVAL_SECONDS below NEKOFLOW_TURN_LEASE_SECONDS",
        )
    if llm_lease > turn_lease:
        return Check(
            "leases",
            False,
            f"LLM lease {llm_lease:g} s exceeds the turn lease {turn_lease:g} s",
            "lower NEKOFLOW_LLM_LEASE_SECONDS (or unset it)",
        )
    if uses_redis_broker and visibility_timeout <= llm_timeout:
        return Check(
            "leases",
            False,
            f"broker visibility timeout {visibility_timeout:g} s is not above the LLM timeout "
            f"{llm_timeout:g} s: Redis re-delivers a model call that is still running",
            "raise NEKOFLOW_BROKER_VISIBILITY_TIMEOUT above NEKOFLOW_LLM_TIMEOUT (default 3600)",
        )
    return Check(
        "leases",
        True,
        f"turn lease {turn_lease:g} s, LLM lease {llm_lease:g} s, LLM timeout {llm_timeout:g} s, "
        f"sweep every {sweep_interval:g} s",
    )


def webhook_registered(bot: str, expected_url: str | None, info: Mapping[str, Any]) -> Check:
    """Telegram ``getWebhookInfo`` against the URL the bot should be called at."""
    name = f"telegram {bot} webhook"
    url = str(info.get("url") or "")
    if expected_url is None:
        return Check(
            name,
            False,
            f"webhook mode without a public URL (registered: {url or 'none'})",
            "set NEKOFLOW_TELEGRAM_PUBLIC_URL, then nekoflow gateway telegram --set-webhook",
        )
    if url != expected_url:
        return Check(
            name,
            False,
            f"registered {url or 'none'}, expected {expected_url}",
            "nekoflow gateway telegram --set-webhook",
        )
    error = str(info.get("last_error_message") or "")
    pending = info.get("pending_update_count") or 0
    if error:
        return Check(
            name,
            False,
            f"{url}: Telegram's last delivery failed ({error[:120]}; {pending} pending)",
            "make the public URL reach `nekoflow serve` over HTTPS",
        )
    return Check(name, True, f"{url} ({pending} pending)")
