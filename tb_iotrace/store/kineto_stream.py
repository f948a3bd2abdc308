"""A Kineto trace file split while it is unpacked: its events a batch at a time, never the
whole text in memory.

:func:`split` reads the file (gunzipped on the fly) in chunks of :data:`CHUNK` bytes and keeps
only the text of each event (each ``traceEvents`` element, from its ``{`` to its ``}``) and of
the other top-level values: whitespace between them, however much of it, is read and dropped.
What it keeps is the events' text in batches of ``batch`` events (each batch checked by msgspec
as the whole list was), so memory follows what the trace holds: a gzip of 2 GiB of whitespace
costs a chunk, a real trace its events' text. The expanded size still counts against
``TBIO_MAX_TRACE_BYTES`` as it did (the same error). Anything this splitter does not follow
(text that is not UTF-8, a syntax error, a truncated file, a second ``traceEvents``, an event
over :data:`MAX_EVENT_BYTES`) raises :class:`Unfollowed`: the caller reads the file whole
instead, with its exact results and errors.
"""
from __future__ import annotations

import codecs
import gzip
import re
import zlib
from typing import Any, BinaryIO

import msgspec

from tb_iotrace.base.limits import too_big

CHUNK = 1 << 20
MAX_EVENT_BYTES = 64 << 20
_WS = re.compile(rb"[ \t\n\r]*")
# (possessive: the alternatives start with different characters, nothing to try again)
_STR = rb'"(?:[^"\\\x00-\x1f]++|\\.)*+"'
_FLAT = rb'\{(?:[^{}"]++|' + _STR + rb')*+\}'
_L2 = rb'\{(?:[^{}"]++|' + _STR + rb'|' + _FLAT + rb')*+\}'
# an object nested at most three deep (a Kineto event and its args): one C-level match per event
_EVENT = re.compile(rb'\{(?:[^{}"]++|' + _STR + rb'|' + _L2 + rb')*+\}')
_STRING = re.compile(_STR)
_RUN = re.compile(rb'(?:[^\[\]{}"]++|"(?:[^"\\]++|\\.)*+")*+')
_SCALAR = re.compile(rb'[^ \t\n\r,\]}]*+')
_SLICES = msgspec.json.Decoder(list[msgspec.Raw])
_RAW = msgspec.json.Decoder(msgspec.Raw)


class Unfollowed(Exception):
    """The text is not what this splitter follows: read the file whole instead."""


