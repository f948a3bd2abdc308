"""Checkpoint phases found by the files' shape on constructed traces (tb_iotrace.analysis.checkpoints.detection)."""
from __future__ import annotations

from pathlib import Path

from tb_iotrace.analysis import analyze
from tb_iotrace.analysis.checkpoints.detection import MIN_BYTES
from tb_iotrace.store.xplane import IoTrace

MOUNTS = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
MiB = 1 << 20
T0 = 10**18


def make_trace(rows: list[tuple]) -> IoTrace:
    """rows: (op, path, offset, returned, start_ns, dur_ns[, tid])"""
    cols: dict[str, list] = {k: [] for k in ("op", "path", "offset", "requested", "returned", "fd", "errno",
                                            "start_ns", "end_ns", "tid")}
    for r in rows:
        op, path, off, ret, start, dur = r[:6]
        for k, v in zip(("op", "path", "offset", "requested", "returned", "fd", "errno", "start_ns", "end_ns", "tid"),
                        (op, path, off, max(ret, 0), ret, 3, 0, start, start + dur, r[6] if len(r) > 6 else 100)):
            cols[k].append(v)
    return IoTrace(**cols, threads={100: (1, "python"), 101: (2, "python")}, counters=[])


def save(path: str, t: int, nbytes: int, chunk: int, *, fsync: bool = True, rename: str | None = None,
         tid: int = 100, write_ns: int = 1_000_000) -> tuple[list[tuple], int]:
    """A save: open, writes of ``chunk`` from offset 0, [fsync], close, [rename]; (rows, end)."""
    rows = [("open", path, -1, 3, t, 10_000, tid)]
    t += 20_000
    for i in range(nbytes // chunk):
        rows.append(("pwrite64", path, i * chunk, chunk, t, write_ns, tid))
        t += write_ns + 5_000
    if fsync:
        rows.append(("fsync", path, -1, 0, t, 30_000_000, tid))
        t += 30_000_000
    rows.append(("close", path, -1, 0, t, 5_000, tid))
    t += 10_000
    if rename:
        rows.append(("rename", path, -1, 0, t, 50_000, tid))
        t += 50_000
    return rows, t


def training(n_steps: int, every: int, *, step_ns: int = 100_000_000, **kw) -> tuple[IoTrace, int]:
    """A loop: a small log write per step, a save every ``every`` steps; (trace, total save time)."""
    rows, t, saved = [], T0, 0
    rows.append(("open", "/data/log.txt", -1, 3, t, 5_000))
    for k in range(n_steps):
        rows.append(("write", "/data/log.txt", -1, 80, t, 10_000))
        t += step_ns
        if (k + 1) % every == 0:
            got, end = save(f"/data/run/step{k + 1}.tmp", t, 8 * MiB, 1 * MiB, rename=f"/data/run/step{k + 1}", **kw)
            rows += got
            saved += end - t
            t = end
    return make_trace(rows), saved


def test_saves_found_with_bytes_fsync_and_blocking() -> None:
    trace, saved = training(20, 5)
    a = analyze(None, trace=trace, mountinfo=MOUNTS)
    saves = [p for p in a.checkpoints if p["kind"] == "save"]
    assert len(saves) == 4
    assert all(p["bytes"] == 8 * MiB and p["files"] == 1 for p in saves)
    assert all(abs(p["fsync_time_s"] - 0.03) < 1e-9 for p in saves)
    assert all(p["source"] == "shape" and p["path"].endswith(".tmp") for p in saves)
    # no steps: the phase's time on the main thread (the lowest thread id) is the blocking time
    assert abs(sum(p["blocking_ns"] for p in saves) - saved) <= 4 * 20_000
    assert a.to_dict()["checkpoints"] == a.checkpoints
    f = a.finding("checkpoint-blocking")
    assert f is not None
    assert abs(f["impact"]["step_share"] - saved / (trace.end_ns.max() - trace.start_ns.min())) < 0.01
    assert "Checkpoints" in a.text()


def test_save_off_the_main_thread_does_not_block() -> None:
    trace, _ = training(20, 5, tid=101)
    a = analyze(None, trace=trace, mountinfo=MOUNTS)
    assert len(a.checkpoints) == 4
    assert all(p["blocking_ns"] == 0 for p in a.checkpoints)
    assert sum(p["fsync_time_s"] for p in a.checkpoints) > 0.1       # the saver thread synced ...
    # ... at no cost to the loop: a checkpoint finding with no impact on training is not made
    # (saving in the background is the advice they give)
    assert not [f["id"] for f in a.findings if f["id"].startswith("checkpoint-")], a.ids


def test_a_records_main_thread_is_its_pid_not_the_lowest_thread_id() -> None:
    """Process ids wrap: a rank with pid 32761 had its checkpoint writer thread at tid 311 (a
    stress run of test_dcp_ranks): the writer's saves were called blocking. A whole-run record
    names its pid, and the thread with that id is the main thread."""
    trace, saved = training(20, 5, tid=101)                   # the loop's log writes on 100
    trace.tid[trace.tid == 100] = 32761
    trace.threads = {32761: trace.threads[100], 101: trace.threads[101]}
    trace.pid = 32761
    a = analyze(None, trace=trace, mountinfo=MOUNTS)
    assert len(a.checkpoints) == 4 and all(p["blocking_ns"] == 0 for p in a.checkpoints)
    trace.pid = 101                                            # the saves on the main thread: blocking
    a = analyze(None, trace=trace, mountinfo=MOUNTS)
    assert abs(sum(p["blocking_ns"] for p in a.checkpoints) - saved) <= 4 * 20_000


def test_large_output_without_sync_or_checkpoint_name_is_no_checkpoint() -> None:
    rows, _ = save("/data/out/features.npy", T0, 16 * MiB, MiB, fsync=False)
    rows += save("/data/log.txt", T0 + 10**9, 2 * MiB, 4096, fsync=False)[0]
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert a.checkpoints == []
    assert not [f for f in a.findings if f["id"].startswith("checkpoint-")]


def test_appending_is_no_save_and_small_bursts_are_not_either() -> None:
    rows = [("pwrite64", "/data/model.ckpt", 8 * MiB + i * MiB, MiB, T0 + i * 2_000_000, 1_000_000)
            for i in range(4)]                                      # appends at 8 MiB: not a new copy
    rows += save("/data/other.ckpt", T0 + 10**9, MIN_BYTES // 2, 4096)[0]   # under MIN_BYTES
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert a.checkpoints == []


def test_named_checkpoint_without_fsync_is_a_save_and_its_read_at_start_a_load() -> None:
    rows = [("open", "/ckpt/model.pt", -1, 3, T0, 10_000)]
    rows += [("read", "/ckpt/model.pt", i * MiB, MiB, T0 + 20_000 + i * 1_100_000, 1_000_000) for i in range(4)]
    got, _ = save("/ckpt/model.pt", T0 + 2 * 10**9, 4 * MiB, 256, fsync=False, write_ns=10_000)
    a = analyze(None, trace=make_trace(rows + got), mountinfo=MOUNTS)
    kinds = [p["kind"] for p in a.checkpoints]
    assert kinds == ["load", "save"]
    load, sv = a.checkpoints
    assert load["bytes"] == 4 * MiB and sv["bytes"] == 4 * MiB and sv["calls"] == 16384
    f = a.finding("checkpoint-small-writes")
    assert f is not None and f["evidence"]["median_bytes"] == 256.0 and "impact" in f
    assert a.finding("checkpoint-fsync") is None


def test_fsync_dominating_is_a_finding() -> None:
    rows, _ = save("/data/a.tmp", T0, 4 * MiB, MiB, rename="/data/a", write_ns=100_000)
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    f = a.finding("checkpoint-fsync")
    assert f is not None and f["evidence"]["fsync_share"] > 0.9
    assert set(f["impact"]) >= {"step_share", "ms_per_step"} and f["impact"]["ms_per_step"] is None   # no steps
    assert abs(f["evidence"]["fsync_on_training_thread_s"] - 0.03) < 1e-9 and f["impact"]["step_share"] > 0.5


def test_files_written_together_are_one_phase() -> None:
    a1, end = save("/data/ck/shard0.distcp", T0, 4 * MiB, MiB)
    a2, _ = save("/data/ck/shard1.distcp", end + 1000, 4 * MiB, MiB)
    a = analyze(None, trace=make_trace(a1 + a2), mountinfo=MOUNTS)
    assert len(a.checkpoints) == 1
    assert a.checkpoints[0]["files"] == 2 and a.checkpoints[0]["bytes"] == 8 * MiB


def test_pauses_shorter_than_the_gap_keep_one_burst() -> None:
    """Serialising between writes (milliseconds) does not split a save (a gap is 0.5 s)."""
    rows, t = [("open", "/data/m.pt", -1, 3, T0, 10_000)], T0 + 20_000
    for i in range(8):
        rows.append(("write", "/data/m.pt", i * MiB, MiB, t, 100_000))
        t += 100_000 + 5_000_000                         # 5 ms of pickling between writes
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert [(p["kind"], p["bytes"]) for p in a.checkpoints] == [("save", 8 * MiB)]


def test_saves_a_fraction_of_a_second_apart_stay_apart() -> None:
    """Fast steps: saves 0.2 s apart are separate phases, and a file written twice is two saves."""
    rows, t = [], T0
    for path in ("/data/s1.pt", "/data/s2.pt", "/data/s2.pt"):
        got, end = save(path, t, 2 * MiB, MiB, write_ns=100_000)
        rows += got
        t = end + 200_000_000
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert [(p["path"], p["bytes"]) for p in a.checkpoints] == [("/data/s1.pt", 2 * MiB), ("/data/s2.pt", 2 * MiB),
                                                                ("/data/s2.pt", 2 * MiB)]


def _tf_capture(tmp_path) -> str:
    """A capture with 10 steps "train" of 10 ms on the training thread (pthread 77, tid 100):
    after step 4 a 40 ms gap in which that thread saves /ck/a.ckpt (fsync); during steps 7-8 a
    background thread (pthread 78, tid 101) saves /ck/b.ckpt."""
    from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, thread_line_id
    base = 1_700_000_000_000_000_000
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    host.event_metadata[1].CopyFrom(XEventMetadata(id=1, name="train"))
    host.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="step_num"))
    line = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    host.lines.add(id=thread_line_id(78), name="saver", timestamp_ns=0)
    ms = 10**6
    t, rows = 0, []
    for k in range(10):
        ev = line.events.add(metadata_id=1, offset_ps=t * 1000, duration_ps=10 * ms * 1000)
        ev.stats.add(metadata_id=1, int64_value=k)
        if k == 6:
            got, _ = save("/ck/b.ckpt", base + t + ms, 4 * MiB, MiB, tid=101, write_ns=100_000)
            rows += got
        t += 10 * ms
        if k == 4:
            got, end = save("/ck/a.ckpt", base + t, 4 * MiB, MiB, write_ns=2 * ms)
            rows += got
            t = end - base + 100_000
    tr = make_trace(rows)
    tr.threads = {100: ThreadInfo(77, "python"), 101: ThreadInfo(78, "saver")}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path)


