"""The verdict (tb_iotrace.analysis.verdict): how much of step time waits for input,
how that wait divides into file I/O, decode, starved, copy and other, and the change with the
biggest expected effect, on synthetic PyTorch traces (with and without the workers' fetch
spans), a synthetic TF capture with tf.data iterator threads, and the real H200 trace."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.store.kineto_xspace import read_xspace

import torch_fetch_trace

DATA = Path(__file__).resolve().parents[1] / "data"


def _verdict(path: Path) -> dict:
    a = analyze(read_xspace(path))
    assert a is not None
    return a.verdict


def test_decode_bound_workers(tmp_path: Path) -> None:
    """Every 4 ms wait of a 10 ms step: a worker fetching all of it, reading for 1 ms of it:
    file_io 1/4, decode 3/4; advice: more workers, by the stated model."""
    p = tmp_path / "decode.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    v = _verdict(p)
    assert v["input_wait_share"] == pytest.approx(0.4) and v["basis"] == "steps" and v["bound"] == "input"
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "object_io": 0.0, "decode": 0.75, "starved": 0.0, "copy": 0.0,
                                                 "other": 0.0})
    assert v["unmeasured"] == [] and v["cause"] == "decode"
    # ceil(1.5 x 2 / (1 - 0.4)) = 5 workers; step time max(0.6, 2/5) = 60% of now
    assert v["change"].startswith("num_workers=2 -> 5")
    assert v["expected_step_time_change"] == pytest.approx(-0.4)
    assert "expected step time -40%" in v["advice"] and "up to 40%" in v["advice"]


def test_starved_workers(tmp_path: Path) -> None:
    """The workers fetch for 2 ms of each 4 ms wait (reading 1 ms of it), then nothing is in
    flight: starved 1/2; persistent workers: a larger prefetch_factor."""
    p = tmp_path / "starved.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=2)
    v = _verdict(p)
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "object_io": 0.0, "decode": 0.25, "starved": 0.5, "copy": 0.0,
                                                 "other": 0.0})
    assert v["cause"] == "starved" and v["change"] == "prefetch_factor=2 -> 4"
    assert v["expected_step_time_change"] == pytest.approx(-0.2)


def test_without_fetch_spans_decode_is_not_guessed(tmp_path: Path) -> None:
    """A trace from before the fetch spans: the reads are measured, decode and starved are not
    (None, listed, with the reason), and the shares still sum to 1."""
    p = tmp_path / "old.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=None)
    v = _verdict(p)
    b = v["wait_breakdown"]
    assert b["file_io"] == pytest.approx(0.25) and b["decode"] is None and b["starved"] is None
    assert v["unmeasured"] == ["decode", "starved"] and v["unmeasured_share"] == pytest.approx(0.75)
    assert "fetch spans" in v["reason"]
    assert sum(x for x in b.values() if x is not None) + v["unmeasured_share"] == pytest.approx(1.0)
    assert v["cause"] == "decode or starved" and v["change"].startswith("num_workers=2 -> 5")


def test_gpu_run_copy_and_pin_memory(tmp_path: Path) -> None:
    """A GPU run without pin_memory: the copies after the wait are not part of it (copy 0,
    measured), and the advice adds pin_memory=True."""
    p = tmp_path / "gpu.pt.trace.json.gz"
    torch_fetch_trace.make(p, gpu=True)
    v = _verdict(p)
    assert v["wait_breakdown"]["copy"] == 0.0 and "copy" not in v["unmeasured"]
    assert "pin_memory=True" in v["change"]


def test_main_process_loading(tmp_path: Path) -> None:
    """num_workers=0: the main process is the loader inside __next__: the wait is its reads and
    its decode; advice: workers, the whole wait can go."""
    p = tmp_path / "main.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=None, num_workers=0)
    v = _verdict(p)
    assert v["wait_breakdown"]["decode"] == pytest.approx(0.75) and v["unmeasured"] == []
    assert v["change"].startswith("num_workers=0 -> 2") and v["expected_step_time_change"] == pytest.approx(-0.4)


def test_not_input_bound(tmp_path: Path) -> None:
    p = tmp_path / "fast.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=0.3, fetch_ms=0.3, read_ms=0.1)
    v = _verdict(p)
    assert v["bound"] == "not input" and v["input_wait_share"] == pytest.approx(0.03)
    assert v["advice"].startswith("Not input-bound") and v["expected_step_time_change"] == pytest.approx(-0.03)


def test_moderately_input_bound_is_partly(tmp_path: Path) -> None:
    p = tmp_path / "mid.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=1, fetch_ms=1, read_ms=0.5)
    assert _verdict(p)["bound"] == "partly input"


def test_h200_tuned_job_is_not_input_bound(tmp_path: Path) -> None:
    """The real H200 trace of the tuned job (8 workers, pin_memory, persistent; ~2% wait): not
    input-bound, and no finding is a warning (small reads, many small files and the EOF probes
    are there, but the step barely waits for them)."""
    src = tmp_path / "h200_tuned.pt.trace.json.gz"
    shutil.copy(DATA / "h200_tuned.pt.trace.json.gz", src)
    a = analyze(read_xspace(src))
    v = a.verdict
    assert v["bound"] == "not input" and v["input_wait_share"] == pytest.approx(0.0202, abs=0.001)
    assert v["basis"] == "steps" and v["steps"] == 6
    assert [f["severity"] for f in a.findings if f["severity"] != "info"] == []
    assert {"small-reads", "many-small-files"} <= set(a.ids)
    for f in a.findings:
        assert f["impact"]["step_share"] < 0.05, f


def test_report_json_and_text_lead_with_the_verdict(tmp_path: Path, capsys) -> None:
    """``tb-iotrace report``: the main process's host carries the verdict (JSON) and its text
    begins with it; the workers' hosts have none; findings carry their impact, ordered by it,
    and input-bound's impact is the verdict's wait share."""
    import json

    from tb_iotrace.cli import main

    p = tmp_path / "job.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    assert main(["report", str(p), "--json", "--no-progress", "--jobs", "1"]) == 0
    hosts = json.loads(capsys.readouterr().out)["runs"][0]["hosts"]
    main_host = next(h for h in hosts if h["verdict"])
    assert [h["verdict"] for h in hosts if h is not main_host] == [None, None]
    v = main_host["verdict"]
    assert v["bound"] == "input" and v["wait_breakdown"]["decode"] == pytest.approx(0.75)
    shares = [f["impact"]["step_share"] for f in main_host["findings"]]
    assert shares == sorted(shares, reverse=True)
    ib = next(f for f in main_host["findings"] if f["id"] == "input-bound")
    assert ib["impact"]["step_share"] == pytest.approx(v["input_wait_share"])
    assert ib["impact"]["ms_per_step"] == pytest.approx(4.0) and ib["severity"] == "warning"
    assert main(["report", str(p), "--no-progress", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    first = text.split("\n\n")[0].splitlines()
    assert first[2].startswith("Verdict: INPUT-BOUND: the step waits for input 40.0% of its time")
    assert "decode 75%" in first[3] and "num_workers=2 -> 5: expected step time -40%" in first[4]


def test_tab_findings_carry_the_verdict(tmp_path: Path) -> None:
    """The tab's /findings: the host's verdict (the same as the report's) beside its findings;
    input-bound's suggestion leads with the verdict's advice."""
    from plugin_client import make_client

    run = tmp_path / "logs" / "j"
    run.mkdir(parents=True)
    torch_fetch_trace.make(run / "w.1.pt.trace.json.gz")
    _, get = make_client(tmp_path / "logs")
    code, f = get("/findings", run="j", host="w")
    assert code == 200
    (v,) = f["verdicts"]
    assert v["host"] == "w" and v == dict(_verdict(run / "w.1.pt.trace.json.gz"), host="w")
    ib = next(x for x in f["findings"] if x["id"] == "input-bound")
    assert ib["suggestion"].startswith(f"Biggest expected effect: {v['advice']} Also: ")
    assert ib["impact"]["step_share"] == pytest.approx(0.4)


TF_NAMES = ("train", "IteratorGetNext", "Iterator::Root::ParallelMapV2", "EagerPyFunc")
# grain: the consumer's wait on its prefetch iterator (under it Python's own frames), grain's
# read thread fetching an element (read + map)
GRAIN_NAMES = ("train", "PrefetchDatasetIterator.__next__", "$prefetch.py:238 __next__", "Prefetch._getitem")
GRAIN_STAGE = ("PrefetchDatasetIterator(read_options=ReadOptions(num_threads=1, prefetch_buffer_size=1), "
               "allow_nones=False)")


def _tf_capture(tmp_path: Path, name: str, reads_at_ms: float = 0.0, reads: int = 1, read_ms: float = 2.0,
                read_bytes: int = 65536, names: tuple[str, ...] = TF_NAMES,
                loader_line: str = "tf_data_private_threadpool", cpus: int | None = None) -> str:
    """A TF capture: 12 steps of 10 ms, each waiting 8 ms in IteratorGetNext (under it the
    consumer's Iterator::Root::ParallelMapV2, a wait for the map's buffer, not work); a tf.data
    thread running the map's function (EagerPyFunc) for the first 6 ms of each wait; per step
    ``reads`` reads of
    ``read_bytes`` on that thread, back to back from ``reads_at_ms`` into the step, ``read_ms``
    in all. ``names`` (step, wait, the consumer's event under it, the loader's work) and
    ``loader_line`` make it a grain capture (:data:`GRAIN_NAMES`, a plain ``python`` thread);
    ``cpus``: the machine record's usable cores."""
    from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, thread_line_id
    from test_analysis import make_trace

    base = 1_700_000_000_000_000_000
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    for k, nm in enumerate(names, 1):
        host.event_metadata[k].CopyFrom(XEventMetadata(id=k, name=nm))
    host.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="step_num"))
    host.stat_metadata[2].CopyFrom(XStatMetadata(id=2, name="_ipl_stage_name"))
    main = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    tfd = host.lines.add(id=thread_line_id(78), name=loader_line, timestamp_ns=0)
    ms_ps, ms_ns = 10**9, 10**6
    rows = [("open", "/data/a.tfrecord", -1, 3, base, 1000, 101)]
    one = round(read_ms * ms_ns / reads)
    for k in range(12):
        ev = main.events.add(metadata_id=1, offset_ps=10 * k * ms_ps, duration_ps=10 * ms_ps)
        ev.stats.add(metadata_id=1, int64_value=k)
        wait = main.events.add(metadata_id=2, offset_ps=10 * k * ms_ps, duration_ps=8 * ms_ps)
        if names is GRAIN_NAMES:
            wait.stats.add(metadata_id=2, str_value=GRAIN_STAGE)
        main.events.add(metadata_id=3, offset_ps=10 * k * ms_ps + 1000, duration_ps=8 * ms_ps - 2000)
        tfd.events.add(metadata_id=4, offset_ps=10 * k * ms_ps, duration_ps=6 * ms_ps)
        t = base + 10 * k * ms_ns + round(reads_at_ms * ms_ns)
        rows += [("read", "/data/a.tfrecord", (k * reads + j) * read_bytes, read_bytes, t + j * one, one, 101)
                 for j in range(reads)]
    tr = make_trace(rows)
    tr.threads = {101: ThreadInfo(78, "tf_data")}
    if cpus is not None:
        tr.machine = {"format": "tb_iotrace.machine/1", "cpus": cpus, "cpus_online": cpus, "cpu_quota": None,
                      "mounts": []}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / f"{name}.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path)


