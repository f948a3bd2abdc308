"""The native event encoder (native/codec/encode.c) writes exactly the bytes of the NumPy one
(tb_iotrace.store.xplane.event_rows.encode_events_numpy), and traces given as codes (Labels) are
written like traces of str objects."""

from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.store.xplane import encode as iowriter, event_rows
from tb_iotrace.store.xplane.iotrace import Labels
from tb_iotrace.store.xplane.event_rows import EventColumns, KindValues, encode_events_native, encode_events_numpy

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
T0 = 1_700_000_000_000_000_000
EDGES = np.array([0, 1, -1, 2, 127, 128, 129, 16383, 16384, (1 << 31) - 1, -(1 << 31), 1 << 32,
                  (1 << 56) - 1, 1 << 56, (1 << 62), I64_MAX, I64_MIN, I64_MIN + 1, -128, -129],
                 dtype=np.int64)


def columns(rng: np.random.Generator, n: int, pool: np.ndarray | None) -> EventColumns:
    def col() -> np.ndarray:
        if pool is not None:
            return pool[rng.integers(0, len(pool), n)]
        # every varint length: random magnitudes, both signs
        bits = rng.integers(0, 64, n)
        v = rng.integers(0, I64_MAX, n, dtype=np.int64) >> (63 - bits)
        return np.where(rng.random(n) < 0.3, -v, v)
    returned = col()
    # bytes_requested equal to bytes_returned (not written) about half the time
    requested = np.where(rng.random(n) < 0.5, returned, col())
    return EventColumns(metadata_id=col(), offset_ps=col(), duration_ps=col(), path_ref=col(),
                        offset=col(), requested=requested, returned=returned, fd=col(), errno=col())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["random", "edges"])
def test_native_bytes_equal_numpy(seed, kind):
    rng = np.random.default_rng(seed)
    ev = columns(rng, 5000, EDGES if kind == "edges" else None)
    sids = tuple(int(x) for x in rng.choice(EDGES[EDGES > 0], 6)) if seed % 2 else (1, 2, 3, 4, 5, 6)
    got = bytes(encode_events_native(ev, sids))
    assert got == encode_events_numpy(ev, sids)
    # with kind tables: a kind's byte counts are left out of its events
    base = int(rng.choice(ev.metadata_id))
    nk = 50
    kinds = KindValues(base, rng.choice(ev.requested, nk), rng.choice(ev.returned, nk))
    with_kinds = bytes(encode_events_native(ev, sids, kinds))
    assert with_kinds == encode_events_numpy(ev, sids, kinds)
    # and protobuf reads it as XLine.events with the stats where they apply
    line = X.XLine.FromString(got)
    assert len(line.events) == len(ev)
    for i in (0, 1, len(ev) - 1):
        e = line.events[i]
        assert (e.metadata_id, e.offset_ps, e.duration_ps) == (ev.metadata_id[i], ev.offset_ps[i],
                                                               ev.duration_ps[i])
        stats = {st.metadata_id: (st.ref_value if st.metadata_id == sids[0] else st.int64_value)
                 for st in e.stats}
        want = {}
        if ev.path_ref[i] != 0:
            want[sids[0]] = int(ev.path_ref[i]) & ((1 << 64) - 1)
        if ev.offset[i] != -1:
            want[sids[1]] = int(ev.offset[i])
        if ev.requested[i] != ev.returned[i]:
            want[sids[2]] = int(ev.requested[i])
        want[sids[3]] = int(ev.returned[i])
        if ev.fd[i] != -1:
            want[sids[4]] = int(ev.fd[i])
        if ev.errno[i] != 0:
            want[sids[5]] = int(ev.errno[i])
        if len(set(sids)) == 6:
            assert stats == want


@pytest.mark.parametrize("absent", [("path_ref",), ("fd", "errno"), ("path_ref", "offset", "fd", "errno")])
def test_absent_columns(absent):
    """A column given as None is absent on every event, as if it held its "absent" value."""
    ev = columns(np.random.default_rng(9), 3000, None)
    sids = (11, 12, 13, 14, 15, 16)
    full = {name: getattr(ev, name) for name in ev.__dataclass_fields__}
    dense = EventColumns(**{**full, **{k: np.full(len(ev), event_rows._OPTIONAL[k]) for k in absent}})
    sparse = EventColumns(**{**full, **{k: None for k in absent}})
    want = encode_events_numpy(dense, sids)
    assert bytes(encode_events_native(sparse, sids)) == want
    assert encode_events_numpy(sparse, sids) == want
    kinds = KindValues(int(ev.metadata_id[5]), ev.requested[:30], ev.returned[10:40])
    assert bytes(encode_events_native(sparse, sids, kinds)) == encode_events_numpy(dense, sids, kinds)
    assert bytes(encode_events_native(sparse.slice(100, 200), sids)) == encode_events_numpy(dense.slice(100, 200), sids)


def test_native_empty_and_single():
    empty = EventColumns(*([np.zeros(0, np.int64)] * 9))
    sids = (1, 2, 3, 4, 5, 6)
    assert bytes(encode_events_native(empty, sids)) == encode_events_numpy(empty, sids) == b""
    one = EventColumns(*(np.array([v], np.int64) for v in (7, 0, 0, 0, -1, 5, 5, -1, 0)))
    # no path, offset, requested, fd or errno: only bytes_returned
    assert bytes(encode_events_native(one, (1, 2, 3, 4, 5, 6))) == bytes(
        [0x22, 12, 0x08, 7, 0x10, 0, 0x18, 0, 0x22, 4, 0x08, 4, 0x20, 5])
    assert encode_events_numpy(one, (1, 2, 3, 4, 5, 6)) == bytes(encode_events_native(one, (1, 2, 3, 4, 5, 6)))


