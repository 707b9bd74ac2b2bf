"""Exception handlers: every error leaves the API as ``{"success": false, "error", "detail"}``.

Mapping (never a 500 from user input):

* bad request bodies/params (FastAPI's own validation, a pydantic ``ValidationError`` or a nekoflow
  ``InputError`` raised inside a handler) → 422; ``detail`` is FastAPI's list of
  ``{"loc", "msg", "type"}`` naming each field, ``error`` one line that names them too;
* :class:`ApiError` (raised by the routers) → its own status: 404 unknown id, 409 conflict, 401,
  502/504 model failures, 503 missing configuration;
* a missing world book from the store → 404; an integrity clash in the database → 409; the
  database being unreachable → 503;
* anything else is a bug: logged with its traceback, answered with a bare 500.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import DataError, IntegrityError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from nekoflow.errors import ConfigError, InputError
from nekoflow.worldbook.errors import WorldBookDataError, WorldBookNotFoundError

log = logging.getLogger("nekoflow.api")

BODY_PARSE_ERROR = "There was an error parsing the body"
"""FastAPI's 400 detail for a body that is not JSON (answered as a 422 naming ``body``)."""


class ApiError(Exception):
    """An error with an HTTP status, raised by route handlers and dependencies."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


def not_found(what: str, ident: str, field: str) -> ApiError:
    """404 for an unknown id: ``world book 'x' not found``."""
    return ApiError(404, f"{what} {ident!r} not found", field=field)


def conflict(message: str, field: str | None = None) -> ApiError:
    """409 for a write that clashes with what is stored (e.g. an id already taken)."""
    return ApiError(409, message, field=field)


def error_body(message: str, detail: Any = None) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"success": False, "error": message, "detail": message if detail is None else detail}


def _json_safe(value: Any) -> Any:
    """Make pydantic error ``input``/``ctx`` values JSON-serialisable (they may hold exceptions)."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN / inf: not JSON
    if isinstance(value, str):  # a lone surrogate cannot be encoded: escape it
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, int | float | bool):
        return value
    return _json_safe(str(value))


def _loc_text(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie") and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts) or "body"


def _validation_response(
    errors: Sequence[Mapping[str, Any]], prefix: tuple[str, ...] = ()
) -> JSONResponse:
    detail = []
    for err in errors:
        item = {
            "loc": [*prefix, *err.get("loc", ())],
            "msg": str(err.get("msg", "")),
            "type": str(err.get("type", "value_error")),
        }
        if "input" in err and len(item["loc"]) > 1:  # a field's value, never the whole body
            item["input"] = _json_safe(err["input"])
        detail.append(item)
    summary = "; ".join(f"{_loc_text(d['loc'])}: {d['msg']}" for d in detail[:10])
    if len(detail) > 10:
        summary += f"; … ({len(detail) - 10} more)"
    return JSONResponse(status_code=422, content=error_body(f"invalid input: {summary}", detail))


async def _request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return _validation_response(exc.errors())


async def _pydantic_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return _validation_response(exc.errors(include_url=False), prefix=("body",))


async def _input_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InputError)
    field = exc.field or "body"
    loc = ["body"] if field == "body" else ["body", *field.split(".")]
    message = str(exc) if str(exc).startswith(field) else f"{field}: {exc}"
    detail = [{"loc": loc, "msg": str(exc), "type": "input_error"}]
    if isinstance(exc, WorldBookDataError):
        detail = [{"loc": loc, "msg": problem, "type": "input_error"} for problem in exc.problems]
    return JSONResponse(status_code=422, content=error_body(message, detail))


async def _book_not_found(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, WorldBookNotFoundError)
    return JSONResponse(status_code=404, content=error_body(str(exc)))


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(
        status_code=exc.status_code, content=error_body(exc.message), headers=exc.headers or None
    )


def allowed_methods(routes: Iterable[Any], path: str) -> set[str]:
    """The methods served at ``path`` by its most literal route template(s).

    Included routers are walked. ``/api/world-books/test-match`` is the POST-only template, not
    ``/{book_id}``: of the templates matching ``path``, those with the fewest parameters count.
    """
    found: dict[int, set[str]] = {}
    stack = list(routes)
    while stack:
        route = stack.pop()
        inner = getattr(route, "original_router", None)
        if inner is not None:
            stack.extend(inner.routes)
        elif getattr(route, "methods", None) and route.path_regex.match(path):
            found.setdefault(len(route.param_convertors), set()).update(route.methods)
    return found[min(found)] if found else set()


async def _http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 400 and message == BODY_PARSE_ERROR:  # not JSON at all: say which part
        detail = [{"loc": ["body"], "msg": "invalid JSON body", "type": "json_invalid"}]
        return JSONResponse(
            status_code=422, content=error_body("invalid input: body: invalid JSON", detail)
        )
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:  # Starlette's Allow names one route's methods, not the path's
        methods = allowed_methods(request.app.routes, request.url.path)
        if methods:
            headers["Allow"] = ", ".join(sorted(methods))
    return JSONResponse(
        status_code=exc.status_code,
        content=error_body(message, _json_safe(exc.detail)),
        headers=headers or None,
    )


async def _integrity_error(request: Request, exc: Exception) -> JSONResponse:
    log.warning("integrity error on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(
        status_code=409, content=error_body("the write conflicts with stored data (duplicate id?)")
    )


async def _data_error(request: Request, exc: Exception) -> JSONResponse:
    log.warning("database rejected a value on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(
        status_code=422, content=error_body("a value cannot be stored (out of range or invalid)")
    )


async def _database_down(request: Request, exc: Exception) -> JSONResponse:
    log.error("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(status_code=503, content=error_body("database unavailable"))


async def _config_error(request: Request, exc: Exception) -> JSONResponse:
    log.error("configuration error on %s %s: %s", request.method, request.url.path, exc)
    return JSONResponse(status_code=503, content=error_body(f"server misconfigured: {exc}"))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse(status_code=500, content=error_body("internal server error"))


def install_error_handlers(app: FastAPI) -> None:
    """Register every handler above on ``app`` (the most specific class wins)."""
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(ValidationError, _pydantic_validation)
    app.add_exception_handler(WorldBookNotFoundError, _book_not_found)
    app.add_exception_handler(InputError, _input_error)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_exception)
    app.add_exception_handler(IntegrityError, _integrity_error)
    app.add_exception_handler(DataError, _data_error)
    app.add_exception_handler(OperationalError, _database_down)
    app.add_exception_handler(ConfigError, _config_error)
    app.add_exception_handler(Exception, _unexpected)
