"""The plugin's columnar decoder and level-of-detail merging against the reference reader
(tb_iotrace.store.xplane: protobuf objects) on real and synthetic captures."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import tb_iotrace.model.columnar as D
from tb_iotrace.model.columnar import tokens
from tb_iotrace.plugin import level_of_detail as lod
from tb_iotrace.model.tab.columns import _rows
from tb_iotrace.plugin.synthetic import make_logdir, synthetic_trace
from tb_iotrace.store.xplane import LINE_PREFIX, IoTrace, XPlaneError, add_io_to_space, columns, load_xspace, merge_into_capture, read_io_data, read_io_info
from tb_iotrace.store.xplane.io_fields import ABSENT, STAT_DEFAULTS
from tb_iotrace.store.xplane.io_fields import fill_bytes as _fill_bytes
from tb_iotrace.store.xplane.schema import EVENT_STATS, event_kinds

KW = dict(stats_for=lambda pn, meta, ln: pn.startswith("/host:") and ln.name.startswith(LINE_PREFIX),
          stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS)

def assert_same_as_reader(path) -> None:
    """Every event's metadata id, start and duration equal the protobuf reader's, and the
    I/O stats equal read_io_data's."""
    sd = D.decode_xspace(path, **KW)
    sp = load_xspace(path)
    assert [p.name for p in sd.planes] == [p.name for p in sp.planes]
    for pd, pl in zip(sd.planes, sp.planes):
        c = columns(pl)
        assert len(pd.lines) == c.num_lines
        for li, ln in zip(pd.lines, c.lines):
            sl = slice(li.first, li.first + li.count)
            assert (li.name, li.id, li.display_id, li.timestamp_ns) == (ln.name, ln.id, ln.display_id, ln.line.timestamp_ns)
            np.testing.assert_array_equal(pd.metadata_id[sl], ln.metadata_id)
            np.testing.assert_array_equal(pd.start_ps[sl], ln.start_ps)
            np.testing.assert_array_equal(pd.duration_ps[sl], ln.duration_ps)
    tr = read_io_data(sp)
    if tr is None:
        return
    host = next(p for p in sd.planes if p.name == "/host:CPU")
    md = host.meta.stat_metadata
    io = [ln for ln in host.lines if ln.name.startswith(LINE_PREFIX)]
    idx = np.concatenate([np.arange(ln.first, ln.first + ln.count) for ln in io]) if io else np.zeros(0, int)
    # path and fd: event stats (format /1) or the event kind named by the metadata (/2)
    kinds = event_kinds(read_io_info(sp))
    emd = host.meta.event_metadata
    kind = [kinds.get(emd[k].name, ("", "", -1, ABSENT, ABSENT)) for k in host.metadata_id[idx].tolist()]
    refs = host.stats["path"][idx]
    paths = np.array([md[k].name if k in md else kd[1] for k, kd in zip(refs.tolist(), kind)], dtype=object)
    assert len(idx) == len(tr)
    np.testing.assert_array_equal(paths, tr.path)
    fds = np.where(host.stats["fd"][idx] != -1, host.stats["fd"][idx], [kd[2] for kd in kind])
    np.testing.assert_array_equal(host.stats["offset"][idx], tr.offset)
    # byte counts are only written where they differ from the event kind's (tb_iotrace.io/2)
    requested, returned = _fill_bytes(host.stats["bytes_requested"][idx], host.stats["bytes_returned"][idx],
                                      np.array([kd[3] for kd in kind]), np.array([kd[4] for kd in kind]))
    np.testing.assert_array_equal(requested, tr.requested)
    np.testing.assert_array_equal(returned, tr.returned)
    np.testing.assert_array_equal(fds, tr.fd)
    np.testing.assert_array_equal(host.stats["errno"][idx], tr.errno)


def test_gpu_capture_matches_reader(gpu_capture):
    assert_same_as_reader(gpu_capture)


@pytest.mark.parametrize("n", [1, 7, 3000, 60_000])
def test_merged_capture_matches_reader(gpu_capture, tmp_path, n):
    path = make_logdir(tmp_path, gpu_capture, n_events=n, seed=n)
    assert_same_as_reader(path)


