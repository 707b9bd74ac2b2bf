"""Publishing a turn's chain without losing it when the broker is down, and the sweeper.

A turn's first publication is claimed in SQL (``publishes`` 0 → 1) by exactly one of the
enqueuer, the finisher of the previous turn of its scope, or the sweeper. When the broker is
unreachable the claim is undone, the turn stays ``queued`` with its publish pending, and the
sweeper publishes it once the broker is back: nothing is lost and the caller still gets its
turn id.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from nekoflow.redact import safe_error
from nekoflow.storage.turns import TurnRun
from nekoflow.turns import publications
from nekoflow.turns.deps import TurnDeps

log = logging.getLogger(__name__)


def publish_claimed(deps: TurnDeps, run: TurnRun) -> bool:
    """Publish ``run`` whose first publication the caller claimed; on a broker failure mark
    it pending again (the sweeper retries) and return False instead of raising."""
    try:
        deps.publish(run)
        return True
    except Exception as exc:
        log.warning(
            "turn %s: could not publish (%s); the sweeper will publish it",
            run.turn_id,
            safe_error(exc),
        )
        publications.publish_failed(deps.engine, run.turn_id)
        return False


def sweep(deps: TurnDeps) -> list[str]:
    """Publish pending turns and re-publish stuck ones; returns the turn ids published."""
    published: list[str] = []
    for run in publications.pending_publishes(deps.engine):
        if publications.first_publish(deps.engine, run.turn_id) and publish_claimed(deps, run):
            published.append(run.turn_id)
    stuck = publications.stuck_turns(
        deps.engine, older_than=timedelta(seconds=deps.settings.turn_lease_seconds)
    )
    again: list[str] = []
    for run in stuck:
        try:
            deps.publish(run)
            again.append(run.turn_id)
        except Exception as exc:  # broker still down: the next sweep tries again
            log.warning("sweeper: could not re-publish turn %s (%s)", run.turn_id, safe_error(exc))
    publications.mark_published(deps.engine, again)
    return published + again
