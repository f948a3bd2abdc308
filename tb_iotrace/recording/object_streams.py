"""Object reads whose bytes pass through neither urllib3 nor aiohttp, noted into
:mod:`tb_iotrace.base.objreqs` as :mod:`tb_iotrace.recording.object_hooks` notes the others
(which installs these with its own and takes them out with its own):

- **WebDataset's pipes** (``webdataset.gopen.Pipe``): an ``http(s)://`` shard is fetched by a
  ``curl`` child, a ``gs://`` one by ``gsutil``, a ``pipe:`` URL by any command (``aws s3 cp
  s3://... -``, ``curl URL``). The shim is not in those children (they are not Python); the
  job reads the bytes from the pipe. A pipe opened for reading whose command names an object URL
  is one GET: from the pipe's start to its end of file, its bytes as the job read them, the
  first byte at the first read that returned any. Closed before its end: not complete. A
  command that fails (the pipe raises) is an error.
- **s3torchconnector** (``S3Client._get_object_stream`` and ``head_object``): AWS's CRT client,
  in Rust, below Python (the shim sees its sockets as an endpoint, not its objects). One stream
  is one GET (ranged when the reader asks for a range): the first chunk is its first byte, the
  stream's end its end; a ``head_object`` is a HEAD.
"""
from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable

from tb_iotrace.base import objreqs
from tb_iotrace.base.objnames import classify

__all__ = ["INSTALLERS", "url_in"]

Patch = Callable[[Any, str, Callable[[Any], Any]], None]
Active = Callable[[], bool]

_URL = re.compile(r"\b(?:https?|s3|gs|gcs)://[^\s'\"|;&<>]+")


def url_in(args: Any) -> str | None:
    """The first object URL in a command (a list of arguments or a shell line)."""
    text = " ".join(map(str, args)) if isinstance(args, (list, tuple)) else str(args or "")
    m = _URL.search(text)
    return m.group(0) if m else None


def _start(url: str, op: str, rng: tuple[int, int] | None, client: str, t0: int) -> dict[str, Any] | None:
    scheme, _, rest = url.partition("://")
    if scheme in ("s3", "gs", "gcs"):
        bucket, _, key = rest.partition("/")
        service = "gs" if scheme != "s3" else "s3"
        req = objreqs.start(service, f"{service}://{bucket}/{key}", bucket, key, op, rng, client)
    else:
        n = classify(op, url)
        req = objreqs.start(n.service, n.name, n.bucket, n.key, op if op == "HEAD" else n.op, rng, client)
    if req is not None:
        req["start_ns"] = t0
    return req


def _got(req: dict[str, Any], n: int) -> None:
    if n and not req["ttfb_ns"]:
        objreqs.answered(req, 200)
    req["bytes"] += n


def _end(req: dict[str, Any] | None, complete: bool, error: str = "") -> None:
    if req is None or req["end_ns"]:
        return
    objreqs.finish(req, int(req["bytes"]), error)
    if not complete and not error:
        req["complete"] = False


# -- WebDataset ---------------------------------------------------------------------------------

def _pipe_init(active: Active) -> Callable[[Any], Any]:
    def make(orig: Any) -> Any:
        def __init__(self: Any, *args: Any, **kw: Any) -> None:
            t0 = time.time_ns()
            orig(self, *args, **kw)
            if not active():
                return
            try:
                mode = kw.get("mode") or "r"
                url = url_in(args[0] if args else None)
                if str(mode).startswith("r") and url:
                    self._tbio_req = _start(url, "GET", None, "webdataset", t0)
            except Exception:
                pass

        __init__._tbio_wrapper = True     # type: ignore[attr-defined]
        return __init__
    return make


def _pipe_read(orig: Any) -> Any:
    def read(self: Any, *args: Any, **kw: Any) -> Any:
        req = self.__dict__.get("_tbio_req")
        if req is None:
            return orig(self, *args, **kw)
        try:
            data = orig(self, *args, **kw)
        except BaseException as exc:
            _end(req, False, type(exc).__name__)
            raise
        try:
            n = len(data)
            _got(req, n)
            size = args[0] if args else kw.get("size", -1)
            if not n and size != 0:       # nothing for a read that asked for something: end of file
                _end(req, True)
        except Exception:
            pass
        return data

    read._tbio_wrapper = True     # type: ignore[attr-defined]
    return read


