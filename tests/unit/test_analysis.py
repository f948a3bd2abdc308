"""The analysis on constructed traces: the mount table, the per-file-system table, the
slow-filesystem rule's cases that a real run does not cover (a FUSE/gcsfuse mount, the
metadata-latency rule, the 500 MiB/s floor), and the rules' thresholds at their edges. Real-TF
proofs of every finding, slow-filesystem included, are in tests/integration/test_findings.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tb_iotrace.analysis import FINDING_IDS, MountTable, Thresholds, analyze, parse_mountinfo, stage_name
from tb_iotrace.analysis.thresholds import DEFAULT
from tb_iotrace.analysis.slim_xspace import read_slim_xspace
from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, IoTrace, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, find_plane, load_xspace, read_io_data, thread_line_id

MOUNTINFO = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw
40 27 0:50 / /mnt/gcs rw,relatime - fuse.gcsfuse bucket rw
41 27 0:51 / /mnt/with\\040space rw - nfs4 server:/export rw
"""
MiB = 1 << 20


def make_trace(rows: list[tuple], counters: list[dict] | None = None) -> IoTrace:
    """rows: (op, path, offset, returned, start_ns, dur_ns[, tid])"""
    cols: dict[str, list] = {k: [] for k in ("op", "path", "offset", "requested", "returned", "fd", "errno",
                                            "start_ns", "end_ns", "tid")}
    for r in rows:
        op, path, off, ret, start, dur = r[:6]
        cols["op"].append(op)
        cols["path"].append(path)
        cols["offset"].append(off)
        cols["requested"].append(max(ret, 0))
        cols["returned"].append(ret)
        cols["fd"].append(3)
        cols["errno"].append(0)
        cols["start_ns"].append(start)
        cols["end_ns"].append(start + dur)
        cols["tid"].append(r[6] if len(r) > 6 else 100)
    return IoTrace(**cols, threads={100: (1, "python"), 101: (2, "python")}, counters=counters or [])


def reads(path: str, n: int, size: int, dur_ns: int, t0: int = 10**18, tid: int = 100) -> list[tuple]:
    rows = [("open", path, -1, 3, t0, 5_000, tid)]
    rows += [("pread", path, i * size, size, t0 + 10_000 + i * (dur_ns + 1000), dur_ns, tid) for i in range(n)]
    return rows


def test_mountinfo_parse_and_lookup() -> None:
    m = parse_mountinfo(MOUNTINFO)
    assert [x.mount_point for x in m] == ["/", "/dev/shm", "/mnt/gcs", "/mnt/with space"]
    t = MountTable(m)
    assert t.lookup("/mnt/gcs/train/a.tfrecord").fs_type == "fuse.gcsfuse"
    assert t.lookup("/mnt/gcsx/a").mount_point == "/"          # a prefix of the name is not a parent
    assert t.lookup("/mnt/with space/x").fs_type == "nfs4"
    assert t.lookup("/dev/shm/x").fs_type == "tmpfs"
    assert t.lookup("relative").mount_point == "/"
    assert MountTable([]).lookup("/x").fs_type == "unknown"


def test_slow_filesystem_bandwidth_on_constructed_trace() -> None:
    # 16 MiB in 1 MiB reads from the local disk at 1 ms each (1 GiB/s) and from a gcsfuse mount at
    # 25 ms each (40 MiB/s)
    tr = make_trace(reads("/data/a.tfrecord", 16, MiB, 1_000_000) +
                    reads("/mnt/gcs/b.tfrecord", 16, MiB, 25_000_000, t0=10**18 + 10**9))
    a = analyze(trace=tr, mountinfo=MOUNTINFO)
    assert a.ids == ["slow-filesystem"]
    e = a.finding("slow-filesystem")["evidence"]
    assert e["mount_point"] == "/mnt/gcs" and e["fs_type"] == "fuse.gcsfuse"
    assert e["bandwidth_ratio"] == pytest.approx(25.0)
    assert e["slow_read_bandwidth"] == pytest.approx(MiB / 25e-3)
    assert e["fast_mount_point"] == "/"
    assert a.finding("slow-filesystem")["files"] == ["/mnt/gcs/b.tfrecord"]
    fs = {g["mount_point"]: g for g in a.filesystems}
    assert fs["/"]["bytes_read"] == 16 * MiB and fs["/"]["reads"] == 16 and fs["/"]["num_files"] == 1
    assert fs["/mnt/gcs"]["large_read_bandwidth"] == pytest.approx(MiB / 25e-3)
    assert fs["/mnt/gcs"]["read_latency_median_s"] == pytest.approx(25e-3)
    json.dumps(a.to_dict())
    text = a.text()
    assert "[warning] slow-filesystem: /mnt/gcs (fuse.gcsfuse): reads 25x slower" in text
    assert "/mnt/gcs (fuse.gcsfuse): 1 files, 16 reads, 16.0 MiB read at 40 MiB/s" in text