def test_tf_data_map_bound(tmp_path: Path) -> None:
    """The tf.data thread busy for the first 6 ms of each 8 ms wait (a TF-ops stage; a
    py_function map: test_verdict_capacity), reading for the first 2: file_io 1/4, decode 1/2,
    starved 1/4; advice: a parallel map, its effect 80% x 1/2."""
    from test_analysis import MOUNTINFO

    names = TF_NAMES[:3] + ("Iterator::Root::ParallelMapV2::TFRecord",)
    a = analyze(_tf_capture(tmp_path, "map", names=names), mountinfo=MOUNTINFO)
    v = a.verdict
    assert v["input_wait_share"] == pytest.approx(0.8) and v["bound"] == "input"
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "object_io": 0.0, "decode": 0.5, "starved": 0.25, "copy": 0.0,
                                                 "other": 0.0})
    assert v["change"].startswith("map(..., num_parallel_calls=tf.data.AUTOTUNE)")
    assert v["expected_step_time_change"] == pytest.approx(-0.4)
    assert "no device" in " ".join(v["notes"])


def test_grain_decode_bound(tmp_path: Path) -> None:
    """A grain pipeline: the step waits in its PrefetchDatasetIterator's ``__next__`` 8 ms of
    each 10 (grain's waits once went uncounted as input waits: the verdict said 0%); grain's read
    thread fetches (``Prefetch._getitem``) the first 6 ms, reading the first 2: file_io 1/4,
    decode 1/2, starved 1/4. The advice is grain's: worker processes (mp_prefetch), from the one
    read thread its ReadOptions name to the 4 recorded cores less one; its effect by the workers
    model: min(80% x (1/4 + 1/2) = 60%, 1 - max(20%, 1/3)) = 60%."""
    from test_analysis import MOUNTINFO

    a = analyze(_tf_capture(tmp_path, "grain", names=GRAIN_NAMES, loader_line="python", cpus=4),
                mountinfo=MOUNTINFO)
    v = a.verdict
    assert v["input_wait_share"] == pytest.approx(0.8) and v["bound"] == "input"
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "object_io": 0.0, "decode": 0.5, "starved": 0.25, "copy": 0.0,
                                                 "other": 0.0})
    assert v["cause"] == "decode"
    assert v["change"].startswith(".mp_prefetch(grain.MultiprocessingOptions(num_workers=3))")
    assert "ReadOptions(num_threads=1)" in v["change"] and "tf.data" not in v["change"]
    assert v["expected_step_time_change"] == pytest.approx(-0.6)
    assert any("grain" in n for n in v["notes"])
    assert a.ids[0] == "input-bound" and a.finding("input-bound")["suggestion"].startswith(
        f"Biggest expected effect: {v['advice']}")