def test_capture_with_steps_blocks_on_the_training_thread_only(tmp_path) -> None:
    a = analyze(_tf_capture(tmp_path), mountinfo=MOUNTS)
    assert [(p["path"], p["bytes"]) for p in a.checkpoints] == [("/ck/a.ckpt", 4 * MiB), ("/ck/b.ckpt", 4 * MiB)]
    fg, bg = a.checkpoints
    assert fg["blocking_ns"] == fg["end_ns"] - fg["start_ns"] and fg["blocking_ns"] > 30 * 10**6
    assert bg["blocking_ns"] == 0                            # in the background, while steps ran
    f = a.finding("checkpoint-blocking")
    span = a.steps[-1]["end_ps"] - a.steps[0]["start_ps"]
    assert f is not None and f["impact"]["basis"] == "steps"
    assert abs(f["impact"]["step_share"] - fg["blocking_ns"] * 1000 / span) < 1e-9
    assert abs(f["impact"]["ms_per_step"] - fg["blocking_ns"] / 1e6 / 10) < 1e-9


def test_small_index_beside_the_data_joins_the_save_and_other_files_do_not() -> None:
    rows, t = save("/ck/m.data-00000-of-00001", T0, 4 * MiB, MiB, fsync=False)
    rows += [("open", "/ck/m.index", -1, 3, t, 1000), ("write", "/ck/m.index", 0, 1024, t + 2000, 1000),
             ("open", "/ck/result.json", -1, 3, t + 5000, 1000), ("write", "/ck/result.json", 0, 440, t + 7000, 1000)]
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    (ph,) = a.checkpoints
    assert (ph["files"], ph["bytes"]) == (2, 4 * MiB + 1024)
    assert sorted(ph["paths"]) == ["/ck/m.data-00000-of-00001", "/ck/m.index"]