def test_slow_filesystem_twin_and_floor() -> None:
    # the same reads at the same speed on both: nothing
    tr = make_trace(reads("/data/a", 16, MiB, 1_000_000) + reads("/mnt/gcs/b", 16, MiB, 1_000_000, t0=2 * 10**18))
    assert analyze(trace=tr, mountinfo=MOUNTINFO).ids == []
    # 5x apart but both fast (tmpfs at 5 GiB/s vs disk at 1 GiB/s): over the floor, nothing
    tr = make_trace(reads("/dev/shm/a", 16, MiB, 200_000) + reads("/data/b", 16, MiB, 1_000_000, t0=2 * 10**18))
    assert analyze(trace=tr, mountinfo=MOUNTINFO).ids == []
    # too few reads on one side: no comparison
    tr = make_trace(reads("/data/a", 16, MiB, 1_000_000) + reads("/mnt/gcs/b", 4, MiB, 25_000_000, t0=2 * 10**18))
    assert "slow-filesystem" not in analyze(trace=tr, mountinfo=MOUNTINFO).ids


def test_slow_filesystem_metadata_latency() -> None:
    rows = []
    for i in range(20):
        rows.append(("stat", f"/data/f{i}", -1, 0, 10**18 + i * 10**6, 10_000))
        rows.append(("stat", f"/mnt/with space/f{i}", -1, 0, 10**18 + i * 10**6 + 500_000, 2_000_000))
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO)
    f = a.finding("slow-filesystem")
    assert f is not None, a.ids
    e = f["evidence"]
    assert e["mount_point"] == "/mnt/with space" and e["fs_type"] == "nfs4"
    assert e["latency_ratio"] == pytest.approx(200.0) and e["slow_meta_latency_s"] == pytest.approx(2e-3)


def test_thresholds_table_is_one_dataclass_and_overridable() -> None:
    d = DEFAULT.to_dict()
    assert d["small_read_bytes"] == 64 << 10 and d["staging_file_bytes"] == 2 << 20
    # a 32 KiB read is small by default, not with a 16 KiB threshold
    rows = reads("/data/a", 100, 32 << 10, 50_000)
    assert "small-reads" in analyze(trace=make_trace(rows), mountinfo=MOUNTINFO).ids
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO, thresholds=Thresholds(small_read_bytes=16 << 10))
    assert "small-reads" not in a.ids and a.thresholds["small_read_bytes"] == 16 << 10


def test_small_reads_edges() -> None:
    th = DEFAULT
    n = th.small_read_min_calls
    # exactly the minimum number of small reads, all of the read time: fires with the numbers
    a = analyze(trace=make_trace(reads("/data/a", n, 4096, 10_000)), mountinfo=MOUNTINFO)
    e = a.finding("small-reads")["evidence"]
    assert e["small_reads"] == n and e["small_read_share"] == 1.0 and e["median_small_read_bytes"] == 4096
    # one fewer: not enough calls to matter
    a = analyze(trace=make_trace(reads("/data/a", n - 1, 4096, 10_000)), mountinfo=MOUNTINFO)
    assert "small-reads" not in a.ids
    # many small reads but the large ones take the read time: nothing
    rows = reads("/data/a", 100, 4096, 1_000) + reads("/data/b", 10, 4 * MiB, 1_000_000, t0=2 * 10**18)
    assert "small-reads" not in analyze(trace=make_trace(rows), mountinfo=MOUNTINFO).ids


