"""The XEvent rows of the I/O lines, written column-wise: one event per I/O call with its stats
(:class:`EventColumns` in, serialized ``XLine.events`` bytes out), by the compiled codec
(native/codec/encode.c) where it is built, else by NumPy; both write the same bytes
(tests/unit/test_event_rows.py). :mod:`.encode` builds the lines and the record around them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.store.codecs import codec
from tb_iotrace.store.xplane import wire
from tb_iotrace.store.xplane.io_fields import STAT_ABSENT
from tb_iotrace.store.xplane.schema import EVENT_STATS, STAT_ERRNO, STAT_FD, STAT_OFFSET, STAT_PATH, STAT_REQUESTED, STAT_RETURNED

def _int_stat(rows: wire.Rows, sid: int, value_field: int, values: np.ndarray, present=None) -> None:
    """Append an XEvent.stats entry (field 4) ``XStat{metadata_id: sid, <value_field>: value}``
    to each row (where ``present``)."""
    head = wire.tag(1, wire.WT_VARINT) + wire.varint_bytes(sid) + wire.tag(value_field, wire.WT_VARINT)
    mat, lengths = wire.varint_matrix(values)
    size = (lengths + len(head)).astype(np.uint8)  # < 128: a one-byte varint
    rows.const(wire.tag(4, wire.WT_LEN), present)
    rows.parts.append((size[:, None], rows._present(np.ones(len(size), dtype=np.int64), present)))
    rows.const(head, present)
    rows.parts.append((mat, rows._present(lengths, present)))


# column -> its "absent" value: a stat left out of an event where it is this, read back as it
# (the one convention of io_fields)
_OPTIONAL = {"path_ref": STAT_ABSENT[STAT_PATH], "offset": STAT_ABSENT[STAT_OFFSET], "fd": STAT_ABSENT[STAT_FD],
             "errno": STAT_ABSENT[STAT_ERRNO]}


@dataclass
class EventColumns:
    """The I/O events of the lines being written, in file order, as int64 columns.

    ``path_ref`` is the XStatMetadata id of the interned path (0: none); ``offset``/``fd``
    are -1 and ``errno`` 0 when absent. Those four may be None: absent on every event."""

    metadata_id: np.ndarray
    offset_ps: np.ndarray
    duration_ps: np.ndarray
    path_ref: np.ndarray | None
    offset: np.ndarray | None
    requested: np.ndarray
    returned: np.ndarray
    fd: np.ndarray | None
    errno: np.ndarray | None

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                setattr(self, name, np.ascontiguousarray(value, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.metadata_id)

    def slice(self, a: int, b: int) -> "EventColumns":
        return EventColumns(*(None if getattr(self, name) is None else getattr(self, name)[a:b]
                              for name in self.__dataclass_fields__))

    def column(self, name: str) -> np.ndarray:
        """A column, the "absent" value repeated where it is None."""
        value = getattr(self, name)
        return np.full(len(self), _OPTIONAL[name], dtype=np.int64) if value is None else value


@dataclass
class KindValues:
    """bytes_requested / bytes_returned of each event kind (XEventMetadata ids ``base``,
    ``base + 1``...): events of a kind leave out the stats equal to these."""

    base: int
    requested: np.ndarray
    returned: np.ndarray

    def __post_init__(self) -> None:
        self.requested = np.ascontiguousarray(self.requested, dtype=np.int64)
        self.returned = np.ascontiguousarray(self.returned, dtype=np.int64)


def _byte_stats_present(ev: EventColumns, kinds: KindValues | None) -> tuple[np.ndarray, np.ndarray | None]:
    """(bytes_requested written?, bytes_returned written? or None: always) per event."""
    if kinds is None or not len(kinds.requested):
        return ev.requested != ev.returned, None
    k = ev.metadata_id - np.int64(kinds.base)
    known = (k >= 0) & (k < len(kinds.requested))
    k = np.where(known, k, 0)
    req = np.where(known, ev.requested != kinds.requested[k], ev.requested != ev.returned)
    ret = ~known | (ev.returned != kinds.returned[k])
    return req, ret


def encode_events_numpy(ev: EventColumns, stat_ids: tuple[int, ...], kinds: KindValues | None = None) -> bytes:
    """XLine.events entries for ``ev`` (field 4 each), encoded column-wise with NumPy.

    ``stat_ids``: XStatMetadata ids of the stats in :data:`EVENT_STATS` order. Layout
    (the native ``tbio_encode_io_events`` writes the same bytes): metadata_id,
    offset_ps, duration_ps, then the stats ``path`` (ref, when != 0), ``offset``
    (when != -1), ``bytes_requested`` and ``bytes_returned`` (each when it differs from
    the event kind's value in ``kinds``; without: requested when it differs from
    returned, returned always), ``fd`` (when != -1), ``errno`` (when != 0)."""
    sid = dict(zip(EVENT_STATS, stat_ids))
    req_present, ret_present = _byte_stats_present(ev, kinds)
    rows = wire.Rows(len(ev))
    rows.varint_field(1, ev.metadata_id)
    rows.varint_field(2, ev.offset_ps)
    rows.varint_field(3, ev.duration_ps)
    for name, stat, field_number in (("path_ref", STAT_PATH, 7), ("offset", STAT_OFFSET, 4)):
        if getattr(ev, name) is not None:
            values = ev.column(name)
            _int_stat(rows, sid[stat], field_number, values, values != _OPTIONAL[name])
    _int_stat(rows, sid[STAT_REQUESTED], 4, ev.requested, req_present)
    _int_stat(rows, sid[STAT_RETURNED], 4, ev.returned, ret_present)
    for name, stat in (("fd", STAT_FD), ("errno", STAT_ERRNO)):
        if getattr(ev, name) is not None:
            values = ev.column(name)
            _int_stat(rows, sid[stat], 4, values, values != _OPTIONAL[name])
    return rows.wrap(4).finish().data.tobytes()


def _native_lib() -> Any:
    """(ffi, lib) of the codecs (tb_iotrace._codec), or None where they are not built."""
    return codec()


def _native_call(ev: EventColumns, stat_ids: tuple[int, ...], kinds: KindValues | None, out: Any = None,
                 at: int = 0, cap: int = 0) -> int:
    """tbio_encode_io_events on ``ev``: the encoded size, and the bytes written into the
    writable buffer ``out`` from offset ``at`` when ``out`` is given (``cap`` bytes there)."""
    found = _native_lib()
    if found is None:
        raise RuntimeError("the tb_iotrace native module is not available")
    ffi, lib = found
    cols = [ffi.NULL if getattr(ev, name) is None else ffi.from_buffer("int64_t[]", getattr(ev, name))
            for name in ev.__dataclass_fields__]
    sids = ffi.new("int64_t[]", [int(s) for s in stat_ids])
    dst = ffi.from_buffer("uint8_t[]", out) + at if out is not None else ffi.NULL
    if kinds is not None and len(kinds.requested):
        ktab = (kinds.base, len(kinds.requested), ffi.from_buffer("int64_t[]", kinds.requested),
                ffi.from_buffer("int64_t[]", kinds.returned))
    else:
        ktab = (0, 0, ffi.NULL, ffi.NULL)
    return int(lib.tbio_encode_io_events(len(ev), *cols, *ktab, sids, dst, cap if out is not None else 0))


def encode_events_native(ev: EventColumns, stat_ids: tuple[int, ...],
                         kinds: KindValues | None = None) -> bytearray:
    """The bytes of :func:`encode_events_numpy`, written by the native module (~100x faster).
    Raises RuntimeError when the native module is not available."""
    size = _native_call(ev, stat_ids, kinds)
    out = bytearray(size)
    if size and _native_call(ev, stat_ids, kinds, out, 0, size) != size:
        raise RuntimeError("tbio_encode_io_events wrote a different size")
    return out


class EventBlock:
    """One line's XLine.events entries, encoded when written (:meth:`write_into`), so the
    native encoder writes straight into the final buffer: no intermediate copy."""

    def __init__(self, ev: EventColumns, stat_ids: tuple[int, ...], kinds: KindValues | None) -> None:
        self.ev, self.stat_ids, self.kinds = ev, stat_ids, kinds
        self.native = len(ev) > 0 and _native_lib() is not None
        self._bytes = None if self.native else encode_events_numpy(ev, stat_ids, kinds)
        self.size = _native_call(ev, stat_ids, kinds) if self.native else len(self._bytes or b"")

    def __len__(self) -> int:
        return self.size

    def write_into(self, out: bytearray, at: int) -> None:
        if self.native:
            if _native_call(self.ev, self.stat_ids, self.kinds, out, at, self.size) != self.size:
                raise RuntimeError("tbio_encode_io_events wrote a different size")
        else:
            out[at:at + self.size] = self._bytes or b""

    def tobytes(self) -> bytes:
        if not self.native:
            return self._bytes or b""
        out = bytearray(self.size)
        self.write_into(out, 0)
        return bytes(out)


def join_chunks(chunks: list) -> bytearray:
    """Concatenate bytes and :class:`EventBlock` chunks into one new buffer."""
    out = bytearray(sum(len(c) for c in chunks))
    at = 0
    for c in chunks:
        if isinstance(c, EventBlock):
            c.write_into(out, at)
        else:
            out[at:at + len(c)] = c
        at += len(c)
    return out


def encode_events(ev: EventColumns, stat_ids: tuple[int, ...],
                  kinds: KindValues | None = None) -> bytes | bytearray:
    """:func:`encode_events_native` where the native module is built, else the NumPy path."""
    if len(ev) and _native_lib() is not None:
        return encode_events_native(ev, stat_ids, kinds)
    return encode_events_numpy(ev, stat_ids, kinds)