def _capture(tmp_path, n_steps: int, step_ms: int, first_step_ms: int, rows: list[tuple], base: int) -> str:
    """A capture with ``n_steps`` steps "train" of ``step_ms`` back to back from ``first_step_ms``
    on the training thread (pthread 77, tid 100), a background thread (pthread 78, tid 101), and
    the I/O ``rows`` (times epoch ns from ``base``)."""
    from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, thread_line_id
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    host.event_metadata[1].CopyFrom(XEventMetadata(id=1, name="train"))
    host.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="step_num"))
    line = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    host.lines.add(id=thread_line_id(78), name="saver", timestamp_ns=0)
    ms = 10**6
    for k in range(n_steps):
        ev = line.events.add(metadata_id=1, offset_ps=(first_step_ms + k * step_ms) * ms * 1000,
                             duration_ps=step_ms * ms * 1000)
        ev.stats.add(metadata_id=1, int64_value=k)
    tr = make_trace(rows)
    tr.threads = {100: ThreadInfo(77, "python"), 101: ThreadInfo(78, "saver")}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path)


def _rewrite(path: str, t: int, nbytes: int, tid: int, fsync_ns: int = 5_000_000) -> tuple[list[tuple], int]:
    """Python's ``open(path, "wb").write(payload); flush; fsync; close``: one write of the whole
    file at offset 0 (the shim resolves the file position), the sync, the close; (rows, end)."""
    rows = [("open", path, -1, 3, t, 10_000, tid), ("write", path, 0, nbytes, t + 20_000, 1_000_000, tid),
            ("fsync", path, -1, 0, t + 1_100_000, fsync_ns, tid),
            ("close", path, -1, 0, t + 1_200_000 + fsync_ns, 5_000, tid)]
    return rows, t + 1_300_000 + fsync_ns