def test_severity_follows_impact(tmp_path: Path) -> None:
    """96 reads of 4 KiB (small-reads: every read small, all the read time) cost the step 2 ms
    of every 10 when the step waits for them: 20% of step time, a warning. The same reads after
    the wait (8.5 ms into the step, on the tf.data thread) cost it nothing: info, and the
    statement says why."""
    from test_analysis import MOUNTINFO

    hot = analyze(_tf_capture(tmp_path, "hot", reads=8, read_bytes=4096), mountinfo=MOUNTINFO)
    f = hot.finding("small-reads")
    assert f["impact"]["step_share"] == pytest.approx(0.2) and f["impact"]["ms_per_step"] == pytest.approx(2.0)
    assert f["severity"] == "warning"
    assert hot.ids[0] == "input-bound" and hot.finding("input-bound")["severity"] == "critical"   # 80%
    cold = analyze(_tf_capture(tmp_path, "cold", reads_at_ms=8.5, reads=8, read_ms=1.0, read_bytes=4096),
                   mountinfo=MOUNTINFO)
    f = cold.finding("small-reads")
    assert f["impact"] == {"step_share": 0.0, "ms_per_step": 0.0, "basis": "steps"}
    assert f["severity"] == "info" and "only 0.0% of its time" in f["statement"] and "not a warning" in f["statement"]
    shares = [x["impact"]["step_share"] for x in cold.findings]
    assert shares == sorted(shares, reverse=True)


