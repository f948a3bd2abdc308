"""Object-storage requests from the Python clients, noted into :mod:`tb_iotrace.base.objreqs`
while a recording is live (:func:`acquire` at a session's start, :func:`release` at its end;
the last release removes the hooks and frees the notes).

Two funnels carry the requests of every client people use (docs/objects.md):

- **urllib3** (``HTTPConnectionPool.urlopen``): botocore (boto3), requests, and through
  requests google-cloud-storage and most HTTP data loaders (WebDataset, LitData, Streaming).
  One call is one attempt (botocore and requests turn urllib3's own retries off; a retry
  urllib3 makes inside is noted by the innermost call). The answer's headers are the first
  byte; the body is done when urllib3 hands the connection back (``release_conn``, which it
  calls itself when the body is exhausted) or the response is closed; its bytes are
  ``HTTPResponse.tell()`` (the wire's).
- **aiohttp** (``ClientSession._request``): aiobotocore (s3fs), gcsfs, fsspec's HTTP
  filesystem. The answer's headers are the first byte; the body is done at the stream's end of
  file (``StreamReader.on_eof``, aiohttp's own callback) with ``StreamReader.total_bytes``.

Clients whose bytes pass through neither (WebDataset's curl pipes, s3torchconnector's CRT
client) are noted by :mod:`tb_iotrace.recording.object_streams`, installed and taken out here.

Why not the clients' own event hooks: botocore's event emitter is copied into each client when
the client is made, and aiohttp's ``trace_configs`` are fixed when a session is made; a
training job makes its clients in the dataset's ``__init__``, long before a profile window
starts (and a forked DataLoader worker inherits them), so a hook registered at the window's
start never sees them. One wrapper on the class of each funnel sees every client, whenever it
was made; it is installed only while recording and put back after (idle: no wrapper at all).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from functools import partial
from typing import Any

from tb_iotrace.base import objreqs
from tb_iotrace.base.objnames import classify, parse_range
from tb_iotrace.recording import object_streams
from tb_iotrace.recording.importhook import call_after_import

__all__ = ["acquire", "active", "release"]

_lock = threading.Lock()
_users = 0
_patched: dict[tuple[Any, str], Any] = {}     # (class, attribute) -> the original
_waiting: set[str] = set()                   # modules whose import will install the hooks


def active() -> bool:
    return _users > 0


def _text(v: Any) -> str:
    return v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v)


def _headers_of(headers: Any) -> dict[str, str]:
    """Header names and values as text (botocore's values are bytes)."""
    try:
        return {_text(k): _text(v) for k, v in (headers.items() if headers is not None else ())}
    except Exception:
        return {}


def _range_of(headers: dict[str, str]) -> tuple[int, int] | None:
    for k, v in headers.items():
        if k.lower() == "range":
            return parse_range(v)
    return None


UPLOADS = frozenset(("PUT", "MPU", "POST"))


def _sent(body: Any, headers: dict[str, str]) -> int:
    """The request body's bytes: its ``Content-Length`` (what went on the wire), else the
    length of a body given whole; a stream of unknown length counts 0."""
    for k, v in headers.items():
        if k.lower() == "content-length":
            try:
                return max(0, int(v))
            except ValueError:
                break
    if isinstance(body, (bytes, bytearray, memoryview)):
        return memoryview(body).nbytes
    if isinstance(body, str):
        return len(body.encode("utf-8"))
    return 0


def _upload_done(req: dict[str, Any] | None, method: str, body: Any, headers: dict[str, str]) -> None:
    """An upload's bytes are the body it sent, never the answer's: a PUT's (multipart parts
    too) or a plain POST's; a multipart upload's other requests (create, complete, list parts,
    abort) move no object bytes: 0."""
    if req is None or req["op"] not in UPLOADS:
        return
    m = method.upper()
    data = m == "PUT" or (m == "POST" and req["op"] != "MPU")
    req["bytes"] = _sent(body, headers) if data else 0
    req["sent"] = True          # objreqs.finish leaves the bytes as they are


def _open(method: str, url: str, headers: dict[str, str], client: str, start_ns: int) -> dict[str, Any] | None:
    n = classify(method, url, headers)
    req = objreqs.start(n.service, n.name, n.bucket, n.key, n.op, _range_of(headers), client)
    if req is not None:
        req["start_ns"] = start_ns
    return req


# -- urllib3 ------------------------------------------------------------------------------------

def _pool_url(pool: Any, url: str) -> str:
    if url.startswith(("http://", "https://")):
        return url
    port = getattr(pool, "port", None)
    host = f"{pool.host}:{port}" if port else str(pool.host)
    return f"{pool.scheme}://{host}{url}"


def _urlopen_wrapper(orig: Any) -> Any:
    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if not _users:
            return orig(self, method, url, *args, **kwargs)
        t0 = time.time_ns()
        try:
            resp = orig(self, method, url, *args, **kwargs)
        except BaseException as exc:
            if not getattr(exc, "_tbio_noted", False):
                try:
                    hdrs = _headers_of(kwargs.get("headers", args[1] if len(args) > 1 else None))
                    req = _open(method, _pool_url(self, url), hdrs, "urllib3", t0)
                    objreqs.finish(req, 0, type(exc).__name__)
                    exc._tbio_noted = True   # type: ignore[attr-defined]
                except Exception:
                    pass
            raise
        try:
            if getattr(resp, "_tbio_req", None) is None:        # an inner call (a retry) noted it
                hdrs = _headers_of(kwargs.get("headers", args[1] if len(args) > 1 else None))
                req = _open(method, _pool_url(self, url), hdrs, "urllib3", t0)
                objreqs.answered(req, int(getattr(resp, "status", 0) or 0))
                _upload_done(req, method, kwargs.get("body", args[0] if args else None), hdrs)
                resp._tbio_req = req
                if (kwargs.get("preload_content", True) or method.upper() == "HEAD"
                        or getattr(resp, "length_remaining", None) == 0):
                    objreqs.finish(req, _told(resp))
        except Exception:
            pass
        return resp

    urlopen._tbio_wrapper = True      # type: ignore[attr-defined]
    return urlopen


def _told(resp: Any) -> int:
    try:
        return int(resp.tell())
    except Exception:
        return 0


def _body_bytes(resp: Any) -> int:
    """The body's wire bytes as urllib3 hands the connection back: it does so from inside its
    last read, before it counts that read's bytes; the body ran to its end (the socket's file
    closed), so a known length is exact, else what it counted."""
    told = _told(resp)
    try:
        if resp.isclosed():
            length = int(resp.headers.get("Content-Length", -1))
            if length >= told:
                return length
    except Exception:
        pass
    return told


def _done_wrapper(orig: Any) -> Any:
    def done(self: Any, *args: Any, **kwargs: Any) -> Any:
        req = getattr(self, "_tbio_req", None)
        if req is not None and not req["end_ns"]:
            objreqs.finish(req, _body_bytes(self))
        return orig(self, *args, **kwargs)

    done._tbio_wrapper = True         # type: ignore[attr-defined]
    return done


def _install_urllib3() -> None:
    cp = sys.modules.get("urllib3.connectionpool")
    resp = sys.modules.get("urllib3.response")
    if cp is None or resp is None:
        return
    _patch(cp.HTTPConnectionPool, "urlopen", _urlopen_wrapper)
    for name in ("release_conn", "close"):
        _patch(resp.HTTPResponse, name, _done_wrapper)


# -- aiohttp ------------------------------------------------------------------------------------

def _request_wrapper(orig: Any) -> Any:
    async def _request(self: Any, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        if not _users:
            return await orig(self, method, str_or_url, *args, **kwargs)
        t0 = time.time_ns()
        try:
            resp = await orig(self, method, str_or_url, *args, **kwargs)
        except BaseException as exc:
            try:
                req = _open(method, str(str_or_url), _headers_of(kwargs.get("headers")), "aiohttp", t0)
                objreqs.finish(req, 0, type(exc).__name__)
            except Exception:
                pass
            raise
        try:
            hdrs = _headers_of(getattr(getattr(resp, "request_info", None), "headers", None)
                               or kwargs.get("headers"))
            req = _open(method, str(resp.url), hdrs, "aiohttp", t0)
            objreqs.answered(req, int(resp.status))
            _upload_done(req, method, kwargs.get("data"), hdrs)
            content = resp.content
            content.on_eof(lambda: objreqs.finish(req, int(getattr(content, "total_bytes", 0) or 0)))
        except Exception:
            pass
        return resp

    _request._tbio_wrapper = True     # type: ignore[attr-defined]
    return _request


def _install_aiohttp() -> None:
    client = sys.modules.get("aiohttp.client")
    if client is not None:
        _patch(client.ClientSession, "_request", _request_wrapper)


# -- installing ---------------------------------------------------------------------------------

def _patch(cls: Any, name: str, make: Any) -> None:
    if (cls, name) in _patched:
        return
    orig = cls.__dict__.get(name)
    if orig is None or getattr(orig, "_tbio_wrapper", False):
        return
    _patched[(cls, name)] = orig
    setattr(cls, name, make(orig))


# module whose import installs the hooks -> how; then the clients whose bytes pass elsewhere
_FUNNELS = (("urllib3", _install_urllib3), ("aiohttp", _install_aiohttp)) + tuple(
    (module, partial(install, _patch, active)) for module, install in object_streams.INSTALLERS)


def _install_when_imported(module: str, install: Any) -> None:
    def later() -> None:
        _waiting.discard(module)
        with _lock:
            if _users:
                install()

    if module in sys.modules:
        install()
    elif module not in _waiting:
        _waiting.add(module)
        call_after_import(module, later)


def acquire() -> None:
    """A recording starts: install the hooks (the first one), or count it."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        for module, install in _FUNNELS:
            try:
                if module in sys.modules:
                    install()
            except Exception:
                pass
    for module, install in _FUNNELS:
        if module not in sys.modules:
            _install_when_imported(module, install)


def release() -> None:
    """A recording ended: the last one puts the clients' methods back and frees the notes."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users:
            return
        _unpatch()
        objreqs.forget_before(time.time_ns() + 1)


def _unpatch() -> None:
    for (cls, name), orig in list(_patched.items()):
        cur = cls.__dict__.get(name)
        if getattr(cur, "_tbio_wrapper", False):       # a wrapper made on top of ours stays; ours is idle
            setattr(cls, name, orig)
            del _patched[(cls, name)]


def _after_fork() -> None:     # the child begins its own recordings (the shim dropped the parent's)
    global _users, _lock
    _lock = threading.Lock()
    _users = 0
    try:
        _unpatch()
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