def test_a_file_rewritten_whole_from_offset_0_is_a_save_each_time() -> None:
    """A background thread rewriting one file (a single write at offset 0) every 50 ms: each
    rewrite is a save (the file started again), not one save of all of them."""
    rows, t = [], T0
    for _ in range(12):
        got, end = _rewrite("/data/ckpt_async.bin", t, 2 * MiB, tid=101)
        rows += got
        t = end + 50_000_000
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert [(p["kind"], p["bytes"], p["calls"]) for p in a.checkpoints] == [("save", 2 * MiB, 1)] * 12


def test_background_saves_before_the_steps_block_nothing(tmp_path) -> None:
    """A saver thread starts while the job warms up (no step yet) and goes on during the steps:
    nothing ran on the training thread, so no save blocked the loop and no finding is made
    (time before the first step is not the loop waiting for it)."""
    base, ms, rows = 1_700_000_000_000_000_000, 10**6, []
    for k in range(8):                       # every 100 ms from t=0; the steps start at 600 ms
        rows += _rewrite(f"/ck/bg{k}.ckpt", base + k * 100 * ms, 2 * MiB, tid=101, fsync_ns=40 * ms)[0]
    a = analyze(_capture(tmp_path, 20, 10, 600, rows, base), mountinfo=MOUNTS)
    saves = [p for p in a.checkpoints if p["kind"] == "save"]
    assert len(saves) == 8 and len(a.steps) == 20
    assert [p["blocking_ns"] for p in saves] == [0] * 8
    assert not [f["id"] for f in a.findings if f["id"].startswith("checkpoint-")], a.ids


