"""Columnar decoding of ``<host>.xplane.pb`` for the plugin and the analysis: numpy arrays straight from the
protobuf wire bytes, no Python object per event.

Why not ``tb_iotrace.xplane.load_xspace`` + ``read_io_data``: parsing a 64 MB capture (the
shared GPU capture plus 1,000,000 I/O events) into protobuf objects takes about 400 MB of
memory (upb arenas, ~6x the file) and ``read_io_data`` then walks the events in Python
(about 4 s). The plugin must stay under 5x the file size and paint in about a second, so
it decodes the file itself:

1. The file is memory-mapped (read-only); nothing is copied.
2. Planes and lines are walked in Python (a few thousand fields). Every field of a plane
   except its lines (metadata maps, plane stats) is handed to protobuf, as the byte spans
   between the lines, as one small ``XPlane`` (``meta``): names, stat names and the
   ``tb_iotrace.io`` JSON come from there.
3. Inside each line, a tight loop records where each event's bytes start and end
   (~0.3 us per event).
4. The events' fields are then decoded *lock-step*, vectorized over all events at once:
   step k decodes field k of every event that still has fields left (numpy gathers for
   tags and varints). Event stats are only decoded for the lines that ask for them (the
   I/O lines), into int64 columns keyed by stat *name* (stat metadata ids are renumbered
   when TensorFlow merges planes, names are not).

The result keeps, per event, ``metadata_id``, ``start_ps`` (``timestamp_ns*1000 +
offset_ps``), ``duration_ps`` and the byte range of the event in the file, so the stats of
one event can be read later (``event_stats``) without keeping anything else in memory.

Malformed input (truncated, garbage, lengths running past their parent) raises
:class:`tb_iotrace.xplane.XPlaneError` with the reason.
"""

from __future__ import annotations

import mmap
import os
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..codecs import codec
from ._proto import XEvent, XPlane
from .wire import read_varint
from .reader import XPlaneError, stats_dict

# Event chunk for the lock-step decoder: bounds the temporaries (~100 bytes per event).
CHUNK = 1 << 16
# Bytes per token-decoder chunk: small enough that the temporaries stay in cache.
TOKEN_CHUNK = 1 << 18
# Lines at least this big are decoded on THREADS worker threads by the NumPy path. One by
# default: two lines' pieces and temporaries at once put its peak at 5.6x the file for the
# bench capture (4.6x on one thread, over the 5x budget), for ~0.15 s of wall time; the
# native scanner needs no threads.
PARALLEL_LINE_BYTES = 1 << 20
THREADS = 1


@dataclass
class LineInfo:
    """One XLine: header fields and the slice ``[first, first+count)`` of its plane's event
    arrays (events in file order)."""

    index: int
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    first: int
    count: int

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass
class PlaneData:
    """One XPlane, columnar. ``meta`` is an XPlane with everything but the lines."""

    index: int
    id: int
    name: str
    meta: XPlane
    lines: list[LineInfo]
    metadata_id: np.ndarray  # int64 per event
    start_ps: np.ndarray  # int64 per event: timestamp_ns*1000 + offset_ps
    duration_ps: np.ndarray  # int64
    file_pos: np.ndarray  # int64: where the event's bytes start in the file
    file_len: np.ndarray  # int32: how many bytes
    stats: dict[str, np.ndarray] = field(default_factory=dict)  # stat name -> int64 column
    # (ids ascending, name, display name or name) of the event metadata: see metadata_table
    md_table: tuple[np.ndarray, list[str], list[str]] | None = None

    @property
    def num_events(self) -> int:
        return len(self.metadata_id)

    def metadata_table(self) -> tuple[np.ndarray, list[str], list[str]]:
        """(event metadata ids ascending, name of each, display name or else name of each):
        read from the file by the native decoder (iterating ``meta.event_metadata``, a
        protobuf map of ~50,000 messages for a million I/O events, costs ~0.1 s), from
        ``meta`` otherwise."""
        if self.md_table is None:
            items = sorted(self.meta.event_metadata.items())
            self.md_table = (np.array([k for k, _ in items], dtype=np.int64), [md.name for _, md in items],
                             [md.display_name or md.name for _, md in items])
        return self.md_table

    def event_names(self) -> dict[int, str]:
        return {k: (md.display_name or md.name) for k, md in self.meta.event_metadata.items()}


@dataclass
class SpaceData:
    path: str
    size: int
    planes: list[PlaneData]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]


# --------------------------------------------------------------------------- scalar walking


# one protobuf varint reader for the package: the xplane wire helpers' own
_varint = read_varint


def _fields(data, pos: int, end: int):
    """Top-level fields of the message in ``data[pos:end]``: (number, wire type, value
    start, value end). For varints the range covers the value bytes."""
    for number, wt, _, a, b in _field_spans(data, pos, end):
        yield number, wt, a, b