def test_edge_values_match_reader(gpu_capture, tmp_path):
    """Negative returns (10-byte varints), absent offsets/fds, errno, huge offsets, zero
    durations, empty paths, non-ASCII paths."""
    n = 500
    rng = np.random.default_rng(5)
    start = np.sort(rng.integers(0, 10**9, n)) + 1_000_000_000
    tr = IoTrace(op=np.array(["read", "open64", "pwrite64", "lseek64", "close"] * 100, dtype=object),
                 path=np.array(["/a", "", "/ü/ñ path", "/x" * 300, "/a"] * 100, dtype=object),
                 offset=np.where(rng.random(n) < 0.3, -1, rng.integers(0, 2**62, n)),
                 requested=rng.integers(0, 2**40, n), returned=np.where(rng.random(n) < 0.2, -1, rng.integers(0, 2**33, n)),
                 fd=np.where(rng.random(n) < 0.2, -1, rng.integers(0, 10**6, n)),
                 errno=np.where(rng.random(n) < 0.1, rng.integers(1, 130, n), 0),
                 start_ns=start, end_ns=start + np.where(rng.random(n) < 0.1, 0, rng.integers(1, 10**6, n)),
                 tid=rng.integers(1, 4, n))
    path = tmp_path / "h.xplane.pb"
    shutil.copyfile(gpu_capture, path)
    merge_into_capture(path, tr, start_ns=1_000_000_000)
    assert_same_as_reader(path)


def test_generic_and_scalar_paths_agree(gpu_capture, tmp_path, monkeypatch):
    """The fast layout path, the generic token path and the scalar walk give the same
    columns."""
    path = make_logdir(tmp_path, gpu_capture, n_events=20_000)
    fast = D.decode_xspace(path, **KW)
    monkeypatch.setattr(tokens, "_template_chunk", lambda *a, **k: None)
    generic = D.decode_xspace(path, **KW)
    monkeypatch.setattr(D, "token_run", lambda *a, **k: None)
    scalar = D.decode_xspace(path, **KW)
    for other in (generic, scalar):
        for a, b in zip(fast.planes, other.planes):
            for f in ("metadata_id", "start_ps", "duration_ps", "file_pos", "file_len"):
                np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
            for k in a.stats:
                np.testing.assert_array_equal(a.stats[k], b.stats[k])


def test_small_chunks_and_threads(gpu_capture, tmp_path, monkeypatch):
    """Chunk boundaries everywhere (tiny chunks) and lines decoded on threads."""
    path = make_logdir(tmp_path, gpu_capture, n_events=5_000)
    ref = D.decode_xspace(path, **KW)
    monkeypatch.setattr(tokens, "TOKEN_CHUNK", 97)
    monkeypatch.setattr(D, "PARALLEL_LINE_BYTES", 1)
    monkeypatch.setattr(D, "THREADS", 3)
    got = D.decode_xspace(path, **KW)
    for a, b in zip(ref.planes, got.planes):
        np.testing.assert_array_equal(a.start_ps, b.start_ps)
        for k in a.stats:
            np.testing.assert_array_equal(a.stats[k], b.stats[k])


def test_space_written_by_add_io_to_space(gpu_capture, tmp_path):
    """A space serialized whole by protobuf (the pluggable-profiler path before TF merges)."""
    sp = load_xspace(gpu_capture)
    add_io_to_space(sp, synthetic_trace(2000, 10**8, 2 * 10**9, base_ns=5 * 10**9), start_ns=5 * 10**9)
    path = tmp_path / "x.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    assert_same_as_reader(path)