def test_library_files_are_left_out() -> None:
    rows = [("stat", f"/venv/lib/python3.11/site-packages/m{i}.py", -1, 0, 10**18 + i * 1000, 500)
            for i in range(300)]
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO)
    assert a.ids == [] and a.summary["library_calls_left_out"] == 300 and a.files == []


def test_eof_and_redundant_and_random_from_trace_only() -> None:
    rows = []
    t = 10**18
    for i in range(20):      # 20 one-read files, each with its EOF probe
        p = f"/data/s{i}"
        rows += [("open", p, -1, 3, t, 1000), ("pread", p, 0, 4000, t + 2000, 1000),
                 ("pread", p, 4000, 0, t + 4000, 1000), ("close", p, -1, 0, t + 6000, 1000)]
        t += 10_000
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO)
    e = a.finding("eof-zero-reads")["evidence"]
    assert e["zero_length_reads"] == 20 and e["files_read"] == 20 and e["zero_read_share"] == 0.5
    # the same file read three times
    rows = reads("/data/r", 8, MiB, 100_000) * 1
    rows += reads("/data/r", 8, MiB, 100_000, t0=2 * 10**18) + reads("/data/r", 8, MiB, 100_000, t0=3 * 10**18)
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO)
    e = a.finding("redundant-reads")["evidence"]
    assert e["ratio"] == 3.0 and e["redundant_bytes"] == 16 * MiB


def test_stage_names_drop_indices() -> None:
    assert stage_name("Iterator::Root::Prefetch::ParallelInterleaveV4[12]::FlatMap[0]::TFRecord") == \
        "Iterator::Root::Prefetch::ParallelInterleaveV4::FlatMap::TFRecord"
    assert FINDING_IDS == ["input-bound", "worker-restarts", "small-reads", "eof-zero-reads", "many-small-files",
                           "metadata-heavy", "random-access", "redundant-reads", "serial-reads", "staging-candidates",
                           "blocking-writes", "small-writes", "slow-filesystem",
                           "checkpoint-blocking", "checkpoint-small-writes", "checkpoint-fsync",
                           "object-small-requests", "object-serial-requests", "object-refetch",
                           "object-metadata-storm", "object-throttled"]


def test_empty_trace_and_mount_note() -> None:
    a = analyze(trace=IoTrace.empty())
    assert a.ids == [] and a.steps == [] and a.filesystems == []
    assert any("mountinfo" in n for n in a.notes)
    assert np.isfinite(a.summary["bytes_read"])


def _file_rows(path: str, size: int, t0: int, meta_ns: int = 20_000, read_ns: int = 10_000) -> list[tuple]:
    return [("open", path, -1, 3, t0, meta_ns), ("pread", path, 0, size, t0 + 100_000, read_ns),
            ("close", path, -1, 0, t0 + 200_000, meta_ns)]


def test_staging_vs_many_small_files() -> None:
    t = 10**18
    small = [r for i in range(40) for r in _file_rows(f"/data/s{i}", 4000, t + i * 10**6)]
    big = [r for i in range(2) for r in _file_rows(f"/data/b{i}", 4 * MiB, t + 10**9 + i * 10**6,
                                                   read_ns=2_000_000)]
    a = analyze(trace=make_trace(small + big), mountinfo=MOUNTINFO)
    e = a.finding("staging-candidates")["evidence"]
    assert e["small_files"] == 40 and e["large_files"] == 2 and e["open_share"] == 40 / 42
    assert e["byte_share"] == pytest.approx(40 * 4000 / (40 * 4000 + 8 * MiB))
    # only small files: no large tier to stage from, but many small files with their metadata cost
    a = analyze(trace=make_trace(small), mountinfo=MOUNTINFO)
    assert "staging-candidates" not in a.ids
    e = a.finding("many-small-files")["evidence"]
    assert e["files"] == 40 and e["median_bytes_per_file"] == 4000 and e["meta_time_share"] == pytest.approx(0.8)
    # too few files for either
    a = analyze(trace=make_trace(small[:3 * 10]), mountinfo=MOUNTINFO)
    assert "many-small-files" not in a.ids


