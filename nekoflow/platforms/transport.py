"""An httpx request error as a delivery outcome: not sent (retry) or maybe sent (unconfirmed).

A request that never left (no connection, a connect or pool timeout, DNS, a refused proxy) is
safe to send again: :class:`~nekoflow.delivery.base.RetryLater`. One that may have reached the
platform (a read or write timeout, the connection dropped while writing it or before the answer,
a malformed or undecodable answer) is :class:`~nekoflow.delivery.base.Unconfirmed`: the deliver
stage resends it only where the platform deduplicates or the operator chose at least once.
Reasons name the error class only (httpx messages may quote the URL, which can hold a token).
"""

from __future__ import annotations

import httpx

from nekoflow.delivery.base import RetryLater, Unconfirmed

#: Errors raised before any byte of the request reached the platform.
NOT_SENT: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
)


def request_failure(what: str, exc: httpx.HTTPError) -> RetryLater:
    """The delivery exception for ``exc`` raised by the request ``what`` ("telegram sendMessage",
    …): RetryLater when it surely did not go out, Unconfirmed for anything else."""
    name = type(exc).__name__
    if isinstance(exc, NOT_SENT):
        return RetryLater(f"{what}: not sent ({name})")
    return Unconfirmed(f"{what}: no answer ({name})")
