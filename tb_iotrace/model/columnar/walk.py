"""The NumPy path, part 1: walking the wire format (planes, lines, where each event's bytes
are) and decoding event fields lock-step, vectorized over all events at once."""
from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from tb_iotrace.store.xplane.wire import read_varint

# Event chunk for the lock-step decoder: bounds the temporaries (~100 bytes per event).
CHUNK = 1 << 16


# --------------------------------------------------------------------------- scalar walking


# one protobuf varint reader for the package: the xplane wire helpers' own
_varint = read_varint


def fields(data, pos: int, end: int):
    """Top-level fields of the message in ``data[pos:end]``: (number, wire type, value
    start, value end). For varints the range covers the value bytes."""
    for number, wt, _, a, b in field_spans(data, pos, end):
        yield number, wt, a, b


def field_spans(data, pos: int, end: int):
    """Like :func:`fields`, with where each field's tag starts: (number, wire type, tag
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


def walk_line(data, buf, pos: int, end: int, on_events) -> dict[str, Any]:
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


def walk_events(data, pos: int, end: int, ev_start: array, ev_end: array) -> int:
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


def check_events(buf, starts: np.ndarray, ends: np.ndarray) -> None:
    """Every field of the events at [starts, ends) well formed, as native/codec/xdecode.c
    checks them (ValueError otherwise): the decoders stop at the fields they need, and the
    two paths must reject the same damaged files."""
    pos = np.asarray(starts, dtype=np.int64).copy()
    ends = np.asarray(ends, dtype=np.int64)
    act = np.flatnonzero(pos < ends)
    while act.size:
        end = ends[act]
        _, _, _, _, nxt = _field_step(buf, pos[act])
        if np.any(nxt > end):
            raise ValueError("a field runs past the end of its message")
        pos[act] = nxt
        act = act[nxt < end]


def decode_events(buf, starts, ends, stat_col, columns):
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
