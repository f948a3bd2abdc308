"""The verdict's advice is bounded by what the machine allows (tb_iotrace.analysis.loader_capacity,
worker_advice, tf_gil): no DataLoader workers past the usable cores while the loader keeps them
busy, no prediction shorter than a batch's load time over the workers that can run at once, and
no parallel-map gain for a tf.data map whose work is a GIL-bound py_function. Synthetic traces
(tests/unit/fixtures/torch_fetch_trace.py, test_verdict's TF capture) with exact shares."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.analysis.loader_capacity import LoaderWork, half_work_after, step_after
from tb_iotrace.store.kineto_xspace import read_xspace

import torch_fetch_trace


def _verdict(path: Path) -> dict:
    a = analyze(read_xspace(path))
    assert a is not None
    return a.verdict


def test_model_terms() -> None:
    """Each bound of the model on its own: the step's own work, a batch's load time over the
    workers, the throughput grown with the workers, the CPU work over the cores."""
    w = LoaderWork(step_ms=10, wait_share=0.8, batch_ms=20, work_ms=19, cpus=2, workers=2)
    assert w.compute_ms == pytest.approx(2) and w.cores_busy == pytest.approx(21 / 20) and w.busy
    assert step_after(w, 3) == pytest.approx(10)                # (19 + 2) / 2 > 10: capped at now
    assert half_work_after(w) == pytest.approx(10 * 11.5 / 21)
    many = LoaderWork(step_ms=10, wait_share=0.8, batch_ms=20, work_ms=19, cpus=64, workers=2)
    assert step_after(many, 4) == pytest.approx(5) and not many.busy   # T n/m and L/m
    main = LoaderWork(step_ms=10, wait_share=0.94, batch_ms=9.4, work_ms=8.4, cpus=2, workers=0)
    assert step_after(main, 1) == pytest.approx(9.4)           # one worker does the main process's work
    assert step_after(main, 4) == pytest.approx(4.5)           # the two cores: (8.4 + 0.6) / 2


def test_busy_workers_on_two_cores_get_no_more_workers(tmp_path: Path) -> None:
    """Two workers each fetching 20 ms a batch (1 ms of it reading) for a 10 ms step that waits
    8: both always busy, on 2 usable cores. Before: "num_workers=2 -> 3 (the 2 usable cores are
    the limit)" and -33% (DLIO ran 11% slower so). Now: no more workers, what can help, and the
    effect of halving the work by the stated model."""
    p = tmp_path / "busy.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=8, fetch_ms=20, read_ms=1, cpus=2)
    a = analyze(read_xspace(p))
    v = a.verdict
    # the input-bound finding does not contradict it with "raise num_workers"
    ib = a.finding("input-bound")
    assert ib["suggestion"] == f"Biggest expected effect: {v['advice']}" and "raise num_workers" not in ib["suggestion"]
    assert v["bound"] == "input" and v["cause"] == "decode"
    assert "num_workers=2 ->" not in v["change"] and v["change"].startswith("no more DataLoader workers")
    for what in ("cheaper decode", "decode on the GPU", "preprocess offline", "more cores"):
        assert what in v["change"]
    # W = 19 ms, C = 2 ms: max(2, 10 x (9.5 + 2) / 21) = 5.48 ms of 10
    assert v["expected_step_time_change"] == pytest.approx(-(1 - 11.5 / 21), abs=1e-3)
    assert "halved" in v["advice"] and "max(C, T (W/2 + C)/(W + C))" in v["model"]


def test_main_process_loading_on_two_cores_is_bounded(tmp_path: Path) -> None:
    """num_workers=0, a tiny model: the main process loads 9.4 ms of a 10 ms step. One worker
    (the 2 cores less one for the step) does the same work: the step cannot get shorter than
    that batch's 9.4 ms. Before: "num_workers=0 -> 1, persistent_workers=True: -94%"."""
    p = tmp_path / "main2.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=None, num_workers=0, wait_ms=9.4, read_ms=1, cpus=2)
    v = _verdict(p)
    assert v["change"].startswith("num_workers=0 -> 1")
    assert v["expected_step_time_change"] == pytest.approx(-0.06, abs=1e-6)
    assert "L/m = 9.4 ms/1" in v["model"]


