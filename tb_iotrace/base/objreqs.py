"""The object-storage requests a process made while it recorded (the HTTP hooks of
:mod:`tb_iotrace.recording.object_hooks` note them), kept for the windows and whole-run records
made meanwhile (:func:`between`). Pure: a list and a lock.

A request, as :func:`start` opens it and :func:`finish` completes it::

    {"object": "s3://bucket/key" | "gs://bucket/key" | "http://host:port/path",
     "service": "s3" | "gs" | "http", "bucket", "key",
     "op": "GET" | "PUT" | "HEAD" | "LIST" | "STAT" | "MPU" | "DELETE" | method,
     "range_start", "range_end"   (the Range header's first and last byte; -1: none / open end),
     "status"                     (HTTP status; 0: no answer, see "error"),
     "error"                      (the exception's class name when the request raised, else ""),
     "bytes"                      (body bytes received: the wire's, before decompression;
                                  for an upload, PUT/MPU/POST, the body sent; 0 for
                                  a multipart upload's create/complete/list/abort),
     "start_ns", "ttfb_ns", "end_ns"   (CLOCK_REALTIME: sent, answer's headers, body done),
     "tid", "pid", "client" ("urllib3" | "aiohttp"), "complete" (body read to its end)}

Nothing secret is in it: :func:`tb_iotrace.base.objnames.classify` keeps no query, user info or
header value. A request still open when a window takes its copy ends there (``complete``
false, ``end_ns`` the copy's time, ``bytes`` so far).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

MAX_REQUESTS = 200_000     # a process making more keeps its first ones and counts the rest

_lock = threading.Lock()
_reqs: list[dict[str, Any]] = []
_over = 0

__all__ = ["COLUMNS", "MAX_REQUESTS", "answered", "between", "dropped", "finish", "forget_before", "start"]

COLUMNS = ("object", "service", "bucket", "key", "op", "range_start", "range_end", "status", "error", "bytes",
           "start_ns", "ttfb_ns", "end_ns", "tid", "pid", "client", "complete")


def start(service: str, name: str, bucket: str, key: str, op: str, rng: tuple[int, int] | None,
          client: str) -> dict[str, Any] | None:
    """Open a request now, on this thread; None past :data:`MAX_REQUESTS`."""
    global _over
    req = {"object": name, "service": service, "bucket": bucket, "key": key, "op": op,
           "range_start": rng[0] if rng else -1, "range_end": rng[1] if rng else -1,
           "status": 0, "error": "", "bytes": 0, "start_ns": time.time_ns(), "ttfb_ns": 0, "end_ns": 0,
           "tid": threading.get_native_id(), "pid": os.getpid(), "client": client, "complete": False}
    with _lock:
        if len(_reqs) >= MAX_REQUESTS:
            _over += 1
            return None
        _reqs.append(req)
    return req


def answered(req: dict[str, Any] | None, status: int) -> None:
    """The answer's headers came (time to first byte)."""
    if req is not None and not req["ttfb_ns"]:
        req["ttfb_ns"] = time.time_ns()
        req["status"] = int(status)


def finish(req: dict[str, Any] | None, nbytes: int, error: str = "") -> None:
    """The body was read to its end (or the request failed: ``error``); once."""
    if req is None or req["end_ns"]:
        return
    now = time.time_ns()
    if not req.get("sent"):      # an upload's bytes are the body it sent, set when answered
        req["bytes"] = max(int(req["bytes"]), int(nbytes))
    if error:
        req["error"] = error
    if not req["ttfb_ns"]:
        req["ttfb_ns"] = now if not error else 0
    req["end_ns"] = now
    req["complete"] = not error


def between(start_ns: int, end_ns: int, now_ns: int | None = None) -> list[dict[str, Any]]:
    """Copies of the requests that overlap [start_ns, end_ns], oldest first; one still open
    ends at ``now_ns`` (default: now), not complete."""
    now = time.time_ns() if now_ns is None else now_ns
    out = []
    with _lock:
        reqs = list(_reqs)
    for r in reqs:
        end = r["end_ns"] or now
        if end >= start_ns and r["start_ns"] <= end_ns:
            c = dict(r)
            c["end_ns"] = end
            out.append(c)
    return out


def dropped() -> int:
    """Requests not kept past :data:`MAX_REQUESTS`."""
    return _over


def forget_before(ns: int) -> None:
    """Drop the finished requests that ended before ``ns`` (no live recording can want them)."""
    with _lock:
        _reqs[:] = [r for r in _reqs if not r["end_ns"] or r["end_ns"] >= ns]


def _forget() -> None:          # a forked child records its own requests, not its parent's
    global _lock, _over
    _lock = threading.Lock()
    _reqs.clear()
    _over = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
