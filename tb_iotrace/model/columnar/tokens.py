"""The NumPy path, part 2: the token decoder of a run of events of one line (the events are
tokenized in chunks and decoded against the template of the line's common layout)."""
from __future__ import annotations

import numpy as np

# Bytes per token-decoder chunk: small enough that the temporaries stay in cache.
TOKEN_CHUNK = 1 << 18


class EventRun:
    """Decoded events of one run (columns in file order)."""

    __slots__ = ("pos", "len", "mid", "off", "dur", "cols", "well_formed")

    def __init__(self, pos, ln, mid, off, dur, cols, well_formed: bool = False):
        self.pos, self.len, self.mid, self.off, self.dur = pos, ln, mid, off, dur
        self.cols = cols
        # every field of every event checked already (the template path checks the whole
        # layout); else walk.check_events does
        self.well_formed = well_formed


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


def token_run(buf, start: int, end: int, stat_col, defaults) -> tuple[int, list[EventRun]] | None:
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
    runs: list[EventRun] = []
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
                runs.append(EventRun((c0 + pos_).astype(np.int64), ln_, mid_, off_, dur_, cols_, well_formed=True))
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
        # Events tile the run: each top-level pair starts where the event before it ends.
        # Damage inside an event can shift the tokens so that a pair seems top-level where
        # no event ends; the scalar walk (by lengths, as the native scan) decides then.
        tops = np.flatnonzero(top[:stop + 1])
        if len(tops) and (tag_pos[tops[0]] != 0 or np.any(tag_pos[tops[1:]] != lend[tops[:-1]])):
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
        runs.append(EventRun(pos, ln, mid, off, dur, cols))
        if finished:
            return stop_abs, runs
        c0 += cut