def test_read_bound_workers_may_go_past_the_cores(tmp_path: Path) -> None:
    """Workers that wait on their reads (18 of each 20 ms fetch) do not keep the cores busy:
    one more worker keeps one more read in flight, past the 2 cores: 2 -> 3, by the model
    max(C, L/m, T n/m, (W + C)/cpus) = 20/3 ms of 10."""
    p = tmp_path / "reads.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=8, fetch_ms=20, read_ms=18, cpus=2)
    v = _verdict(p)
    assert v["cause"] == "file_io" and v["change"].startswith("num_workers=2 -> 3 (more reads in flight")
    assert v["expected_step_time_change"] == pytest.approx(-(1 - 20 / 3 / 10), abs=1e-3)


def test_many_cores_keep_the_workers_model(tmp_path: Path) -> None:
    """The same busy workers with 16 usable cores: more workers, as before (2 -> 15 by
    ceil(1.5 x 2 / 0.2), at most the cores less one), the step bounded by its own 2 ms."""
    p = tmp_path / "busy16.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=8, fetch_ms=20, read_ms=1, cpus=16)
    v = _verdict(p)
    assert v["change"].startswith("num_workers=2 -> 15")
    # max(2, 20/15, 10 x 2/15, 21/16) = 2 ms of 10: -80%
    assert v["expected_step_time_change"] == pytest.approx(-0.8)


def test_tf_py_function_map_gets_no_autotune_gain(tmp_path: Path) -> None:
    """The tf.data map's work is EagerPyFunc (a tf.py_function): num_parallel_calls=AUTOTUNE is
    not offered as the gain; the advice names TF ops and offline preprocessing, the effect at
    most the decode part (80% x 1/2)."""
    from test_analysis import MOUNTINFO
    from test_verdict import _tf_capture

    v = analyze(_tf_capture(tmp_path, "pyfunc"), mountinfo=MOUNTINFO).verdict
    assert v["cause"] == "decode" and v["change"].startswith("the map's function is a tf.py_function")
    assert "no gain predicted" in v["change"] and "TF ops" in v["change"] and "offline" in v["change"]
    assert v["expected_step_time_change"] == pytest.approx(-0.4)
    assert "one call at a time" in v["model"]



