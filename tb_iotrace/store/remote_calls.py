"""Calls to a storage server that end in a bounded time, whatever the server does.

A bucket endpoint that accepts the connection and never answers (or sends its headers and half
a body) held ``report s3://...`` for 427 s: the clients retry each request several times with
long timeouts and back-off. Here every call has a deadline (:func:`deadline`):
``TBIO_REMOTE_TIMEOUT_S`` seconds (default :data:`DEFAULT_TIMEOUT_S`), plus one second per
:data:`MIN_RATE` bytes of a transfer (a large capture at a slow but working link is not cut
off), enforced around the whole call with its retries (fsspec's asynchronous clients cancel
the call at the deadline); the clients' own timeouts and retries are set within it
(:func:`storage_options`) so a request that stalls is retried once, not five times.
"""
from __future__ import annotations

import os
from typing import Any

ENV_TIMEOUT = "TBIO_REMOTE_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 20.0
MIN_RATE = 1 << 20          # bytes per second a transfer is allowed at the least
CONNECT_TIMEOUT_S = 5.0


class CallTimeout(TimeoutError):
    """A call to the storage server passed its deadline."""


def timeout_s() -> float:
    """The deadline of a call without a transfer (``TBIO_REMOTE_TIMEOUT_S``)."""
    try:
        got = float(os.environ.get(ENV_TIMEOUT, DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return got if 0 < got < 86400 else DEFAULT_TIMEOUT_S


def deadline(nbytes: int = 0) -> float:
    return timeout_s() + max(0, nbytes) / MIN_RATE


def storage_options(scheme: str) -> dict[str, Any]:
    """The client options that keep one request's time within the deadline."""
    t = timeout_s()
    if scheme in ("s3", "s3a"):
        return {"config_kwargs": {"connect_timeout": min(CONNECT_TIMEOUT_S, t), "read_timeout": t,
                                  "retries": {"max_attempts": 2, "mode": "standard"}}}
    if scheme in ("gs", "gcs"):
        return {"requests_timeout": t, "timeout": t}
    return {}


def call(fs: Any, method: str, *args: Any, nbytes: int = 0, **kwargs: Any) -> Any:
    """``fs.<method>(*args, **kwargs)`` within :func:`deadline` (``nbytes``: what it transfers);
    :class:`CallTimeout` past it. Filesystems that are not asynchronous (local, memory) are
    called as they are."""
    try:
        from fsspec.asyn import AsyncFileSystem
        from fsspec.exceptions import FSTimeoutError
    except ImportError:     # (no fsspec: filesystem() said so before)
        return getattr(fs, method)(*args, **kwargs)
    if not isinstance(fs, AsyncFileSystem) or getattr(fs, "asynchronous", False):
        return getattr(fs, method)(*args, **kwargs)
    limit = deadline(nbytes)
    try:
        return getattr(fs, method)(*args, timeout=limit, **kwargs)
    except FSTimeoutError:
        raise CallTimeout(f"the storage server did not answer within {limit:.0f} s "
                          f"({ENV_TIMEOUT}={timeout_s():g})") from None


__all__ = ["CallTimeout", "DEFAULT_TIMEOUT_S", "ENV_TIMEOUT", "call", "deadline", "storage_options", "timeout_s"]