def _pipe_close(orig: Any) -> Any:
    def close(self: Any, *args: Any, **kw: Any) -> Any:
        req = self.__dict__.get("_tbio_req")
        try:
            return orig(self, *args, **kw)
        except BaseException as exc:
            _end(req, False, type(exc).__name__)
            raise
        finally:
            _end(req, False)

    close._tbio_wrapper = True     # type: ignore[attr-defined]
    return close


def install_webdataset(patch: Patch, active: Active) -> None:
    gopen = sys.modules.get("webdataset.gopen")
    pipe = getattr(gopen, "Pipe", None)
    if pipe is None:
        return
    patch(pipe, "__init__", _pipe_init(active))
    patch(pipe, "read", _pipe_read)
    patch(pipe, "close", _pipe_close)


# -- s3torchconnector ---------------------------------------------------------------------------

class _CountedStream:
    """The CRT's stream of chunks, counted on its way to the reader; anything else forwarded."""

    def __init__(self, stream: Any, req: dict[str, Any] | None) -> None:
        self._tbio_stream = stream
        self._tbio_req = req

    def __iter__(self) -> "_CountedStream":
        return self

    def __next__(self) -> Any:
        req = self._tbio_req
        try:
            chunk = next(self._tbio_stream)
        except StopIteration:
            _end(req, True)
            raise
        except BaseException as exc:
            _end(req, False, type(exc).__name__)
            raise
        if req is not None:
            try:
                _got(req, len(chunk))
            except Exception:
                pass
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tbio_stream, name)


def _range(start: int | None, end: int | None) -> tuple[int, int] | None:
    if start is None and end is None:
        return None
    return (int(start or 0), int(end) - 1 if end is not None else -1)     # end: exclusive


def _get_stream(active: Active) -> Callable[[Any], Any]:
    def make(orig: Any) -> Any:
        def _get_object_stream(self: Any, bucket: str, key: str, start: int | None = None,
                               end: int | None = None) -> Any:
            if not active():
                return orig(self, bucket, key, start, end)
            t0 = time.time_ns()
            try:
                stream = orig(self, bucket, key, start, end)
            except BaseException as exc:
                try:
                    _end(_start(f"s3://{bucket}/{key}", "GET", _range(start, end), "s3torchconnector", t0), False,
                         type(exc).__name__)
                except Exception:
                    pass
                raise
            try:
                req = _start(f"s3://{bucket}/{key}", "GET", _range(start, end), "s3torchconnector", t0)
            except Exception:
                return stream
            return _CountedStream(stream, req)

        _get_object_stream._tbio_wrapper = True     # type: ignore[attr-defined]
        return _get_object_stream
    return make


def _head(active: Active) -> Callable[[Any], Any]:
    def make(orig: Any) -> Any:
        def head_object(self: Any, bucket: str, key: str) -> Any:
            if not active():
                return orig(self, bucket, key)
            t0 = time.time_ns()
            error = ""
            try:
                return orig(self, bucket, key)
            except BaseException as exc:
                error = type(exc).__name__
                raise
            finally:
                try:
                    req = _start(f"s3://{bucket}/{key}", "HEAD", None, "s3torchconnector", t0)
                    if req is not None and not error:
                        objreqs.answered(req, 200)
                    _end(req, True, error)
                except Exception:
                    pass

        head_object._tbio_wrapper = True     # type: ignore[attr-defined]
        return head_object
    return make


def install_s3torchconnector(patch: Patch, active: Active) -> None:
    mod = sys.modules.get("s3torchconnector._s3client._s3client")
    client = getattr(mod, "S3Client", None)
    if client is None:
        return
    patch(client, "_get_object_stream", _get_stream(active))
    patch(client, "head_object", _head(active))


# module whose import installs them -> installer
INSTALLERS: tuple[tuple[str, Callable[[Patch, Active], None]], ...] = (
    ("webdataset", install_webdataset), ("s3torchconnector", install_s3torchconnector))