def _tf_loop_capture(tmp_path: Path) -> str:
    """A plain TF loop, no step markers: 12 iterations of 10 ms, each waiting 8 ms in
    tb_iotrace::next (the iterator's __next__), of which the IteratorGetNext op is the first
    1 ms; a tf.data thread at work 0.5 ms after each wait (refilling the prefetch buffer), none
    during it; one small read."""
    from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, thread_line_id
    from test_analysis import make_trace

    base = 1_700_000_000_000_000_000
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=base)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    for k, nm in enumerate(("tb_iotrace::next", "IteratorGetNextOp::DoCompute"), 1):
        host.event_metadata[k].CopyFrom(XEventMetadata(id=k, name=nm))
    host.event_metadata[3].CopyFrom(XEventMetadata(id=3, name="MapAndBatchProduce"))
    main = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    tfd = host.lines.add(id=thread_line_id(78), name="tf_data_private_threadpool", timestamp_ns=0)
    ms = 10**9
    for k in range(12):
        main.events.add(metadata_id=1, offset_ps=10 * k * ms, duration_ps=8 * ms)
        main.events.add(metadata_id=2, offset_ps=10 * k * ms, duration_ps=1 * ms)
        tfd.events.add(metadata_id=3, offset_ps=10 * k * ms + 8 * ms, duration_ps=ms // 2)
    tr = make_trace([("open", "/data/a.bin", -1, 3, base, 1000, 101),
                     ("read", "/data/a.bin", 0, 4096, base + 2000, 1000, 101)])
    tr.threads = {101: ThreadInfo(77, "python")}
    add_io_to_space(sp, tr, start_ns=base)
    path = tmp_path / "loop.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    return str(path)


def test_tf_iterator_python_is_not_a_prefetch_problem(tmp_path: Path) -> None:
    """The wait is the iterator's Python packing a ready element (7 of each 8 ms outside the op):
    not prefetch(AUTOTUNE), but fewer, larger tensors or a tf.function; effect at most the
    wait share (8 ms over the 118 ms from the first wait to the last) x 7/8."""
    from test_analysis import MOUNTINFO

    v = analyze(_tf_loop_capture(tmp_path), mountinfo=MOUNTINFO).verdict
    assert v["basis"] == "input waits" and v["cause"] == "starved"
    share = 96 / 118
    assert v["input_wait_share"] == pytest.approx(share)
    assert v["change"].startswith("the wait is the iterator's own Python") and "prefetch(tf.data" not in v["change"]
    assert v["expected_step_time_change"] == pytest.approx(-share * 7 / 8)


def test_tf_parallel_map_is_bounded_by_the_cores(tmp_path: Path) -> None:
    """A TF-ops map on one usable core: tf.data's thread busy 6 ms of each 10 ms step, 0.5 ms of
    it reading (a read takes no core), the step's own 2 ms: the step cannot be shorter than
    (5.5 + 2) / 1 = 7.5 ms: -25% at most, not the -55% the wait's decode part (0.8 x 5.5/8)
    alone would say. On 4 cores the bound does not bind."""
    from test_analysis import MOUNTINFO
    from test_verdict import TF_NAMES, _tf_capture

    from tb_iotrace.analysis.loader_capacity import cores_cut

    names = TF_NAMES[:3] + ("Iterator::Root::ParallelMapV2::TFRecord",)
    v = analyze(_tf_capture(tmp_path, "one", names=names, cpus=1, read_ms=0.5), mountinfo=MOUNTINFO).verdict
    assert v["cause"] == "decode" and v["change"].startswith("map(..., num_parallel_calls=tf.data.AUTOTUNE)")
    assert v["expected_step_time_change"] == pytest.approx(-0.25) and "usable cores" in v["model"]
    v4 = analyze(_tf_capture(tmp_path, "four", names=names, cpus=4, read_ms=0.5), mountinfo=MOUNTINFO).verdict
    assert v4["expected_step_time_change"] == pytest.approx(-0.55)
    assert cores_cut(10.0, 0.8, 9.0, 1) == 0.0 and cores_cut(10.0, 0.8, 9.0, None) is None


DLIO_ONE_STEP = Path(__file__).resolve().parents[1] / "data" / "dlio_one_step_window.pt.trace.json.gz"


def test_unmeasured_loader_work_is_not_called_measured(tmp_path: Path) -> None:
    """A real window of DLIO's PyTorch npz loop (2 workers, 2 cores) that caught one step and no
    DataLoader fetch span: the loader's work is not in it. Before: "the 2 DataLoader workers and
    the step already need 0% of the 2 usable cores, so more workers cannot help" and "the loader's
    0 us a batch outside its reads, measured". Now: no gain predicted, and the advice says the
    work was not measured instead of stating a share it does not have."""
    p = tmp_path / DLIO_ONE_STEP.name
    p.write_bytes(DLIO_ONE_STEP.read_bytes())
    v = _verdict(p)
    assert v["bound"] == "input"
    assert "num_workers=2 ->" not in v["change"]
    assert v["expected_step_time_change"] == 0.0
    assert "need 0%" not in v["change"] and "measured," not in v["model"]
    assert "not measured" in v["change"] and "fetch" in v["change"]


def test_a_step_that_sleeps_is_no_cpu_work(tmp_path: Path) -> None:
    """Three workers on 2 cores, each fetch 30 ms of which 18 ms reading (W = 12 ms), a 10 ms
    step waiting 5 ms, the other 5 ms a sleep (or a wait on a GPU): the main process used 0.5 ms
    of CPU a step. Counting the step's 5 ms as CPU work, (12 + 5)/2 = 85% of the step: "no more
    DataLoader workers". Its measured CPU time makes it (12 + 0.5)/2 = 62%: a fourth worker keeps
    one more read in flight, max(C, L/m, T n/m, (W + Cc)/cpus) = max(5, 7.5, 7.5, 6.25) = 7.5 ms."""
    p = tmp_path / "sleep.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=5, fetch_ms=30, read_ms=18, num_workers=3, cpus=2, main_cpu_ms=0.5)
    v = _verdict(p)
    assert v["cause"] == "file_io" and v["change"].startswith("num_workers=3 -> 4 (more reads in flight"), v
    assert v["expected_step_time_change"] == pytest.approx(-0.25, abs=1e-3)
    assert "(W + Cc)/cpus = 12.5 ms/2" in v["model"] and "Cc = 0.5 ms of CPU work" in v["model"]


def test_a_step_that_burns_cpu_keeps_the_cores_busy(tmp_path: Path) -> None:
    """The same loader, the step's 5 ms burning a core (5 ms of CPU a step, measured): (12 + 5)/2
    = 85% of the cores, as counted before: no more workers."""
    p = tmp_path / "burn.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=5, fetch_ms=30, read_ms=18, num_workers=3, cpus=2, main_cpu_ms=5.0)
    v = _verdict(p)
    assert v["change"].startswith("no more DataLoader workers: the 3 DataLoader workers and the step already "
                                  "need 85% of the 2 usable cores"), v
    # no CPU time in the capture (older traces): the step's time is taken as CPU work, as before
    q = tmp_path / "old.pt.trace.json.gz"
    torch_fetch_trace.make(q, wait_ms=5, fetch_ms=30, read_ms=18, num_workers=3, cpus=2)
    assert _verdict(q)["change"] == v["change"]


def test_workers_time_wanting_a_core_is_their_work(tmp_path: Path) -> None:
    """Two workers fetching 20 ms a batch, 1 ms of it reading, for a 10 ms step that waits 8, on
    2 cores. The workers' records say how long they wanted a core: 4 ms of CPU a batch and 0.5 ms
    waiting for one (the rest of each fetch waited on what is not a file read: a lock, a pipe, a
    request in flight). Taking the fetch's 19 ms outside reads as CPU work said the cores were
    busy: no more workers. By the time wanting a core a step's CPU work is (4.5 + 2)/2 = 32% of
    the cores: a third worker, max(C, L/m, T n/m, (W + C)/cpus) = max(2, 6.7, 6.7, 3.3) = 6.7 ms."""
    p = tmp_path / "waits.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=8, fetch_ms=20, read_ms=1, cpus=2, worker_cpu_ms=4, worker_wait_ms=0.5)
    v = _verdict(p)
    assert v["change"].startswith("num_workers=2 -> 3"), v
    assert v["expected_step_time_change"] == pytest.approx(-(1 - 20 / 3 / 10), abs=1e-3)
    assert "W = 4.5 ms a batch wanting a core (the workers' CPU time and run-queue delay, measured)" in v["model"]
    wall = tmp_path / "wall.pt.trace.json.gz"        # no such times recorded: the fetch's time, as before
    torch_fetch_trace.make(wall, wait_ms=8, fetch_ms=20, read_ms=1, cpus=2)
    before = _verdict(wall)
    assert before["change"].startswith("no more DataLoader workers"), before
    # a core held by another process is no core of the loader's: 4 ms of CPU and 15 ms waiting for
    # a core a batch wanted the cores all along: the refusal stays (a loaded machine)
    q = tmp_path / "loaded.pt.trace.json.gz"
    torch_fetch_trace.make(q, wait_ms=8, fetch_ms=20, read_ms=1, cpus=2, worker_cpu_ms=4, worker_wait_ms=15)
    assert _verdict(q)["change"] == before["change"]
    # more than the fetch's time outside reads (threads of its own): W stays the fetch's
    r = tmp_path / "threads.pt.trace.json.gz"
    torch_fetch_trace.make(r, wait_ms=8, fetch_ms=20, read_ms=1, cpus=2, worker_cpu_ms=30)
    assert _verdict(r)["change"] == before["change"]


def test_main_process_cpu_time_bounds_the_step_cpu_work() -> None:
    """The model's terms with the main process's CPU time per step P: with workers the step's
    own CPU work is min(C, P); when the main process loads, a step's CPU work is at most P."""
    sleepy = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=30, work_ms=12, cpus=2, workers=3, main_cpu_ms=0.5)
    assert sleepy.step_cpu_ms == pytest.approx(0.5) and sleepy.cores_busy == pytest.approx(12.5 / 20)
    assert not sleepy.busy and step_after(sleepy, 4) == pytest.approx(7.5)
    # one core, the main process loading 6 ms of CPU work a step, the step a 4 ms wait on a device:
    # (W + C)/1 = 10 ms said one worker gains nothing; its CPU time (6 ms) says -40%
    main = LoaderWork(step_ms=10, wait_share=0.6, batch_ms=6, work_ms=6, cpus=1, workers=0, main_cpu_ms=6.2)
    assert main.cpu_ms == pytest.approx(6.2) and main.step_cpu_ms == pytest.approx(0.2)
    assert step_after(main, 1) == pytest.approx(6.2)
    walled = LoaderWork(step_ms=10, wait_share=0.6, batch_ms=6, work_ms=6, cpus=1, workers=0)
    assert step_after(walled, 1) == pytest.approx(10)
    # CPU time beyond the step's time (other threads): the step's own CPU work is its time at most
    hot = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=30, work_ms=12, cpus=2, workers=3, main_cpu_ms=9)
    assert hot.step_cpu_ms == pytest.approx(5) and hot.cores_busy == pytest.approx(17 / 20)
