"""A Kineto trace's JSON read in batches of events, without a dict per event kept.

:func:`open_trace` reads the file (``.json`` or ``.json.gz``, within the bounds of
:mod:`tb_iotrace.base.limits`, as :func:`tb_iotrace.store.kineto.read_trace` does) and splits it with
msgspec: every top-level key but ``traceEvents`` goes to :attr:`TraceJson.header`, read by
the standard library's ``json`` (so its values are exactly what ``read_trace`` gives); the
events come :data:`BATCH` at a time, each batch decoded by msgspec into :class:`Event`
structs (the eight fields the conversion reads, ``args`` a dict) that live only as long as
their batch. A batch msgspec will not read as structs (an element that is not an object, a
lone surrogate escape, ``NaN``, a number past a double or an integer past 4,300 digits) is
read by ``json`` instead, with its semantics and errors, as a list of what ``json`` gives.
A document msgspec rejects as a whole is read by ``json`` whole, as ``read_trace`` reads it
(the same results and errors), except a truncated one: that is a one-line error at once.

Memory: the file's text (expanded, once), msgspec's slice per event (~60 bytes) and one
batch of structs; the caller's columns are the rest (see :mod:`tb_iotrace.store.kineto_columns`).
"""
from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from tb_iotrace.store import kineto_stream
from tb_iotrace.store.kineto import KinetoTraceError
from tb_iotrace.base.limits import LimitError, gunzip, json_loads, max_trace_bytes, read_limited

__all__ = ["BATCH", "Event", "TraceJson", "open_trace", "read_header"]

BATCH = 8192
_T = TypeVar("_T")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_UTF8_CHUNK = 1 << 24
_WHAT = "the trace's JSON"
_DEEP = f"{_WHAT} nests deeper than Python's recursion limit"


class Event(msgspec.Struct):
    """One trace event as msgspec reads it: absent fields are None, unknown ones ignored."""

    ph: Any = None
    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: Any = None


_EVENTS = msgspec.json.Decoder(list[Event])
_SLICES = msgspec.json.Decoder(list[msgspec.Raw])
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])


@dataclass
class TraceJson:
    """A trace split: ``header`` (every top-level key but ``traceEvents``, as ``json`` reads
    them), ``count`` (how many events) and :meth:`batches` (once)."""

    header: dict[str, Any]
    count: int
    path: str = ""
    _slices: list[Any] | None = None       # msgspec.Raw per event
    _events: list[Any] | None = None       # the fallback: json's whole list
    _bodies: list[bytes] | None = None     # read as a stream: each batch's text, a JSON list

    def batches(self) -> Iterator[list[Any]]:
        """The events, :data:`BATCH` at a time: :class:`Event` structs, or what ``json``
        reads (dicts, and anything else the list holds) for a batch msgspec rejects.
        KinetoTraceError (as :func:`open_trace`) for a batch over the bounds."""
        if self._events is not None:
            events, self._events = self._events, None
            if events:
                yield events
            return
        slices, self._slices = self._slices or [], None
        bodies, self._bodies = self._bodies, None
        if bodies is None:
            bodies = [b"[" + b",".join(slices[at:at + BATCH]) + b"]" for at in range(0, len(slices), BATCH)]
        for i in range(len(bodies)):
            body, bodies[i] = bodies[i], b""      # each batch's text freed once read
            try:
                got: list[Any] = _EVENTS.decode(body)
            except RecursionError:
                raise KinetoTraceError(f"{self.path}: {_DEEP}") from None
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                got = _guarded(self.path, lambda: json_loads(body, _WHAT))
            yield got


def _guarded(path: str, work: Callable[[], _T]) -> _T:
    """``work()``, its errors as read_trace words them: KinetoTraceError naming ``path``."""
    try:
        return work()
    except KinetoTraceError:
        raise
    except LimitError as exc:
        raise KinetoTraceError(f"{path}: {exc}") from None
    except (OSError, ValueError) as exc:   # UnicodeDecodeError, JSONDecodeError, broken gzip
        raise KinetoTraceError(f"{path}: not a readable Kineto trace ({type(exc).__name__}: {exc})") from None