def test_small_writes_edges() -> None:
    t = 10**18
    rows = [("write", "/data/log", i * 30, 30, t + i * 10_000, 2_000) for i in range(100)]
    e = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO).finding("small-writes")["evidence"]
    assert e["small_writes"] == 100 and e["median_bytes"] == 30 and e["bytes_written"] == 3000
    assert "small-writes" not in analyze(trace=make_trace(rows[:99]), mountinfo=MOUNTINFO).ids
    # fsync calls are not writes for this rule
    rows2 = rows[:99] + [("fsync", "/data/log", -1, 0, t + 10**9, 1_000_000)]
    assert "small-writes" not in analyze(trace=make_trace(rows2), mountinfo=MOUNTINFO).ids


# ----------------------------------------------------------------------------- reading a file column-wise


def _capture_file(tmp_path, steps: int = 6) -> tuple[str, IoTrace]:
    """A capture without TensorFlow: Task Environment (profile start), a host line with train steps,
    input waits and a tf.data iterator, a device plane, and I/O merged in by add_io_to_space."""
    base = 1_700_000_000_000_000_000
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    for k, name in enumerate(("train", "IteratorGetNext", "Iterator::Root::FlatMap[3]::TFRecord"), 1):
        host.event_metadata[k].CopyFrom(XEventMetadata(id=k, name=name))
    host.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="step_num"))
    line = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    ms = 10**9                                  # ps
    rows = []
    for k in range(steps):
        t = 10 * k * ms
        ev = line.events.add(metadata_id=1, offset_ps=t, duration_ps=8 * ms)
        ev.stats.add(metadata_id=1, int64_value=k)
        line.events.add(metadata_id=2, offset_ps=t, duration_ps=3 * ms)
        line.events.add(metadata_id=3, offset_ps=t + ms // 2, duration_ps=2 * ms)
        start = base + t // 1000 + 10**6         # 1 ms into the step, inside the iterator
        rows.append(("pread64", "/data/a.tfrecord", k * MiB, MiB, start, 500_000, 100))
    gpu = sp.planes.add(id=3, name="/device:GPU:0")
    gpu.event_metadata[1].CopyFrom(XEventMetadata(id=1, name="kernel"))
    gline = gpu.lines.add(id=1, name="stream")
    for k in range(50):
        gline.events.add(metadata_id=1, offset_ps=k * ms, duration_ps=ms // 2)
    tr = make_trace([("open", "/data/a.tfrecord", -1, 3, base + 10**5, 5_000, 100)] + rows)
    tr.threads = {100: ThreadInfo(77, "python")}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path), tr


def test_file_is_read_column_wise_like_the_protobuf_reader(tmp_path) -> None:
    path, _ = _capture_file(tmp_path)
    space = load_xspace(path)
    want = read_io_data(space)
    slim, got = read_slim_xspace(path)
    for col in ("op", "path", "offset", "requested", "returned", "fd", "errno", "start_ns", "end_ns", "tid"):
        assert np.array_equal(getattr(got, col), getattr(want, col)), col
    assert (got.threads, got.counters, got.dropped, got.mounts) == (want.threads, want.counters, want.dropped,
                                                                   want.mounts)
    # the slim space: host lines without the I/O lines, stats kept; other planes without events
    host = find_plane(slim, HOST_PLANE)
    assert [ln.name for ln in host.lines] == ["python"]
    assert host.lines[0] == find_plane(space, HOST_PLANE).lines[0]
    assert find_plane(slim, "/device:GPU:0").lines == [] and find_plane(slim, TASK_ENV_PLANE) is not None
    # the analysis of the file equals the analysis of the parsed space
    a, b = analyze(path), analyze(space)
    assert a.to_dict() == b.to_dict()
    assert len(a.steps) == 6 and a.stages[0]["stage"] == "Iterator::Root::FlatMap::TFRecord"
    assert a.stages[0]["reads"] == 6 and a.summary["bytes_read"] == 6 * MiB


def test_file_without_io_data(tmp_path) -> None:
    path = tmp_path / "plain.xplane.pb"
    sp = XSpace()
    sp.planes.add(id=2, name=HOST_PLANE).lines.add(id=1, name="python")
    path.write_bytes(sp.SerializeToString())
    assert analyze(str(path)) is None
    assert read_slim_xspace(path)[1] is None


def test_events_that_differ_from_their_kind_read_back_exactly(tmp_path) -> None:
    """Format /2 keeps path, fd and the first event's byte counts on the event's kind and writes
    per event only what differs: a short read, an EOF read, a failed call and a second fd of the
    same file must come back from the column-wise reader exactly as written."""
    base = 1_700_000_000_000_000_000
    rows = [("open", "/data/a.bin", -1, 3, base + 1_000, 5_000)]
    rows += [("pread64", "/data/a.bin", k * 4096, 4096, base + 10_000 * (k + 1), 2_000) for k in range(6)]
    tr = make_trace(rows)
    tr.requested[4] = 8192          # short read: asked 8192, got 4096
    tr.returned[5], tr.requested[5] = 0, 4096          # EOF
    tr.returned[6], tr.requested[6], tr.errno[6] = -1, 4096, 5   # failed (EIO)
    tr.fd[3] = 7                    # same file through another descriptor
    tr.threads = {100: ThreadInfo(77, "python")}
    sp = XSpace()
    sp.planes.add(id=2, name=HOST_PLANE).lines.add(id=thread_line_id(77), name="python")
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / "kinds.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    want = read_io_data(load_xspace(path))
    _, got = read_slim_xspace(path)
    for col in ("op", "path", "offset", "requested", "returned", "fd", "errno", "start_ns", "end_ns", "tid"):
        assert np.array_equal(getattr(got, col), getattr(want, col)), col
        assert np.array_equal(getattr(got, col), getattr(tr, col)), col



# ----------------------------------------------------------------------------- serial-reads


def _stepped_capture(tmp_path, overlap: bool) -> str:
    """12 steps of 10 ms, each waiting 8 ms in IteratorGetNext; inside each wait two 3 ms reads
    on two threads: one after the other (a serial reader that hops threads), or at once."""
    base = 1_700_000_000_000_000_000
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    for k, name in enumerate(("train", "IteratorGetNext"), 1):
        host.event_metadata[k].CopyFrom(XEventMetadata(id=k, name=name))
    host.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="step_num"))
    line = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    ms_ps, ms_ns = 10**9, 10**6
    rows = [("open", "/data/a.bin", -1, 3, base, 1000, 100)]
    for k in range(12):
        ev = line.events.add(metadata_id=1, offset_ps=10 * k * ms_ps, duration_ps=10 * ms_ps)
        ev.stats.add(metadata_id=1, int64_value=k)
        line.events.add(metadata_id=2, offset_ps=10 * k * ms_ps, duration_ps=8 * ms_ps)
        t = base + 10 * k * ms_ns + ms_ns
        second = t if overlap else t + 3 * ms_ns
        rows += [("read", "/data/a.bin", 2 * k * MiB, MiB, t, 3 * ms_ns, 100 + k % 2),
                 ("read", "/data/a.bin", (2 * k + 1) * MiB, MiB, second, 3 * ms_ns, 101 - k % 2)]
    tr = make_trace(rows)
    tr.threads = {100: ThreadInfo(1, "tf_data"), 101: ThreadInfo(2, "tf_data")}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / f"overlap{int(overlap)}.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path)