def _field_spans(data, pos: int, end: int):
    """Like :func:`_fields`, with where each field's tag starts: (number, wire type, tag
    start, value start, value end); the field's bytes are ``data[tag start:value end]``."""
    while pos < end:
        at = pos
        tag, pos = _varint(data, pos, end)
        number, wt = tag >> 3, tag & 7
        if number == 0:
            raise ValueError("field number 0")
        if wt == 0:
            _, p = _varint(data, pos, end)
            yield number, wt, at, pos, p
            pos = p
        elif wt == 2:
            n, p = _varint(data, pos, end)
            if p + n > end:
                raise ValueError(f"field {number} runs past the end of its message")
            yield number, wt, at, p, p + n
            pos = p + n
        elif wt == 1:
            yield number, wt, at, pos, pos + 8
            pos += 8
        elif wt == 5:
            yield number, wt, at, pos, pos + 4
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
    if pos != end:
        raise ValueError("message runs past its end")


def _signed(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _walk_line(data, buf, pos: int, end: int, on_events) -> dict[str, Any]:
    """Header fields of one XLine. At the first event field, ``on_events(pos, end)`` decodes
    the run of events starting there and returns where the run ended."""
    head: dict[str, Any] = {"id": 0, "display_id": 0, "name": "", "display_name": "", "timestamp_ns": 0}
    while pos < end:
        if data[pos] == 0x22:  # field 4 (events), length-delimited
            pos = on_events(head, pos, end)
            continue
        tag, p = _varint(data, pos, end)
        number, wt = tag >> 3, tag & 7
        if wt == 0:
            v, pos = _varint(data, p, end)
            if number == 1:
                head["id"] = _signed(v)
            elif number == 3:
                head["timestamp_ns"] = _signed(v)
            elif number == 10:
                head["display_id"] = _signed(v)
        elif wt == 2:
            n, p = _varint(data, p, end)
            pos = p + n
            if pos > end:
                raise ValueError("line field runs past the end of its line")
            if number in (2, 11):
                text = bytes(data[p:pos]).decode("utf-8", "replace")
                head["name" if number == 2 else "display_name"] = text
        elif wt == 1:
            pos = p + 8
        elif wt == 5:
            pos = p + 4
        else:
            raise ValueError(f"unsupported wire type {wt} in a line")
    if pos != end:
        raise ValueError("line runs past its end")
    return head


def _walk_events(data, pos: int, end: int, ev_start: array, ev_end: array) -> int:
    """Scalar fallback: record the byte range of each event in the run starting at pos;
    returns the position of the first line field that is not an event."""
    add_s = ev_start.append
    add_e = ev_end.append
    while pos < end and data[pos] == 0x22:
        b = data[pos + 1]
        if b < 0x80:
            s = pos + 2
            pos = s + b
        else:
            n, s = _varint(data, pos + 1, end)
            pos = s + n
        if pos > end:
            raise ValueError("event runs past the end of its line")
        add_s(s)
        add_e(pos)
    return pos


# --------------------------------------------------------------------------- vectorized


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode one varint at each position: (value as uint64, encoded length)."""
    b = buf[pos]
    value = (b & 0x7F).astype(np.uint64)
    length = np.ones(len(pos), dtype=np.int64)
    idx = np.flatnonzero(b >= 0x80)
    k = 1
    while idx.size:
        if k >= 10:
            raise ValueError("varint longer than 10 bytes")
        b = buf[pos[idx] + k]
        value[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        length[idx] += 1
        idx = idx[b >= 0x80]
        k += 1
    return value, length


def _field_step(buf: np.ndarray, p: np.ndarray):
    """Decode the field starting at each position: (number, wire type, value as uint64
    (varints and lengths), payload start, next field position)."""
    tag, tl = _varints(buf, p)
    number = (tag >> np.uint64(3)).astype(np.int64)
    wt = (tag & np.uint64(7)).astype(np.int64)
    q = p + tl
    value = np.zeros(len(p), dtype=np.uint64)
    vlen = np.zeros(len(p), dtype=np.int64)
    var = (wt == 0) | (wt == 2)
    if var.all():
        value, vlen = _varints(buf, q)
    elif var.any():
        value[var], vlen[var] = _varints(buf, q[var])
    payload = q + vlen
    nxt = payload.copy()
    is_len = wt == 2
    nxt[is_len] += value[is_len].astype(np.int64)
    nxt[wt == 1] += 8
    nxt[wt == 5] += 4
    if np.any((wt == 3) | (wt == 4) | (wt > 5)) or np.any(number == 0):
        raise ValueError("unsupported wire type or field number 0 in an event")
    return number, wt, value, payload, nxt


def _decode_stats(buf, s_pos, s_end, owner, stat_col, columns) -> None:
    """Decode XStat messages at [s_pos, s_end) belonging to events ``owner``; store the
    integer value (int64/uint64/ref) of those whose metadata id maps to a column."""
    n = len(s_pos)
    sid = np.zeros(n, dtype=np.int64)
    val = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    pos = s_pos.copy()
    act = np.flatnonzero(pos < s_end)
    while act.size:
        number, wt, value, _, nxt = _field_step(buf, pos[act])
        m = (number == 1) & (wt == 0)
        sid[act[m]] = value[m].view(np.int64)
        m = ((number == 3) | (number == 4) | (number == 7)) & (wt == 0)
        val[act[m]] = value[m].view(np.int64)
        has[act[m]] = True
        end = s_end[act]
        if np.any(nxt > end):
            raise ValueError("stat runs past the end of its event")
        pos[act] = nxt
        act = act[nxt < end]
    keys, cols = stat_col
    at = np.searchsorted(keys, sid)
    at = np.minimum(at, len(keys) - 1)
    hit = has & (keys[at] == sid)
    col_of = cols[at]
    for c, column in enumerate(columns):
        m = hit & (col_of == c)
        if m.any():
            column[owner[m]] = val[m]


def _decode_events(buf, starts, ends, stat_col, columns):
    """Lock-step decode of events at [starts, ends): metadata_id, offset_ps, duration_ps
    (the scalar-walk fallback for runs the token decoder does not take)."""
    n = len(starts)
    mid = np.zeros(n, dtype=np.int64)
    off = np.zeros(n, dtype=np.int64)
    dur = np.zeros(n, dtype=np.int64)
    pos = starts.copy()
    act = np.flatnonzero(pos < ends)
    while act.size:
        number, wt, value, payload, nxt = _field_step(buf, pos[act])
        v = value.view(np.int64)
        isv = wt == 0
        m = isv & (number == 1)
        mid[act[m]] = v[m]
        m = isv & (number == 2)
        off[act[m]] = v[m]
        m = isv & (number == 3)
        dur[act[m]] = v[m]
        if stat_col is not None:
            m = (wt == 2) & (number == 4)
            if m.any():
                _decode_stats(buf, payload[m], nxt[m], act[m], stat_col, columns)
        end = ends[act]
        if np.any(nxt > end):
            raise ValueError("event field runs past the end of its event")
        pos[act] = nxt
        more = nxt < end
        if stat_col is None:
            # Serialized fields come in number order: once an event's stats (4) start, its
            # metadata id (1), offset (2) and duration (3) are behind us.
            more &= number < 4
        act = act[more]
    return mid, off, dur


class _Run:
    """Decoded events of one run (columns in file order)."""

    __slots__ = ("pos", "len", "mid", "off", "dur", "cols")

    def __init__(self, pos, ln, mid, off, dur, cols):
        self.pos, self.len, self.mid, self.off, self.dur = pos, ln, mid, off, dur
        self.cols = cols


def _token_values(R: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray | None:
    """Values of the varint tokens at ``start`` (their lengths known): the first 7-bit
    group of every token, then the further groups of the multi-byte ones, byte k of every
    token longer than k at a time. None for a token longer than 10 bytes."""
    val = (R[start] & 0x7F).astype(np.uint64)
    idx = np.flatnonzero(length > 1)
    k = 1
    while idx.size:
        if k >= 10:
            return None
        val[idx] |= (R[start[idx] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        idx = idx[length[idx] > k + 1]
        k += 1
    return val


def _template_chunk(tag, ival, val, tag_pos, val_end, rlen: int, at_end: bool, stat_col, defaults):
    """Fast path for the event layout tb_iotrace writes (and TensorFlow keeps when it merges
    planes): each event is ``[4: len] [1: metadata_id] [2: offset_ps] [3: duration_ps]``
    then stats of exactly two fields ``[4: len] [1: metadata_id] [3|4|7: value]``.

    Pairs are classified by position instead of nesting: event headers are the pairs
    tagged 0x22, 0x08, 0x10 in a row (a stat's second field can never be tagged 0x10), and
    every check of the layout (events tile the chunk, fields in order, stats of two
    fields with matching lengths) must hold, else None (the generic path decodes the chunk).
    Returns (runs piece, cut, finished, stop) like the generic path."""
    P = len(tag)
    if P < 4 or tag[0] != 0x22:
        return None
    hdr = np.zeros(P, dtype=bool)
    hdr[:P - 2] = (tag[:P - 2] == 0x22) & (tag[1:P - 1] == 0x08) & (tag[2:] == 0x10)
    E = np.flatnonzero(hdr)
    if not len(E) or E[0] != 0:
        return None
    ev_end = val_end[E] + ival[E]
    # events tile: each next header starts where the previous event ends
    if np.any(tag_pos[E[1:]] != ev_end[:-1]):
        return None
    complete = ev_end <= rlen
    K = int(np.count_nonzero(complete))
    if K == 0 or not complete[:K].all():
        return None
    cut = int(ev_end[K - 1])
    stop_pair = int(np.searchsorted(tag_pos, cut))
    finished = False
    if K < len(E):
        if E[K] != stop_pair:
            return None
    elif stop_pair < P:
        if tag[stop_pair] != 0x22:
            finished = True  # a line field after the last event
        elif stop_pair < P - 2:
            return None  # an event header the triple did not match: not our layout
        # else the next event starts in the last two pairs: the next chunk takes it
    elif cut == rlen and at_end:
        finished = True
    E = E[:K]
    n = stop_pair
    if E[-1] + 3 >= n:
        return None  # an event with fewer than its three fields
    t = tag[:n]
    if np.any(t[E + 1] != 0x08) or np.any(t[E + 2] != 0x10) or np.any(t[E + 3] != 0x18):
        return None
    # Stat headers: the other pairs tagged 0x22. With the checks below, event headers with
    # their 3 fields and stat headers with their 2 fields are disjoint, so when they add
    # up to all n pairs they are all there is.
    sh = np.flatnonzero((t == 0x22) & ~hdr[:n])
    if 4 * K + 3 * len(sh) != n:
        return None
    if len(sh):
        if sh[-1] + 2 >= n or np.any(t[sh + 1] != 0x08):
            return None
        vt = t[sh + 2]
        if np.any((vt != 0x18) & (vt != 0x20) & (vt != 0x38)):
            return None
        if np.any(val_end[sh + 2] - val_end[sh] != ival[sh]):
            return None
    pos = val_end[E]
    ln = ival[E].copy()
    mid = ival[E + 1].copy()
    off = ival[E + 2].copy()
    dur = ival[E + 3].copy()
    cols = []
    if stat_col is not None:
        sid = ival[sh + 1]
        sval = ival[sh + 2]
        # stats per event: its pairs beyond the header and 3 fields, in threes
        per_event = (np.diff(np.append(E, n)) - 4) // 3
        owner = np.repeat(np.arange(K), per_event)
        keys, kcols = stat_col
        at = np.minimum(np.searchsorted(keys, sid), len(keys) - 1)
        hit = keys[at] == sid
        mat = np.empty((len(defaults), K), dtype=np.int64)
        mat[:] = np.array(defaults, dtype=np.int64)[:, None]
        mat[kcols[at][hit], owner[hit]] = sval[hit]
        cols = list(mat)
    return (pos, ln, mid, off, dur, cols), cut, finished


def _token_run(buf, start: int, end: int, stat_col, defaults) -> tuple[int, list[_Run]] | None:
    """Vectorized decode of the run of events starting at ``start`` (a line-level field 4),
    by tokenizing the bytes into varints.

    Inside an event every field we meet is a varint or a length-delimited message of varint
    fields (XStat with an int/uint/ref value), so the bytes are a sequence of varints that
    alternate tag, value. Pairs are classified by nesting with running maxima of the
    length-delimited ranges' ends: a pair is line-level when it starts at or after the end
    of every range before it (the events), event-level when at or after the end of every
    stat before it, else inside a stat. Chunks hold whole events. Returns None when the run
    holds anything else (doubles, strings, multi-byte tags): the caller then falls back to
    the scalar walk."""
    runs: list[_Run] = []
    ncols = len(defaults)
    c0 = start
    chunk = TOKEN_CHUNK
    while True:
        if c0 >= end:
            return end, runs
        c1 = min(end, c0 + chunk)
        R = buf[c0:c1]
        tok_end = np.flatnonzero(R < 0x80)
        tok_end += 1
        T = len(tok_end) & ~1
        if T == 0:
            if c1 == end:
                return None
            chunk *= 2
            continue
        tok_end = tok_end[:T]
        tok_start = np.empty(T, dtype=np.int64)
        tok_start[0] = 0
        tok_start[1:] = tok_end[:-1]
        tag_pos = tok_start[0::2]
        val_start = tok_start[1::2]
        val_end = tok_end[1::2]
        P = len(tag_pos)
        tag = R[tag_pos]
        wt = tag & 7
        fn = tag >> 3
        is_len = wt == 2
        bad = ((val_start - tag_pos) != 1) | ~(is_len | (wt == 0)) | (fn == 0)
        val = _token_values(R, val_start, val_end - val_start)
        if val is None:
            return None
        ival = val.view(np.int64)
        if not bad.any():
            fast = _template_chunk(tag, ival, val, tag_pos, val_end, c1 - c0, c1 == end, stat_col, defaults)
            if fast is not None:
                (pos_, ln_, mid_, off_, dur_, cols_), cut_, fin_ = fast
                runs.append(_Run((c0 + pos_).astype(np.int64), ln_, mid_, off_, dur_, cols_))
                if fin_:
                    return c0 + cut_, runs
                c0 += cut_
                continue
        lend = np.where(is_len, val_end + np.minimum(val, np.uint64(1 << 40)).astype(np.int64), -1)
        M = np.maximum.accumulate(lend)
        prev = np.empty(P, dtype=np.int64)
        prev[0] = 0
        prev[1:] = M[:-1]
        top = tag_pos >= prev
        nonev = top & (tag != 0x22)
        stop = int(np.argmax(nonev)) if nonev.any() else P
        first_bad = int(np.argmax(bad)) if bad.any() else P
        if first_bad < stop:
            return None
        finished = stop < P
        stop_abs = c0 + int(tag_pos[stop]) if finished else end
        cut = 0
        if not finished:
            ev_pairs = np.flatnonzero(top)
            last = int(ev_pairs[-1])
            if lend[last] <= c1 - c0:
                # The last event ends inside the chunk; the next chunk starts after it.
                cut = int(lend[last])
                if c1 == end and cut == c1 - c0:
                    finished = True
            elif c1 == end:
                raise ValueError("event runs past the end of its line")
            else:
                cut = int(tag_pos[last])
            if not finished:
                if cut == 0:
                    chunk *= 2
                    continue
                stop = int(np.searchsorted(tag_pos, cut))
        top = top[:stop]
        tag_pos = tag_pos[:stop]
        fn = fn[:stop]
        wt = wt[:stop]
        is_len = is_len[:stop]
        ival = ival[:stop]
        lend = lend[:stop]
        nt = ~top
        le2 = np.where(nt, lend, -1)
        S = np.maximum.accumulate(le2)
        prev = np.empty(stop, dtype=np.int64)
        prev[:1] = -1
        prev[1:] = S[:-1]
        d1 = nt & (tag_pos >= prev)
        d2 = nt & ~d1
        if np.any(d2 & is_len) or np.any(d1 & is_len & (fn != 4)):
            return None
        evn = np.cumsum(top) - 1
        n_ev = int(evn[-1]) + 1 if stop else 0
        pos = (c0 + val_end[:stop][top]).astype(np.int64)
        ln = ival[top].copy()
        mid = np.zeros(n_ev, dtype=np.int64)
        off = np.zeros(n_ev, dtype=np.int64)
        dur = np.zeros(n_ev, dtype=np.int64)
        isv = wt == 0
        d1v = d1 & isv
        for number, col in ((1, mid), (2, off), (3, dur)):
            m = d1v & (fn == number)
            col[evn[m]] = ival[m]
        cols: list[np.ndarray] = []
        if stat_col is not None:
            is_stat = d1 & is_len
            sidx = np.cumsum(is_stat) - 1
            nst = int(sidx[-1]) + 1 if stop else 0
            st_ev = evn[is_stat]
            sid = np.full(nst, -(1 << 62), dtype=np.int64)
            sval = np.zeros(nst, dtype=np.int64)
            has = np.zeros(nst, dtype=bool)
            d2v = d2 & isv
            m = d2v & (fn == 1)
            sid[sidx[m]] = ival[m]
            m = d2v & ((fn == 3) | (fn == 4) | (fn == 7))
            sval[sidx[m]] = ival[m]
            has[sidx[m]] = True
            keys, kcols = stat_col
            at = np.minimum(np.searchsorted(keys, sid), len(keys) - 1)
            hit = has & (keys[at] == sid)
            col_of = kcols[at]
            for c in range(ncols):
                column = np.full(n_ev, defaults[c], dtype=np.int64)
                m = hit & (col_of == c)
                column[st_ev[m]] = sval[m]
                cols.append(column)
        runs.append(_Run(pos, ln, mid, off, dur, cols))
        if finished:
            return stop_abs, runs
        c0 += cut


# --------------------------------------------------------------------------- native scanner

# False: the NumPy path even where the native module is built (tests compare the two;
# TBIO_PLUGIN_NATIVE=0 in the environment does it for a whole process, e.g. a benchmark's
# TensorBoard).
USE_NATIVE = os.environ.get("TBIO_PLUGIN_NATIVE", "1") != "0"

_XD_ERRORS = {
    -1: "a varint runs past the end of its message",
    -2: "a varint longer than 10 bytes",
    -3: "a field runs past the end of its message",
    -4: "unsupported wire type",
    -5: "field number 0",
    -6: "an event of 2 GiB or more",
    -7: "fewer events than counted",
    -8: "bad arguments to the native decoder",
}


def _native_lib() -> tuple[Any, Any] | None:
    """(ffi, lib) of the codecs (tb_iotrace._codec) where they are built (and USE_NATIVE),
    else None."""
    return codec() if USE_NATIVE else None


class _NativeScan:
    """native/codec/xdecode.c over one mapped file (a cffi view of it, released by close())."""

    def __init__(self, ffi, lib, mm) -> None:
        self.ffi, self.lib = ffi, lib
        self.buf = ffi.from_buffer("uint8_t[]", mm)
        self._stop = ffi.new("int64_t *")

    def close(self) -> None:
        self.ffi.release(self.buf)

    def _check(self, rc: int, what: str) -> int:
        if rc < 0:
            raise ValueError(f"{what}: {_XD_ERRORS.get(rc, f'error {rc}')}")
        return rc

    def _ptr(self, ctype: str, arr: np.ndarray, at: int = 0):
        return self.ffi.from_buffer(ctype, arr) + at

    def fields(self, start: int, end: int) -> np.ndarray:
        """Rows number, wire type, tag start, value start, value end of each top-level field
        of the message at [start, end)."""
        lib, null = self.lib, self.ffi.NULL
        n = self._check(lib.tbio_xd_fields(self.buf, start, end, 0, null, null, null, null, null), "plane")
        out = np.empty((5, n), dtype=np.int64)
        if n:
            p = [self._ptr("int64_t[]", row) for row in out]
            self._check(lib.tbio_xd_fields(self.buf, start, end, n, *p), "plane")
        return out

    def event_metadata(self, data, fields: np.ndarray) -> tuple[np.ndarray, list[str], list[str]]:
        """PlaneData.metadata_table from the plane's event_metadata map entries (field 4):
        as protobuf reads the map, the last entry of a key wins."""
        num, wt, _, a, b = fields
        m = (num == 4) & (wt == 2)
        starts, ends = a[m], b[m]
        n = len(starts)
        out = np.zeros((5, n), dtype=np.int64)
        if n:
            i64 = "int64_t[]"
            self._check(self.lib.tbio_xd_event_metadata(
                self.buf, len(self.buf), n, self._ptr(i64, starts), self._ptr(i64, ends),
                *[self._ptr(i64, row) for row in out]), "event metadata")
        key, na, nb, da, db = out
        order = np.argsort(key, kind="stable")
        key = key[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = key[1:] != key[:-1]
        order = order[last]
        names = [data[x:y].decode("utf-8", "replace") for x, y in zip(na[order].tolist(), nb[order].tolist())]
        labels = [data[x:y].decode("utf-8", "replace") if y > x else nm
                  for x, y, nm in zip(da[order].tolist(), db[order].tolist(), names)]
        return key[last], names, labels

    def count(self, pos: int, end: int) -> tuple[int, int]:
        """(events in the run at pos, where the run ends)."""
        n = self._check(self.lib.tbio_xd_count_events(self.buf, pos, end, self._stop), "line events")
        return n, int(self._stop[0])

    def events(self, pos: int, end: int, n: int, at: int, out: dict[str, np.ndarray],
               stat_col: tuple[np.ndarray, np.ndarray] | None, cols: list[np.ndarray]) -> None:
        """Decode the n events at pos into the columns of ``out`` from row ``at``."""
        ffi = self.ffi
        i64 = "int64_t[]"
        if stat_col is not None and cols and stat_col[1][0] >= 0:
            keys, kcols = stat_col
            nkeys = len(keys)
            kp, cp = self._ptr(i64, keys), self._ptr(i64, kcols)
            colp = ffi.new("int64_t *[]", [self._ptr(i64, c, at) for c in cols])
        else:
            nkeys, kp, cp, colp = 0, ffi.NULL, ffi.NULL, ffi.NULL
        self._check(self.lib.tbio_xd_events(
            self.buf, pos, end, n, self._ptr(i64, out["pos"], at), self._ptr("int32_t[]", out["len"], at),
            self._ptr(i64, out["mid"], at), self._ptr(i64, out["off"], at), self._ptr(i64, out["dur"], at),
            nkeys, kp, cp, len(cols), colp), "line events")


def _decode_plane_native(native: _NativeScan, data, index: int, meta: XPlane,
                         line_ranges: list[tuple[int, int]],
                         stats_for: Callable[[str, XPlane, LineInfo], bool],
                         stat_col_all, stat_names: Sequence[str], stat_defaults: Sequence[int]) -> PlaneData:
    """_decode_plane with native/codec/xdecode.c: count the events of every line first, then
    decode them straight into the plane's columns (no per-run pieces to concatenate)."""
    heads: list[dict[str, Any]] = []
    runs: list[tuple[int, int, int, bool]] = []  # (pos, end, n, want stats) in file order
    counts: list[int] = []
    for li, (a, b) in enumerate(line_ranges):
        probe = LineInfo(index=li, id=0, display_id=0, name="", display_name="", timestamp_ns=0,
                         first=0, count=0)
        want: list[bool | None] = [None]
        got = [0]

        def on_events(head, pos, lend):
            if want[0] is None:
                probe.name, probe.display_name = head["name"], head["display_name"]
                want[0] = bool(stat_col_all is not None and stats_for(meta.name, meta, probe))
            n, stop = native.count(pos, lend)
            runs.append((pos, lend, n, bool(want[0])))
            got[0] += n
            return stop

        heads.append(_walk_line(data, None, a, b, on_events))
        counts.append(got[0])
    total = sum(counts)
    out = {"pos": np.empty(total, np.int64), "len": np.empty(total, np.int32), "mid": np.empty(total, np.int64),
           "off": np.empty(total, np.int64), "dur": np.empty(total, np.int64)}
    cols = [np.full(total, d, dtype=np.int64) for d in stat_defaults]
    at = 0
    for pos, lend, n, want in runs:
        if n:
            native.events(pos, lend, n, at, out, stat_col_all if want else None, cols)
        at += n
    lines: list[LineInfo] = []
    first = 0
    start_ps = out["off"]
    for li, (head, count) in enumerate(zip(heads, counts)):
        lines.append(LineInfo(index=li, first=first, count=count, **head))
        if count and head["timestamp_ns"]:
            start_ps[first:first + count] += np.int64(head["timestamp_ns"] * 1000)
        first += count
    return PlaneData(index=index, id=int(meta.id), name=meta.name, meta=meta, lines=lines,
                     metadata_id=out["mid"], start_ps=start_ps, duration_ps=out["dur"],
                     file_pos=out["pos"], file_len=out["len"], stats=dict(zip(stat_names, cols)))


# --------------------------------------------------------------------------- planes


def _plane_parts(data, start: int, end: int, native) -> tuple[XPlane, list[tuple[int, int]], np.ndarray | None]:
    """The plane's metadata (every field but the lines, handed to protobuf as the byte spans
    between line fields, joined) and the byte range of each line's payload."""
    meta_spans: list[list[int]] = []
    line_ranges: list[tuple[int, int]] = []
    fields = None
    if native is not None:
        fields = native.fields(start, end)
        num, wt, at, a, b = fields
        is_line = (num == 3) & (wt == 2)
        line_ranges = list(zip(a[is_line].tolist(), b[is_line].tolist()))
        # Maximal runs of non-line fields (fields tile the message: each starts where the
        # previous one ends).
        other = ~is_line
        prev_line = np.ones(len(num), dtype=bool)
        prev_line[1:] = is_line[:-1]
        next_line = np.ones(len(num), dtype=bool)
        next_line[:-1] = is_line[1:]
        meta_spans = [list(x) for x in zip(at[other & prev_line].tolist(), b[other & next_line].tolist())]
    else:
        for number, w, t, x, y in _field_spans(data, start, end):
            if number == 3 and w == 2:
                line_ranges.append((x, y))
            elif meta_spans and meta_spans[-1][1] == t:
                meta_spans[-1][1] = y
            else:
                meta_spans.append([t, y])
    meta = XPlane()
    with memoryview(data) as view:  # one copy of the spans, not two
        raw = b"".join(view[x:y] for x, y in meta_spans)
    try:
        meta.ParseFromString(raw)
    except Exception as exc:  # DecodeError and runtime variants
        raise ValueError(f"plane metadata: {type(exc).__name__}: {exc}") from None
    return meta, line_ranges, fields


def _stat_columns(meta: XPlane, stat_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(sorted stat metadata ids, column of each) for the stats named ``stat_names``
    (by name: TensorFlow renumbers ids when it merges planes)."""
    if not stat_names:
        return None
    keys, cols = [], []
    for k, md in meta.stat_metadata.items():
        if md.name in stat_names:
            keys.append(k)
            cols.append(list(stat_names).index(md.name))
    if not keys:
        return np.array([-(1 << 61)], np.int64), np.array([-1], np.int64)
    order = np.argsort(np.array(keys, dtype=np.int64))
    return np.array(keys, dtype=np.int64)[order], np.array(cols, dtype=np.int64)[order]


def _decode_plane(data, buf, index: int, start: int, end: int,
                  stats_for: Callable[[str, XPlane, LineInfo], bool],
                  stat_names: Sequence[str], stat_defaults: Sequence[int], native=None) -> PlaneData:
    meta, line_ranges, fields = _plane_parts(data, start, end, native)
    stat_col_all = _stat_columns(meta, stat_names)
    if native is not None:
        plane = _decode_plane_native(native, data, index, meta, line_ranges, stats_for, stat_col_all,
                                     stat_names, stat_defaults)
        plane.md_table = native.event_metadata(data, fields)
        return plane

    def decode_line(li: int, a: int, b: int) -> tuple[dict[str, Any], list[_Run]]:
        line_runs: list[_Run] = []
        probe = LineInfo(index=li, id=0, display_id=0, name="", display_name="", timestamp_ns=0,
                         first=0, count=0)
        want: list[bool | None] = [None]

        def on_events(head, pos, lend):
            if want[0] is None:
                probe.name, probe.display_name = head["name"], head["display_name"]
                want[0] = bool(stat_col_all is not None and stats_for(meta.name, meta, probe))
            sc = stat_col_all if want[0] else None
            got = _token_run(buf, pos, lend, sc, stat_defaults if want[0] else ())
            if got is not None:
                stop, rs = got
            else:
                ev_start, ev_end = array("q"), array("q")
                stop = _walk_events(data, pos, lend, ev_start, ev_end)
                s = np.frombuffer(ev_start, dtype=np.int64).copy()
                e = np.frombuffer(ev_end, dtype=np.int64).copy()
                cols = [np.full(len(s), d, dtype=np.int64) for d in stat_defaults] if want[0] else []
                rs = []
                for c0 in range(0, len(s), CHUNK):
                    c1 = min(c0 + CHUNK, len(s))
                    m, o, d = _decode_events(buf, s[c0:c1], e[c0:c1], sc, [c[c0:c1] for c in cols])
                    rs.append(_Run(s[c0:c1], (e - s)[c0:c1], m, o, d, [c[c0:c1] for c in cols]))
            line_runs.extend(rs)
            return stop

        head = _walk_line(data, buf, a, b, on_events)
        return head, line_runs

    # Big lines are decoded on worker threads (numpy releases the GIL in its loops).
    big = [i for i, (a, b) in enumerate(line_ranges) if b - a >= PARALLEL_LINE_BYTES]
    results: dict[int, tuple[dict[str, Any], list[_Run]]] = {}
    if len(big) > 1 and THREADS > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(THREADS, len(big))) as pool:
            futures = {i: pool.submit(decode_line, i, *line_ranges[i]) for i in big}
            for i, (a, b) in enumerate(line_ranges):
                if i not in futures:
                    results[i] = decode_line(i, a, b)
            for i, f in futures.items():
                results[i] = f.result()
    else:
        for i, (a, b) in enumerate(line_ranges):
            results[i] = decode_line(i, a, b)

    lines: list[LineInfo] = []
    runs: list[_Run] = []
    total = 0
    for li in range(len(line_ranges)):
        head, line_runs = results.pop(li)
        count = sum(len(r.mid) for r in line_runs)
        lines.append(LineInfo(index=li, first=total, count=count, **head))
        runs.extend(line_runs)
        total += count

    def cat(attr: str, dtype, col: int | None = None) -> np.ndarray:
        # Concatenate one column of all runs, dropping each run's piece as it goes so the
        # peak stays near one copy of the column.
        parts = []
        for r in runs:
            if col is None:
                parts.append(getattr(r, attr))
                setattr(r, attr, None)
            elif r.cols:
                parts.append(r.cols[col])
                r.cols[col] = None
            else:
                parts.append(np.full(len(r.pos), stat_defaults[col], dtype=np.int64))
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    stats: dict[str, np.ndarray] = {}
    for c, name in enumerate(stat_names):
        stats[name] = cat("cols", np.int64, c)
    mid = cat("mid", np.int64)
    start_ps = cat("off", np.int64)
    dur = cat("dur", np.int64)
    file_len = cat("len", np.int32)
    file_pos = cat("pos", np.int64)
    del runs
    for ln in lines:
        if ln.count and ln.timestamp_ns:
            start_ps[ln.first:ln.first + ln.count] += np.int64(ln.timestamp_ns * 1000)
    return PlaneData(index=index, id=int(meta.id), name=meta.name, meta=meta,
                     lines=lines, metadata_id=mid, start_ps=start_ps, duration_ps=dur,
                     file_pos=file_pos, file_len=file_len, stats=stats)


def decode_xspace(path: str | os.PathLike, *,
                  stats_for: Callable[[str, XPlane, LineInfo], bool] = lambda *a: False,
                  stat_names: Sequence[str] = (), stat_defaults: Sequence[int] = ()) -> SpaceData:
    """Decode ``<host>.xplane.pb`` into :class:`SpaceData`.

    ``stats_for(plane_name, plane_meta, line)`` says for which lines the event stats named
    ``stat_names`` are decoded (int64 columns, ``stat_defaults`` where absent)."""
    path = os.fspath(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise XPlaneError(path, "no such file") from None
    except IsADirectoryError:
        raise XPlaneError(path, "is a directory, not an .xplane.pb file") from None
    except OSError as exc:
        raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise XPlaneError(path, "file is empty (0 bytes): not an XSpace")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    buf = np.frombuffer(mm, dtype=np.uint8)
    lib = _native_lib()
    native = _NativeScan(*lib, mm) if lib is not None else None
    try:
        planes: list[PlaneData] = []
        hostnames: list[str] = []
        errors: list[str] = []
        warnings: list[str] = []
        for number, wt, a, b in _fields(mm, 0, size):
            if number in (1, 2, 3, 4) and wt != 2:
                raise ValueError(f"field {number} has wire type {wt}, expected 2")
            if number == 1:
                planes.append(_decode_plane(mm, buf, len(planes), a, b, stats_for, stat_names,
                                            stat_defaults, native))
            elif number in (2, 3, 4):
                text = bytes(mm[a:b]).decode("utf-8", "replace")
                (errors, warnings, hostnames)[number - 2].append(text)
        if not planes and not hostnames and not errors and not warnings:
            raise ValueError("not an XSpace: no planes, hostnames, errors or warnings")
    except (ValueError, IndexError) as exc:
        raise XPlaneError(path, f"truncated or corrupt XSpace ({exc})") from None
    finally:
        del buf
        if native is not None:
            native.close()
        try:
            mm.close()
        except BufferError:  # a numpy view still alive somewhere: let GC close it
            pass
    return SpaceData(path=path, size=size, planes=planes, hostnames=hostnames, errors=errors,
                     warnings=warnings)


def event_stats(path: str | os.PathLike, meta: XPlane, pos: int, length: int) -> dict[str, Any]:
    """Decoded stats of one event (its XEventMetadata's stats, then its own), read from the
    file at the byte range recorded when decoding (``PlaneData.file_pos/file_len``)."""
    with open(path, "rb") as fh:
        fh.seek(int(pos))
        raw = fh.read(int(length))
    ev = XEvent()
    ev.ParseFromString(raw)
    out: dict[str, Any] = {}
    md = meta.event_metadata.get(ev.metadata_id)
    if md is not None:
        out.update(stats_dict(md.stats, meta))
    out.update(stats_dict(ev.stats, meta))
    return out


__all__ = ["LineInfo", "PlaneData", "SpaceData", "decode_xspace", "event_stats"]