def _read_text(path: str) -> bytes:
    limit = max_trace_bytes()
    with open(path, "rb") as fh:
        raw = read_limited(fh, limit, "the trace")
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, limit, "the trace")
    return raw


def _not_trace(path: str) -> KinetoTraceError:
    return KinetoTraceError(f"{path}: not a Kineto trace (no top-level 'traceEvents' list)")


def _utf8(raw: bytes) -> bool:
    """Whether ``raw`` is UTF-8 as ``json`` decodes it (surrogates let pass), checked a chunk at
    a time (no second copy of the text)."""
    dec = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    view = memoryview(raw)
    try:
        for at in range(0, len(raw), _UTF8_CHUNK):
            dec.decode(view[at:at + _UTF8_CHUNK], at + _UTF8_CHUNK >= len(raw))
    except UnicodeDecodeError:
        return False
    return True


def _split(raw: bytes, path: str) -> dict[str, Any] | None:
    """Top-level key -> its text (msgspec.Raw); None when msgspec rejects the document (then
    ``json`` reads it). KinetoTraceError at once for a truncated one."""
    try:
        return _TOP.decode(raw)
    except RecursionError:
        raise LimitError(_DEEP) from None
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as exc:
        # msgspec says "truncated" for a lone surrogate escape too, which json reads
        if "truncated" in str(exc) and raw.strip() and not _SURROGATE.search(raw):
            raise KinetoTraceError(f"{path}: not a readable Kineto trace (truncated: its JSON ends "
                                   f"after {len(raw)} bytes, before the document does)") from None
        return None


def _whole(raw: bytes, path: str) -> TraceJson:
    """The document as ``json`` reads it (read_trace's results and errors)."""
    data = json_loads(raw, _WHAT)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise _not_trace(path)
    events = data.pop("traceEvents")
    return TraceJson(header=data, count=len(events), path=path, _events=events)


def _open(path: str, header_only: bool) -> TraceJson:
    """Read as a stream (:mod:`tb_iotrace.store.kineto_stream`: memory follows the events' text,
    not the expanded file); what the stream does not follow is read whole."""
    try:
        with open(path, "rb") as fh:
            top, bodies, count = kineto_stream.split(fh, max_trace_bytes(), "the trace", BATCH, header_only)
    except kineto_stream.Unfollowed:
        return _open_whole(path, header_only)
    header = {k: json_loads(v, _WHAT) for k, v in top.items()}
    if header_only:
        return TraceJson(header=header, count=-1, path=path)
    return TraceJson(header=header, count=count, path=path, _bodies=bodies)


def _open_whole(path: str, header_only: bool) -> TraceJson:
    raw = _read_text(path)
    top = _split(raw, path) if _utf8(raw) else None    # not UTF-8: json says where, as it did
    if top is None:
        return _whole(raw, path)
    text = top.pop("traceEvents", None)
    header = {k: json_loads(bytes(v), _WHAT) for k, v in top.items()}
    if text is None or bytes(memoryview(text)[:1]) != b"[":
        raise _not_trace(path)
    if header_only:
        return TraceJson(header=header, count=-1, path=path)
    try:
        slices = _SLICES.decode(text)
    except RecursionError:
        raise LimitError(_DEEP) from None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _whole(raw, path)
    del top, text, raw     # the slices keep the text alive; nothing else does
    return TraceJson(header=header, count=len(slices), path=path, _slices=slices)


def open_trace(path: str | os.PathLike[str], *, header_only: bool = False) -> TraceJson:
    """The trace file at ``path`` split (see the module doc); KinetoTraceError, naming the
    file, when it is not a readable Kineto trace or is over the bounds of
    :mod:`tb_iotrace.base.limits` (the messages of :func:`tb_iotrace.store.kineto.read_trace`).
    ``header_only``: no events (``count`` -1), for the ``tb_iotrace`` record alone."""
    p = os.fspath(path)
    return _guarded(p, lambda: _open(p, header_only))


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Every top-level key of the trace but ``traceEvents`` (its ``tb_iotrace`` record,
    ``baseTimeNanoseconds``...): what :func:`tb_iotrace.store.kineto.read_trace` gives, without
    its events; KinetoTraceError as :func:`open_trace`."""
    return open_trace(path, header_only=True).header