def test_serial_reads_judges_reads_in_flight_not_threads(tmp_path) -> None:
    """Reads on two threads that never overlap are one reader: serial-reads, with the evidence
    by hand (24 reads of 3 ms, all inside the waits, one at a time). The same reads two at a
    time are parallel: no serial-reads, though the steps wait just as long."""
    a = analyze(_stepped_capture(tmp_path, overlap=False), mountinfo=MOUNTINFO)
    e = a.finding("serial-reads")["evidence"]
    assert (e["reads"], e["reading_threads"], e["top_thread_read_share"]) == (24, 2, 0.5)
    assert e["max_reads_in_flight"] == 1 and e["overlapped_share"] == 0.0
    assert e["read_during_wait_s"] == pytest.approx(24 * 3e-3)
    # the waits: 12 x 8 ms; file I/O in them: 12 x 6 ms of reads and the 1 us open
    assert e["input_wait_share"] == pytest.approx(0.8) and e["io_share_of_wait"] == pytest.approx((72e6 + 1e3) / 96e6)
    assert "one at a time (2 threads)" in a.finding("serial-reads")["statement"]
    b = analyze(_stepped_capture(tmp_path, overlap=True), mountinfo=MOUNTINFO)
    assert "serial-reads" not in b.ids and "input-bound" in b.ids