class _Text:
    """The file's (expanded) text as a window that moves forward."""

    def __init__(self, fh: BinaryIO, limit: int, what: str) -> None:
        head = fh.read(2)
        if head == b"\x1f\x8b":
            fh.seek(0)
        self.fh: Any = gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh
        self.data = b"" if head == b"\x1f\x8b" else head
        self.total = len(self.data)
        self.pos = 0
        self.eof = False
        self.limit, self.what = limit, what
        self.utf8 = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        self._check(self.data)

    def _check(self, chunk: bytes) -> None:
        try:
            self.utf8.decode(chunk, False)
        except UnicodeDecodeError:
            raise Unfollowed from None

    def more(self) -> bool:
        """Another chunk after what is left unread; False at the end."""
        if self.eof:
            return False
        try:
            chunk = self.fh.read(CHUNK)
        except (OSError, EOFError, zlib.error):
            raise Unfollowed from None     # a broken gzip: the whole read says how
        if not chunk:
            self.eof = True
            try:
                self.utf8.decode(b"", True)
            except UnicodeDecodeError:
                raise Unfollowed from None
            return False
        self.total += len(chunk)
        if self.total > self.limit:
            raise too_big(self.what, f"more than {self.limit}", self.limit)
        self._check(chunk)
        rest = len(self.data) - self.pos
        if rest > MAX_EVENT_BYTES:
            raise Unfollowed
        self.data = self.data[self.pos:] + chunk if rest else chunk
        self.pos = 0
        return True

    def skip_ws(self) -> None:
        while True:
            self.pos = _WS.match(self.data, self.pos).end()
            if self.pos < len(self.data) or not self.more():
                return

    def peek(self) -> bytes:
        self.skip_ws()
        return self.data[self.pos:self.pos + 1]

    def expect(self, char: bytes) -> None:
        if self.peek() != char:
            raise Unfollowed
        self.pos += 1

    def string(self) -> bytes:
        while True:
            m = _STRING.match(self.data, self.pos)
            if m:
                self.pos = m.end()
                return m.group()
            if not self.more():
                raise Unfollowed

    def value(self) -> bytes:
        """The text of the JSON value that starts here (checked later by msgspec)."""
        self.skip_ws()
        first = self.data[self.pos:self.pos + 1]
        if first == b'"':
            return self.string()
        if first not in (b"{", b"["):
            return self._scalar()
        if first == b"{":
            m = _EVENT.match(self.data, self.pos)
            if m:
                self.pos = m.end()
                return m.group()
        # deeper, or cut by the end of the window: bracket to bracket (a run of anything else,
        # strings whole, is one match)
        start, at, depth = self.pos, self.pos, 0
        while True:
            at = _RUN.match(self.data, at).end()
            char = self.data[at:at + 1]
            if char in (b"", b'"'):        # the window ends inside a run or a string
                keep = at - start
                self.pos = start
                if not self.more():
                    raise Unfollowed
                start, at = self.pos, self.pos + keep
                continue
            at += 1
            depth += 1 if char in (b"[", b"{") else -1
            if depth == 0:
                break
            if depth < 0:
                raise Unfollowed
        self.pos = at
        return self.data[start:at]

    def _scalar(self) -> bytes:
        while True:
            m = _SCALAR.match(self.data, self.pos)
            if m and (m.end() < len(self.data) or self.eof):
                if not m.group():
                    raise Unfollowed
                self.pos = m.end()
                return m.group()
            if not self.more():
                raise Unfollowed


def split(fh: BinaryIO, limit: int, what: str, batch: int, header_only: bool = False
          ) -> tuple[dict[str, bytes], list[bytes], int]:
    """(the top-level values but ``traceEvents``, as text; the events, each batch as the text of
    a JSON list; how many events). :class:`Unfollowed` (see the module doc); LimitError past
    ``limit`` expanded bytes."""
    t = _Text(fh, limit, what)
    header: dict[str, bytes] = {}
    batches: list[bytes] = []
    count, seen = 0, False
    t.expect(b"{")
    if t.peek() == b"}":
        raise Unfollowed          # no traceEvents: the whole read says so
    while True:
        if t.peek() != b'"':
            raise Unfollowed
        try:
            key = msgspec.json.decode(t.string())
        except msgspec.DecodeError:
            raise Unfollowed from None
        t.expect(b":")
        if key == "traceEvents":
            if seen:
                raise Unfollowed
            seen = True
            t.expect(b"[")
            pending: list[bytes] = []
            if t.peek() == b"]":
                t.pos += 1
            else:
                while True:
                    pending.append(t.value())
                    count += 1
                    if len(pending) >= batch:
                        body = _checked(pending)
                        if not header_only:
                            batches.append(body)
                        pending = []
                    nxt = t.peek()
                    t.pos += 1
                    if nxt == b"]":
                        break
                    if nxt != b",":
                        raise Unfollowed
            if pending:
                body = _checked(pending)
                if not header_only:
                    batches.append(body)
        else:
            raw = t.value()
            try:
                _RAW.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                raise Unfollowed from None
            header[key] = raw
        nxt = t.peek()
        t.pos += 1
        if nxt == b"}":
            break
        if nxt != b",":
            raise Unfollowed
    if t.peek() != b"" or not t.eof:   # nothing but whitespace after the document
        raise Unfollowed
    if not seen:
        raise Unfollowed
    return header, batches, count


def _checked(events: list[bytes]) -> bytes:
    body = b"[" + b",".join(events) + b"]"
    try:
        _SLICES.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise Unfollowed from None
    return body


__all__ = ["CHUNK", "MAX_EVENT_BYTES", "Unfollowed", "split"]
