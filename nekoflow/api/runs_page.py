"""The runs page: recent turns as server-rendered HTML (no build step), read from SQL.

``GET /runs`` lists recent turns — status, stages, model, tokens, injected world-book entries,
memories, delivery, failure reasons — filtered by channel, character, scope and status;
``GET /runs/{turn_id}`` shows one turn's stages and their timings. Reading needs
``NEKOFLOW_API_TOKEN`` (without one the page is closed, 503) unless ``NEKOFLOW_API_PUBLIC_READS``
opens it: a browser logs in once on ``/runs/login`` (the form sets an
HttpOnly, SameSite=Strict cookie holding a random session id, never the token; the session lives
in Redis for 12 h, "log out" deletes it, and changing the token ends every session — see
``runs_sessions``); failed logins are throttled per client (then 429). Scripts may send
``Authorization: Bearer <token>``. Only ids, names, counts, codes — no message text.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import redis
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, or_, select

from nekoflow.api import runs_templates as t
from nekoflow.api.deps import READS_CLOSED, ApiState, StateDep, token_matches
from nekoflow.api.runs_sessions import (
    SESSION_SECONDS,
    close_session,
    login_blocked,
    open_session,
    record_failure,
    session_valid,
)
from nekoflow.observability.turn_view import TurnInputs, stage_timings, turn_inputs
from nekoflow.proactive.turns import proactive_label
from nekoflow.storage.dialogue import Role
from nekoflow.storage.turns import STAGES, TurnRun, TurnStatus
from nekoflow.turns import store

router = APIRouter(tags=["runs page"], include_in_schema=False)

COOKIE = "nekoflow_runs"
"""Name of the runs page's session cookie."""

STATUSES = [s.value for s in TurnStatus]
MAX_LIMIT = 500


def _token(state: ApiState) -> str:
    secret = state.settings.api_token
    return secret.get_secret_value().strip() if secret is not None else ""


def authorized(request: Request, state: ApiState) -> bool:
    """Whether the request may read runs (always with public reads; never without a token)."""
    if state.settings.api_public_reads:
        return True
    expected = _token(state)
    if not expected:
        return False
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and token_matches(header[7:].strip(), expected):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return bool(cookie) and session_valid(state, cookie, expected)


def _page(title: str, body: str, state: ApiState, status_code: int = 200) -> HTMLResponse:
    logout = t.LOGOUT if _token(state) else ""
    html = t.PAGE.substitute(title=escape(title), style=t.STYLE, logout=logout, body=body)
    return HTMLResponse(html, status_code=status_code, headers={"Cache-Control": "no-store"})


def _closed(state: ApiState) -> HTMLResponse:
    """The page shown while reads are closed and no token is configured (nothing to log in with)."""
    return _page("closed", f'<p class="reason" id="closed">{escape(READS_CLOSED)}</p>', state, 503)


def _to_login(request: Request, state: ApiState) -> Response:
    if not _token(state):
        return _closed(state)
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/runs/login?next={quote(target, safe='')}", status_code=303)


def _safe_next(value: str) -> str:
    """Only this page's own paths (no open redirect)."""
    return value if value.startswith("/runs") and not value.startswith("//") else "/runs"


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "—"