def make_trace(n: int, seed: int, labels: bool) -> X.IoTrace:
    rng = np.random.default_rng(seed)
    ops = ("pread64", "read", "open", "close", "fwrite", "write", "unused")
    paths = ("/data/a", "", "/data/b", "/data/a", "/tmp/ünï \udcff", "/never")  # "/data/a" twice
    op_code = rng.integers(0, 6, n)
    path_code = rng.integers(0, 5, n)
    tids = np.array([40, 7, 1 << 40], dtype=np.int64)
    st = T0 + rng.integers(0, 50_000_000, n)   # not sorted: the writer orders rows
    returned = rng.integers(-1, 1 << 20, n)
    kw = dict(offset=np.where(rng.random(n) < 0.2, -1, rng.integers(0, 1 << 40, n)),
              requested=np.where(rng.random(n) < 0.5, returned, rng.integers(-1, 1 << 20, n)),
              returned=returned, fd=rng.integers(-1, 100, n), errno=np.where(rng.random(n) < 0.1, 5, 0),
              start_ns=st, end_ns=st + rng.integers(0, 200_000, n), tid=tids[rng.integers(0, 3, n)],
              threads={int(t): (int(t) + 1, f"w{t}") for t in tids})
    if labels:
        return X.IoTrace(op=Labels(op_code, ops), path=Labels(path_code, paths), **kw)
    return X.IoTrace(op=np.array(ops, dtype=object)[op_code], path=np.array(paths, dtype=object)[path_code], **kw)


def rows(trace: X.IoTrace) -> list[tuple]:
    return sorted(zip(trace.tid.tolist(), trace.start_ns.tolist(), trace.end_ns.tolist(), trace.op.tolist(),
                      trace.path.tolist(), trace.offset.tolist(), trace.requested.tolist(),
                      trace.returned.tolist(), trace.fd.tolist(), trace.errno.tolist()))


@pytest.mark.parametrize("labels", [False, True])
def test_space_bytes_same_with_and_without_native(monkeypatch, labels):
    trace = make_trace(3000, 1, labels)
    native = iowriter.io_space_bytes(trace, "/host:python-tracer", start_ns=T0)
    monkeypatch.setattr(event_rows, "_native_lib", lambda: None)
    assert iowriter.io_space_bytes(trace, "/host:python-tracer", start_ns=T0) == native
    back = X.read_io_data(X.XSpace.FromString(native))
    assert rows(back) == rows(make_trace(3000, 1, False))
    # bytes_requested was left out where it equals bytes_returned, and read back all the same
    assert (back.requested == back.returned).any() and (back.requested != back.returned).any()


def test_labels_trace_reads_like_str_trace():
    a, b = make_trace(500, 2, True), make_trace(500, 2, False)
    assert a.labels("op") is not None and "op" not in a.__dict__   # still codes
    assert a.op.tolist() == b.op.tolist() and a.path.tolist() == b.path.tolist()
    sub = a.take(np.arange(0, 500, 3))
    assert sub.labels("path") is not None
    assert sub.path.tolist() == b.path[::3].tolist()
    with pytest.raises(ValueError):
        Labels(np.array([0, 3]), ("x", "y"))


def test_capped_labels_trace(monkeypatch):
    trace = make_trace(1000, 3, True)
    space = X.XSpace()
    info = X.add_io_to_space(space, trace, start_ns=T0, max_events=100)
    assert info["num_events"] == 100 and info["capped"] == 900
    first = np.sort(np.argsort(trace.start_ns, kind="stable")[:100])
    assert rows(X.read_io_data(space)) == rows(make_trace(1000, 3, False).take(first))


@pytest.mark.parametrize("seed", range(3))
def test_kind_values_left_out(seed):
    """Events of a kind (metadata id in the table) leave out the byte counts equal to the
    kind's; others follow the rule without a table. Same bytes both ways, and protobuf reads
    back exactly the stats expected."""
    rng = np.random.default_rng(seed)
    n = 4000
    ev = columns(rng, n, EDGES)
    ev.metadata_id = rng.integers(90, 160, n)            # kinds are ids 100..149
    kinds = KindValues(100, rng.choice(EDGES, 50), rng.choice(EDGES, 50))
    k = ev.metadata_id - 100
    hit = (k >= 0) & (k < 50)
    # about half of the kind's events carry its exact values
    ev.requested = np.where(hit & (rng.random(n) < 0.5), kinds.requested[np.clip(k, 0, 49)], ev.requested)
    ev.returned = np.where(hit & (rng.random(n) < 0.5), kinds.returned[np.clip(k, 0, 49)], ev.returned)
    sids = (1, 2, 3, 4, 5, 6)
    got = bytes(encode_events_native(ev, sids, kinds))
    assert got == encode_events_numpy(ev, sids, kinds)
    line = X.XLine.FromString(got)
    for i, e in enumerate(line.events):
        stats = {st.metadata_id: st.int64_value for st in e.stats}
        if hit[i]:
            assert (3 in stats) == (ev.requested[i] != kinds.requested[k[i]])
            assert (4 in stats) == (ev.returned[i] != kinds.returned[k[i]])
        else:
            assert (3 in stats) == (ev.requested[i] != ev.returned[i])
            assert 4 in stats
        for sid, col in ((3, ev.requested), (4, ev.returned)):
            if sid in stats:
                assert stats[sid] == col[i]