def test_blocking_share_is_clipped_to_the_training_time(tmp_path) -> None:
    """The training thread saves once between steps (40 ms, inside the training time) and once
    long after the last step (500 ms): the finding's blocked time is the part within the steps'
    span, never more than 100% of it."""
    base, ms = 1_700_000_000_000_000_000, 10**6
    inside, _ = save("/ck/mid.ckpt", base + 55 * ms, 4 * MiB, MiB, write_ns=2 * ms)
    after, _ = save("/ck/final.ckpt", base + 300 * ms, 4 * MiB, MiB, write_ns=117 * ms)
    # steps 0-4 from 0 ms, then steps 5-9 from 100 ms (the 45 ms gap holds the first save)
    path = _capture(tmp_path, 5, 10, 0, inside + after, base)
    from tb_iotrace.store.xplane import HOST_PLANE, XSpace, find_plane
    sp = XSpace.FromString(Path(path).read_bytes())
    line = find_plane(sp, HOST_PLANE).lines[0]
    for k in range(5, 10):
        ev = line.events.add(metadata_id=1, offset_ps=(100 + (k - 5) * 10) * ms * 1000, duration_ps=10 * ms * 1000)
        ev.stats.add(metadata_id=1, int64_value=k)
    Path(path).write_bytes(sp.SerializeToString())
    a = analyze(path, mountinfo=MOUNTS)
    mid, final = [p for p in a.checkpoints if p["kind"] == "save"]
    assert final["blocking_ns"] > 400 * ms                    # the thread did wait for it ...
    f = a.finding("checkpoint-blocking")
    span = a.steps[-1]["end_ps"] - a.steps[0]["start_ps"]     # ... but not during training
    assert f is not None and 0 < f["impact"]["step_share"] <= 1.0
    assert abs(f["impact"]["step_share"] - mid["blocking_ns"] * 1000 / span) < 1e-9
    assert abs(f["evidence"]["blocking_s"] - mid["blocking_ns"] / 1e9) < 1e-9


def test_rewrites_on_the_training_thread_each_block_for_their_own_calls() -> None:
    """The training thread rewrites one file every step (10 ms of compute between): each save
    holds its own open ... close only, not the opens of the saves before it nor the next one's
    calls, and blocks for that long."""
    rows, t, spans = [("open", "/data/log.txt", -1, 3, T0, 5_000)], T0 + 10_000, []
    for _ in range(6):
        got, end = _rewrite("/data/ckpt.bin", t, 2 * MiB, tid=100)
        rows += got
        spans.append((t, end))
        t = end + 10_000_000
    rows.append(("write", "/data/log.txt", -1, 80, t, 10_000))
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    saves = a.checkpoints
    assert [(p["bytes"], p["calls"]) for p in saves] == [(2 * MiB, 1)] * 6
    assert [(p["start_ns"], p["end_ns"]) for p in saves] == [(s, e - 1_300_000 - 5_000_000 + 1_200_000 + 5_000_000 + 5_000)
                                                             for s, e in spans]
    assert [p["blocking_ns"] for p in saves] == [p["end_ns"] - p["start_ns"] for p in saves]


def test_a_load_going_back_to_the_start_of_its_file_is_one_load() -> None:
    """torch.load reads a zip's first bytes, then reads it again from offset 0: one load with all
    the bytes it read (a read at offset 0 is no new load, unlike a write)."""
    rows = [("open", "/ckpt/init.pt", -1, 3, T0, 10_000), ("read", "/ckpt/init.pt", 0, 128, T0 + 20_000, 10_000)]
    rows += [("read", "/ckpt/init.pt", i * MiB, MiB, T0 + 100_000 + i * 1_100_000, 1_000_000) for i in range(4)]
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    assert [(p["kind"], p["bytes"], p["calls"]) for p in a.checkpoints] == [("load", 4 * MiB + 128, 5)]


def test_the_same_layout_saved_again_into_another_folder_right_after_is_a_second_save() -> None:
    """Two saves back to back (DCP's save into step8, then into step8b, 10 ms apart on one
    thread): the same file name in another folder starts the next save; files of one save
    written one after the other in one folder stay one save."""
    rows, t = [], T0
    for folder in ("/ck/step8", "/ck/step8b"):
        for name in ("__0_0.distcp", "__0_1.distcp"):
            got, t = save(f"{folder}/{name}", t, 4 * MiB, MiB)
            rows += got
            t += 5_000_000
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS)
    saves = [p for p in a.checkpoints if p["kind"] == "save"]
    assert [(p["files"], p["bytes"]) for p in saves] == [(2, 8 * MiB), (2, 8 * MiB)], saves
    assert [sorted(p["paths"]) for p in saves] == [[f"{d}/__0_0.distcp", f"{d}/__0_1.distcp"]
                                                   for d in ("/ck/step8", "/ck/step8b")]