def _two_readers(path: str, chunks: int) -> list[tuple]:
    """Two DataLoader-like workers (tids 100, 101) each open ``path`` and read ``chunks`` x 64 KiB
    from offset 0, one after the other: a file re-read, or a pipe whose bytes they share."""
    rows, t = [], 10**18
    for tid in (100, 101):
        rows.append(("open", path, -1, 3, t, 5_000, tid))
        for i in range(chunks):
            rows.append(("read", path, i * 65536, 65536, t + 10_000 + i * 200_000, 150_000, tid))
        t += 10**9
    return rows


def test_named_pipe_reads_are_never_redundant(tmp_path) -> None:
    """Workers reading one named pipe moved every byte once, but a pipe has no size,
    so each worker's stream from "offset 0" looked like the same file read twice. The same
    rows on a regular file are redundant-reads (the twin); on a FIFO (the path exists as one
    where the analysis runs) they never are."""
    import os

    fifo = tmp_path / "feed.fifo"
    os.mkfifo(fifo)
    regular = tmp_path / "data.bin"
    regular.write_bytes(b"x" * (8 * 65536))
    twin = analyze(trace=make_trace(_two_readers(str(regular), 8)), mountinfo=MOUNTINFO)
    assert twin.finding("redundant-reads")["evidence"]["ratio"] == 2.0
    a = analyze(trace=make_trace(_two_readers(str(fifo), 8)), mountinfo=MOUNTINFO)
    assert "redundant-reads" not in a.ids
    assert not any("read more than once" in f["title"] or "read again" in f["statement"] for f in a.findings)
    assert next(f for f in a.files if f["path"] == str(fifo))["file_type"] == "fifo"


def test_read_ahead_windows_are_neither_random_nor_redundant() -> None:
    """Grain's ArrayRecord reader reads each record from its offset to the next 32 KiB
    boundary (records of 76 bytes compressed): 24 reads, each starting inside the previous one
    and after its start. The file is scanned forwards once; the overlap is the reader's
    read-ahead window read again, not the file read again, nor a read going backwards. A file
    read twice from its start stays redundant."""
    t, rows = 10**18, []
    for k in range(24):
        off = 216 + 76 * k
        rows.append(("pread64", "/data/d.array_record", off, 32768 - off, t + k * 100_000, 10_000))
    a = analyze(trace=make_trace(rows), mountinfo=MOUNTINFO)
    assert "random-access" not in a.ids and "redundant-reads" not in a.ids
    again = [(op, p, off, n, start + j * 10**9, d) for j in range(10) for op, p, off, n, start, d in rows]
    e = analyze(trace=make_trace(again), mountinfo=MOUNTINFO).finding("redundant-reads")["evidence"]
    assert e["ratio"] == pytest.approx(10 * 32552 / 32768)     # the first read of each scan, once
    assert e["redundant_bytes"] == 10 * 32552 - 32768
    # the same window read twice in a row does not move forwards: read again
    twice = [r for r in rows[:1] for _ in range(10)]
    twice = [(op, p, off, n, start + j * 100_000, d) for j, (op, p, off, n, start, d) in enumerate(twice)]
    assert analyze(trace=make_trace(twice), mountinfo=MOUNTINFO).finding("redundant-reads")["evidence"][
        "redundant_bytes"] == 10 * 32552 - 32768
