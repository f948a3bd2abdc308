"""Checkpoint phases found by the files' shape on constructed traces (tb_iotrace.analysis.checkpoints)."""
from __future__ import annotations

from tb_iotrace.analysis import analyze
from tb_iotrace.analysis.checkpoints import MIN_BYTES
from tb_iotrace.xplane import IoTrace

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
    assert a.finding("checkpoint-blocking") is None
    f = a.finding("checkpoint-fsync")          # the saver thread's syncs: no cost to the loop
    assert f is not None and f["impact"]["step_share"] == 0.0 and f["severity"] == "info"


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
    from tb_iotrace.xplane import (HOST_PLANE, TASK_ENV_PLANE, ThreadInfo, XEventMetadata, XSpace, XStatMetadata,
                                   add_io_to_space, thread_line_id)
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