def _seconds(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else ""


def _link(**filters: str) -> str:
    return "/runs?" + urlencode({k: v for k, v in filters.items() if v})


def _roles(engine: Engine, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    with Session(engine) as s:
        rows = s.exec(select(Role.id, Role.name).where(col(Role.id).in_(ids))).all()
    return {rid: name for rid, name in rows if rid is not None}


def _character_filter(engine: Engine, character: str) -> tuple[Any | None, str]:
    """The WHERE clause for a character given by id or name, or a notice when unknown."""
    if character.isdigit():
        return or_(TurnRun.role_id == int(character), TurnRun.character_id == character), ""
    with Session(engine) as s:
        ids = list(s.exec(select(Role.id).where(Role.name == character)).all())
    if not ids:
        return None, f"no character named {character!r}"
    return or_(col(TurnRun.role_id).in_(ids), TurnRun.character_id == character), ""


def query_runs(
    engine: Engine, *, channel: str, character: str, scope: str, status: str, limit: int
) -> tuple[list[TurnRun], list[str]]:
    """Recent turns matching the filters (newest first) and notices about ignored filters."""
    notices: list[str] = []
    query = select(TurnRun).order_by(col(TurnRun.created_at).desc()).limit(limit)
    if channel:
        query = query.where(TurnRun.channel == channel)
    if scope.endswith("*"):
        prefix = scope[:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(col(TurnRun.scope_id).like(prefix + "%", escape="\\"))
    elif scope:
        query = query.where(TurnRun.scope_id == scope)
    if status and status not in STATUSES:
        notices.append(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
    elif status:
        query = query.where(TurnRun.status == status)
    if character:
        clause, notice = _character_filter(engine, character)
        if clause is None:
            return [], [*notices, notice]
        query = query.where(clause)
    with Session(engine) as s:
        return list(s.exec(query).all()), notices


def _injected_html(view: TurnInputs) -> str:
    return ", ".join(
        f'<span class="entry" title="{escape(e["id"])}">{escape(e["name"] or e["id"])}</span>'
        for e in view.injected
    )


def _dropped_html(view: TurnInputs) -> str:
    """The turn's dropped lore as list items (id and reason), for the turn page."""
    return "".join(
        f'<li class="dropped"><code>{escape(str(d.get("id", "")))}</code> dropped: '
        f'{escape(str(d.get("reason", "")))}</li>'
        for d in view.dropped
    )


def _row(run: TurnRun, view: TurnInputs, roles: dict[int, str]) -> str:
    tokens = (
        f"{run.prompt_tokens or 0}+{run.completion_tokens or 0}"
        if run.prompt_tokens is not None
        else ""
    )
    reason = f'<div class="reason">{escape(run.reason)}</div>' if run.reason else ""
    label = proactive_label(run.request)
    if label:  # the character wrote first: no user's message in this turn
        reason = f'<div class="proactive">{escape(label)}</div>' + reason
    delivery = escape(run.delivery_status or "")
    if run.delivery_status in ("failed", "not_sent") and run.delivery_reason:
        delivery += f'<div class="reason">{escape(run.delivery_reason)}</div>'
    return t.ROW.substitute(
        turn_id=escape(run.turn_id),
        created=_when(run.created_at),
        channel=escape(run.channel),
        channel_link=escape(_link(channel=run.channel)),
        character=_character_html(run, roles),
        scope=escape(run.scope_id or ""),
        scope_link=escape(_link(scope=run.scope_id or "")),
        status=escape(run.status),
        reason=reason,
        stages=f"{len(view.stage_done_at)}/{len(STAGES)}",
        model=escape(run.llm_model or ""),
        latency=f"{run.llm_latency_ms:.0f}" if run.llm_latency_ms is not None else "",
        tokens=tokens,
        injected=_injected_html(view),
        memories=str(view.memory_count or ""),
        delivery=delivery,
    )


def _character_html(run: TurnRun, roles: dict[int, str]) -> str:
    if run.role_id is None:
        return escape(run.character_id or "")
    name = roles.get(run.role_id, "")
    label = f"{name} ({run.role_id})" if name else str(run.role_id)
    return f'<a href="{escape(_link(character=str(run.role_id)))}">{escape(label)}</a>'


@router.get("/runs/login", response_class=HTMLResponse)
def login_form(state: StateDep, next: str = "/runs") -> Response:
    """The token form (straight to the runs when reads are public)."""
    if state.settings.api_public_reads:
        return RedirectResponse(_safe_next(next), status_code=303)
    if not _token(state):
        return _closed(state)
    body = t.LOGIN.substitute(error="", next=escape(_safe_next(next)))
    return _page("log in", body, state)


@router.post("/runs/login", response_class=HTMLResponse)
async def login(request: Request, state: StateDep) -> Response:
    """Check the token; on success set the session cookie and go back to the runs."""
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    target = _safe_next((form.get("next") or ["/runs"])[0])
    expected = _token(state)
    if not expected:
        return (
            _closed(state)
            if not state.settings.api_public_reads
            else RedirectResponse(target, status_code=303)
        )
    client = request.client.host if request.client is not None else "unknown"
    try:
        if login_blocked(state, client):
            body = t.LOGIN.substitute(
                error='<p class="reason" id="login-error">Too many wrong tokens: wait.</p>',
                next=escape(target),
            )
            return _page("log in", body, state, status_code=429)
        if not token_matches(token, expected):
            record_failure(state, client)
            error = '<p class="reason" id="login-error">Wrong token.</p>'
            body = t.LOGIN.substitute(error=error, next=escape(target))
            return _page("log in", body, state, status_code=401)
        session_id = open_session(state, expected)
    except redis.RedisError:
        body = '<p class="reason" id="closed">Redis unavailable: sessions cannot be opened.</p>'
        return _page("unavailable", body, state, status_code=503)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        session_id,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/runs",
        max_age=SESSION_SECONDS,
    )
    return response


@router.post("/runs/logout")
def logout(request: Request, state: StateDep) -> Response:
    """End the session (deleted in Redis: the cookie no longer works) and forget the cookie."""
    cookie = request.cookies.get(COOKIE, "")
    if cookie:
        with suppress(redis.RedisError):  # else the session still expires on its own
            close_session(state, cookie)
    response = RedirectResponse("/runs/login", status_code=303)
    response.delete_cookie(COOKIE, path="/runs")
    return response


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request,
    state: StateDep,
    channel: str = "",
    character: str = "",
    scope: str = "",
    status: str = "",
    limit: int = 50,
) -> Response:
    """Recent turns, filtered."""
    if not authorized(request, state):
        return _to_login(request, state)
    limit = min(max(limit, 1), MAX_LIMIT)
    channel, character, scope, status = (v.strip() for v in (channel, character, scope, status))
    runs, notices = query_runs(
        state.engine, channel=channel, character=character, scope=scope, status=status, limit=limit
    )
    views = turn_inputs(state.engine, [r.turn_id for r in runs])
    roles = _roles(state.engine, {r.role_id for r in runs if r.role_id is not None})
    options = '<option value="">any</option>' + "".join(
        f'<option value="{s}"{" selected" if s == status else ""}>{s}</option>' for s in STATUSES
    )
    body = t.LIST.substitute(
        channel=escape(channel),
        character=escape(character),
        scope=escape(scope),
        status_options=options,
        limit=str(limit),
        notice="".join(f'<p class="reason notice">{escape(n)}</p>' for n in notices),
        count=f"{len(runs)} turn(s), newest first",
        rows="\n".join(_row(r, views[r.turn_id], roles) for r in runs),
    )
    return _page("runs", body, state)


@router.get("/runs/{turn_id}", response_class=HTMLResponse)
def run_page(turn_id: str, request: Request, state: StateDep) -> Response:
    """One turn: summary, stages with timings and executions, injected entries, memories."""
    if not authorized(request, state):
        return _to_login(request, state)
    with Session(state.engine) as s:
        run = s.get(TurnRun, turn_id)
    if run is None:
        body = f'<h1>No turn <span class="id">{escape(turn_id)}</span></h1>'
        return _page("not found", body, state, status_code=404)
    view = turn_inputs(state.engine, [turn_id])[turn_id]
    executions = store.stage_runs(state.engine, [turn_id])[turn_id]
    timings = stage_timings(run.started_at or run.created_at, view.stage_done_at)
    stage_rows = "\n".join(
        f'<tr data-stage="{stage}"><td>{stage}</td><td>{_when(view.stage_done_at.get(stage))}</td>'
        f"<td>{_seconds(timings.get(stage))}</td><td>{executions.get(stage, 0)}</td></tr>"
        for stage in STAGES
    )
    injected = "".join(
        f"<li><code>{escape(e['id'])}</code> {escape(e['name'])}</li>" for e in view.injected
    )
    memories = str(view.memory_count)
    if view.memories:
        memories += ": " + ", ".join(
            f"{escape(m['id'])} {escape(m['name'])}".strip() for m in view.memories
        )
    llm = (
        f"{run.llm_latency_ms:.0f} ms, {run.llm_attempts} attempt(s), tokens "
        f"{run.prompt_tokens or 0}+{run.completion_tokens or 0}"
        if run.llm_latency_ms is not None
        else f"{run.llm_attempts} attempt(s)"
    )
    delivery = escape(run.delivery_status or "nothing to send")
    if run.delivery_reason:
        delivery += f' <span class="reason">{escape(run.delivery_reason)}</span>'
    roles = _roles(state.engine, {run.role_id} if run.role_id is not None else set())
    body = t.DETAIL.substitute(
        turn_id=escape(run.turn_id),
        status=escape(run.status),
        reason=escape(run.reason or ""),
        channel=escape(run.channel),
        channel_link=escape(_link(channel=run.channel)),
        character=_character_html(run, roles),
        scope=escape(run.scope_id or ""),
        scope_link=escape(_link(scope=run.scope_id or "")),
        times=" · ".join(_when(m) for m in (run.created_at, run.started_at, run.finished_at)),
        model=escape(run.llm_model or ""),
        llm=escape(llm),
        delivery=delivery,
        stages=stage_rows,
        injected=(injected or '<li class="muted">none</li>') + _dropped_html(view),
        memories=memories,
    )
    return _page(f"turn {run.turn_id}", body, state)