@pytest.mark.parametrize("mutate", ["empty", "truncated", "garbage", "bad_length", "not_xspace"])
def test_corrupt_files_raise_xplane_error(gpu_capture, tmp_path, mutate):
    data = gpu_capture.read_bytes()
    bad = {"empty": b"", "truncated": data[: len(data) // 3], "garbage": bytes(range(256)) * 40,
           "bad_length": b"\x0a\xff\xff\xff\xff\x0f" + data[:100], "not_xspace": b"\x08\x01"}[mutate]
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(bad)
    with pytest.raises(XPlaneError):
        D.decode_xspace(path, **KW)


def test_event_stats_read_back_from_the_file(gpu_capture):
    sd = D.decode_xspace(gpu_capture)
    sp = load_xspace(gpu_capture)
    plane = next(p for p in sd.planes if p.name == "/device:GPU:4")
    ref = columns(next(p for p in sp.planes if p.name == "/device:GPU:4"))
    for line in plane.lines[:3]:
        for i in (0, line.count - 1):
            k = line.first + i
            got = D.event_stats(gpu_capture, plane.meta, plane.file_pos[k], plane.file_len[k])
            assert got == ref.event_stats(line.index, i)


# --------------------------------------------------------------------------- level of detail


def brute_force(start, end, t0, npp):
    """Reference merge: runs of sub-pixel events starting in the same pixel column."""
    out = []
    for i in range(len(start)):
        wide = (end[i] - start[i]) >= lod.MIN_PX * npp
        col = int((start[i] - t0) * (1.0 / npp))  # truncated: starts left of t0 share column 0
        if out and not wide and not out[-1]["wide"] and out[-1]["col"] == col:
            g = out[-1]
            g["end"] = max(g["end"], end[i])
            g["count"] += 1
        else:
            out.append({"start": start[i], "end": end[i], "count": 1, "wide": wide, "col": col, "first": i})
    return out


@pytest.mark.parametrize("seed", range(5))
def test_merge_row_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    start = np.sort(rng.integers(0, 10**7, n)).astype(np.int64)
    end = start + rng.choice([0, 10, 1000, 50_000], n)
    maxend = np.maximum.accumulate(end)
    t0, t1, width = 2 * 10**6, 6 * 10**6, 500
    npp = (t1 - t0) / width
    i0, i1 = lod.window(start, maxend, 0, n, t0, t1)
    assert np.all(maxend[:i0] < t0) and np.all(start[i1:] > t1)
    items = lod.merge_row(start, end, i0, i1, t0, npp)
    ref = brute_force(start[i0:i1], end[i0:i1], t0, npp)
    assert len(items) == len(ref)
    np.testing.assert_array_equal(items.start, [g["start"] for g in ref])
    np.testing.assert_array_equal(items.end, [g["end"] for g in ref])
    np.testing.assert_array_equal(items.count, [g["count"] for g in ref])
    np.testing.assert_array_equal(items.first, [g["first"] + i0 for g in ref])
    assert items.count.sum() == i1 - i0
    assert len(items) <= 2 * width + 2
    sums = lod.group_sum(np.ones(n, dtype=np.int64), items)
    np.testing.assert_array_equal(sums, items.count)


def test_rows_nest_events():
    start = np.array([0, 0, 10, 20, 50, 50, 60, 100], dtype=np.int64)
    end = np.array([90, 40, 30, 25, 80, 50, 70, 110], dtype=np.int64)
    order = np.lexsort((-end, start))
    rows = _rows(start[order], end[order])
    # [0,90] > [0,40] > [10,30] > [20,25]; [50,80] > [60,70]; [50,50] zero-length; [100,110]
    assert dict(zip(order.tolist(), rows.tolist())) == {0: 0, 1: 1, 2: 2, 3: 3, 4: 1, 5: 2, 6: 2, 7: 0}


# --------------------------------------------------------------------------- native scanner


def decode_both(path, monkeypatch):
    """decode_xspace with native/codec/xdecode.c and with the NumPy path: (native, numpy), each
    the SpaceData or the XPlaneError raised."""
    monkeypatch.setattr(D, "USE_NATIVE", True)
    assert D._native_lib() is not None, "tb_iotrace._codec is not built (native/build_codec.py)"
    out = []
    for use in (True, False):
        monkeypatch.setattr(D, "USE_NATIVE", use)
        try:
            out.append(D.decode_xspace(path, **KW))
        except XPlaneError as exc:
            out.append(exc)
    monkeypatch.setattr(D, "USE_NATIVE", True)
    return out


def assert_same_columns(a: D.SpaceData, b: D.SpaceData) -> None:
    assert [p.name for p in a.planes] == [p.name for p in b.planes]
    assert (a.hostnames, a.errors, a.warnings) == (b.hostnames, b.errors, b.warnings)
    for x, y in zip(a.planes, b.planes):
        assert x.meta == y.meta
        assert [vars(ln) for ln in x.lines] == [vars(ln) for ln in y.lines]
        for f in ("metadata_id", "start_ps", "duration_ps", "file_pos", "file_len"):
            assert getattr(x, f).dtype == getattr(y, f).dtype, f
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
        assert x.stats.keys() == y.stats.keys()
        for k in x.stats:
            np.testing.assert_array_equal(x.stats[k], y.stats[k])
        # the native names come from the file, the NumPy path's from protobuf
        assert x.md_table is not None and y.md_table is None
        ids, names, labels = x.metadata_table()
        want = y.metadata_table()
        np.testing.assert_array_equal(ids, want[0])
        assert (names, labels) == (want[1], want[2])


def test_native_equals_numpy_on_the_tf_capture(gpu_capture, monkeypatch):
    native, numpy_ = decode_both(gpu_capture, monkeypatch)
    assert sum(p.num_events for p in native.planes) > 20_000
    assert_same_columns(native, numpy_)


@pytest.mark.parametrize("n", [1, 60_000])
def test_native_equals_numpy_with_io_events(gpu_capture, tmp_path, monkeypatch, n):
    path = make_logdir(tmp_path, gpu_capture, n_events=n, seed=n)
    native, numpy_ = decode_both(path, monkeypatch)
    host = next(p for p in native.planes if p.name == "/host:CPU")
    assert sum(ln.count for ln in host.lines if ln.name.startswith(LINE_PREFIX)) == n
    assert_same_columns(native, numpy_)


def test_native_equals_numpy_on_a_space_written_by_protobuf(gpu_capture, tmp_path, monkeypatch):
    sp = load_xspace(gpu_capture)
    add_io_to_space(sp, synthetic_trace(2000, 10**8, 2 * 10**9, base_ns=5 * 10**9), start_ns=5 * 10**9)
    path = tmp_path / "x.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    native, numpy_ = decode_both(path, monkeypatch)
    assert_same_columns(native, numpy_)


def _io_event_at(path) -> tuple[bytes, int, int]:
    """The file's bytes, and where one I/O event's payload starts and how long it is."""
    sd = D.decode_xspace(path, **KW)
    host = next(p for p in sd.planes if p.name == "/host:CPU")
    ln = next(ln for ln in host.lines if ln.name.startswith(LINE_PREFIX) and ln.count > 10)
    k = ln.first + ln.count // 2
    return Path(path).read_bytes(), int(host.file_pos[k]), int(host.file_len[k])


@pytest.mark.parametrize("damage", ["truncated_in_event", "long_varint", "huge_event_length",
                                    "huge_stat_length", "group_wire_type", "field_zero"])
def test_native_rejects_hostile_events_like_numpy(gpu_capture, tmp_path, monkeypatch, damage):
    """A corrupt I/O event: both decoders raise XPlaneError saying so (never a crash or a
    read outside the file)."""
    src = make_logdir(tmp_path / "src", gpu_capture, n_events=3000)
    data, pos, length = _io_event_at(src)
    b = bytearray(data)
    if damage == "truncated_in_event":
        b = b[:pos + length // 2]
    elif damage == "long_varint":  # the event's offset_ps, 11 bytes long
        assert b[pos] == 0x08
        b[pos + 1:pos + 1] = b"\xff" * 11
        b = b[:pos - 1] + bytes([b[pos - 1] + 11]) + b[pos:]  # its length still covers it
    elif damage == "huge_event_length":  # the event's length: 2^62 (a 9-byte varint)
        b[pos - 1:pos] = b"\x80" * 8 + b"\x40"
    elif damage == "huge_stat_length":  # the first stat's length
        at = pos + b[pos:pos + length].index(0x22)
        b[at + 1] = 0x7f
    elif damage == "group_wire_type":  # duration_ps tagged as a start-group
        at = pos + b[pos:pos + length].index(0x18)
        b[at] = 0x1b
    else:  # the metadata_id's tag: field number 0
        b[pos] = 0x00
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(bytes(b))
    native, numpy_ = decode_both(path, monkeypatch)
    assert isinstance(native, XPlaneError), damage
    assert isinstance(numpy_, XPlaneError), damage
    assert "truncated or corrupt" in str(native)


@pytest.mark.slow
def test_native_survives_random_damage(gpu_capture, tmp_path, monkeypatch):
    """Random byte flips and over-long varints in and around the I/O events: the native
    decoder raises XPlaneError or decodes; where both decode, their columns are the same;
    the native decoder is at least as strict (it also refuses a field running past its
    event and group wire types, which protobuf refuses too and the NumPy path skips), so
    it never decodes what the NumPy path refuses."""
    src = make_logdir(tmp_path / "src", gpu_capture, n_events=2000)
    data, pos, _ = _io_event_at(src)
    rng = np.random.default_rng(7)
    path = tmp_path / "bad.xplane.pb"
    outcomes = {"error": 0, "same": 0}
    for k in range(40):
        b = bytearray(data)
        at = int(rng.integers(pos - 2000, pos + 2000))
        if k % 2:
            b[at] ^= 1 << int(rng.integers(0, 8))
        else:
            b[at:at + 11] = b"\xff" * 11
        path.write_bytes(bytes(b))
        native, numpy_ = decode_both(path, monkeypatch)
        if isinstance(native, XPlaneError):
            outcomes["error"] += 1
        elif not isinstance(numpy_, XPlaneError):
            assert_same_columns(native, numpy_)
            outcomes["same"] += 1
        else:
            pytest.fail(f"damage {k} at byte {at}: the native decoder decoded what the NumPy path refused ({numpy_})")
    assert outcomes["error"] > 5 and outcomes["same"] > 5, outcomes


def test_tf_data_flags_match_the_regex():
    from tb_iotrace.model.tab.columns import TF_DATA_RE, tf_data_flags

    names = ["tf_data", "tf_data_x", " tf_data", "x\ntf_data", "Iterator::Map", "a/Iterator::",
             "Iterator:", "iterator::Map", "TF_DATA", "", "IteratorGetNext", "x Iterator::y\n",
             "tf_dat", "\u00e9tf_data Iterator::"]
    got = tf_data_flags(names)
    assert got.tolist() == [bool(TF_DATA_RE.search(n)) for n in names] + [False]
    assert got[:-1].sum() == 6  # the regex's matches, counted by hand


def test_lazy_event_metadata_reads_the_same_back(gpu_capture, monkeypatch):
    """decode_xspace(lazy_event_metadata=True) leaves the event metadata out of each plane's
    meta and reads them back from the file on use: the same tables, meta and event stats."""
    monkeypatch.setattr(D, "USE_NATIVE", True)
    full = D.decode_xspace(gpu_capture, **KW)
    lazy = D.decode_xspace(gpu_capture, lazy_event_metadata=True, **KW)
    assert any(len(p.meta.event_metadata) > 100 for p in full.planes)
    checked = 0
    for f, z in zip(full.planes, lazy.planes):
        assert len(z.meta.event_metadata) == 0 and z.md_file is not None and f.md_file is None
        assert z.meta.ByteSize() < f.meta.ByteSize() or not f.meta.event_metadata
        ids, names = z.metadata_names()
        want = f.metadata_table()
        np.testing.assert_array_equal(ids, want[0])
        assert names == want[1] and z.metadata_table()[2] == want[2]
        assert z.event_names() == f.event_names()
        back = z.full_meta()
        assert dict(back.event_metadata) == dict(f.meta.event_metadata)
        back.ClearField("event_metadata")
        plain = type(f.meta)()
        plain.CopyFrom(f.meta)
        plain.ClearField("event_metadata")
        assert back == plain
        for i in np.linspace(0, f.num_events - 1, min(f.num_events, 25)).astype(int).tolist():
            pos, ln = int(f.file_pos[i]), int(f.file_len[i])
            got = D.event_stats(gpu_capture, z.meta, pos, ln, z.md_file)
            assert got == D.event_stats(gpu_capture, f.meta, pos, ln)
            checked += bool(got)
    assert checked > 20


def test_capture_event_details_read_their_metadata_back(gpu_capture):
    """The tab's captures keep no parsed event metadata; an event's details read its
    metadata's stats back from the file, as the full decode has them."""
    from tb_iotrace.model.tab.of_xplane import decode_xplane

    cap = decode_xplane(str(gpu_capture), "h")
    full = {p.index: p.meta for p in D.decode_xspace(gpu_capture).planes}
    assert cap.md_files and all(len(m.event_metadata) == 0 for m in cap.planes.values())
    checked = 0
    for lane in cap.lanes:
        if lane.group == "io" or not len(lane):
            continue
        for i in sorted({0, len(lane) // 2, len(lane) - 1}):
            got = cap.event_stats(lane, i)
            assert got == D.event_stats(gpu_capture, full[lane.plane_index], int(lane.fpos[i]), int(lane.flen[i]))
            checked += 1
    assert checked > 50


def test_lazy_event_metadata_stats_of_the_metadata(tmp_path, monkeypatch):
    """An event whose metadata carry stats (the GPU capture's have none): its details hold
    them when the metadata are read back from the file; other map entries around it,
    and a key written twice (the last wins, as protobuf reads a map)."""
    from tb_iotrace.store.xplane._proto import XSpace
    from tb_iotrace.store.xplane.wire import varint_bytes

    sp = XSpace()
    pl = sp.planes.add(id=1, name="/host:CPU")
    pl.stat_metadata[7].name = "step_num"
    pl.stat_metadata[8].name = "color"
    for k in (3, 5, 9):
        md = pl.event_metadata[k]
        md.id, md.name = k, f"op{k}"
        md.stats.add(metadata_id=7, int64_value=100 + k)
    ln = pl.lines.add(id=1, name="main", timestamp_ns=10)
    for k in (3, 5, 9, 5):
        ev = ln.events.add(metadata_id=k, offset_ps=1000 * k, duration_ps=10)
        ev.stats.add(metadata_id=8, str_value=f"c{k}")
    raw = sp.SerializeToString()
    # a second entry for key 5 after the lines: protobuf keeps the last one
    dup = XSpace()
    dpl = dup.planes.add()
    dpl.event_metadata[5].name = "op5-last"
    dpl.event_metadata[5].stats.add(metadata_id=7, int64_value=555)
    plane_bytes = sp.planes[0].SerializeToString() + dpl.SerializeToString()
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"\x0a" + varint_bytes(len(plane_bytes)) + plane_bytes)
    assert raw  # the XSpace itself serialized
    monkeypatch.setattr(D, "USE_NATIVE", True)
    full = D.decode_xspace(path).planes[0]
    lazy = D.decode_xspace(path, lazy_event_metadata=True).planes[0]
    assert len(lazy.meta.event_metadata) == 0 and full.meta.event_metadata[5].name == "op5-last"
    got = [D.event_stats(path, lazy.meta, int(lazy.file_pos[i]), int(lazy.file_len[i]), lazy.md_file)
           for i in range(4)]
    assert got == [{"step_num": 103, "color": "c3"}, {"step_num": 555, "color": "c5"},
                   {"step_num": 109, "color": "c9"}, {"step_num": 555, "color": "c5"}]
    assert got == [D.event_stats(path, full.meta, int(full.file_pos[i]), int(full.file_len[i]))
                   for i in range(4)]
    assert lazy.metadata_table()[1:] == full.metadata_table()[1:] == (["op3", "op5-last", "op9"],) * 2