def test_socket_reads_are_object_io_not_decode(tmp_path: Path) -> None:
    """The same job reading each sample over a storage connection (recv on tcp://...) instead of
    a file: that part of the wait is object_io, never file_io or decode; the same job on files
    is diagnosed as before."""
    p = tmp_path / "net.pt.trace.json.gz"
    torch_fetch_trace.make(p, file="tcp://bucket.s3.local:9000", op="recv")
    v = _verdict(p)
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.0, "object_io": 0.25, "decode": 0.75, "starved": 0.0,
                                                 "copy": 0.0, "other": 0.0})
    f = tmp_path / "files.pt.trace.json.gz"
    torch_fetch_trace.make(f)
    assert _verdict(f)["wait_breakdown"]["file_io"] == pytest.approx(0.25)
    assert _verdict(f)["wait_breakdown"]["object_io"] == 0.0


def test_socket_wait_after_eagain_is_object_io(tmp_path: Path) -> None:
    """A non-blocking recv that found nothing (EAGAIN) covers the wait until the next call on
    the same socket (the poll between them is not traced): a worker's 1 ms EAGAIN recv then a
    recv 3 ms later on the same fd covers the whole 4 ms wait."""
    from tb_iotrace.model.endpoints import socket_intervals
    import numpy as np

    cols = {"start_ns": np.array([0, 3_000_000, 500_000]), "end_ns": np.array([1_000, 4_000_000, 600_000]),
            "path": np.array(["tcp://h:1", "tcp://h:1", "tcp://h:1"], dtype=object),
            "tid": np.array([7, 7, 7]), "fd": np.array([5, 5, 6]), "errno": np.array([11, 0, 0])}
    iv = socket_intervals(cols)
    assert list(iv) == [7]
    s, e = iv[7]
    assert s.tolist() == [0, 500_000, 3_000_000] and e.tolist() == [3_000_000, 600_000, 4_000_000]
