"""tb_iotrace.analysis.loader_capacity: the loader's work measured from a capture, and the
model's corner cases that tests/unit/test_verdict_capacity.py and test_worker_advice.py leave.

Proves: ``measure`` takes a main-process loader's batch from the wait and its work from the
wait's non-I/O share; with workers, a batch is the mean fetch span, the reads inside the fetches
(not the main process's, not outside them) come off it, and the workers' CPU time caps it
(``work_is_cpu``); no fetch spans leave it unmeasured; ``tf_data_work_ps`` counts each tf.data
line's union inside the windows, host plane only; the properties answer None or the cautious
value where a quantity is unknown; ``cores_cut`` and ``half_work_after`` at their edges.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tb_iotrace.analysis.loader_capacity import (BUSY_SHARE, FETCH_EVENT, LoaderWork, cores_cut, half_work_after,
                                                 measure, step_after, tf_data_work_ps)
from tb_iotrace.store.xplane import HOST_PLANE, XSpace

from built_inputs import add_plane

MS = 10**9   # ps


def _space(lines: dict[str, list[tuple[str, float, float]]], plane: str = HOST_PLANE) -> XSpace:
    """One plane: line name -> events (name, start ms, end ms)."""
    sp = XSpace()
    add_plane(sp, 1, plane, lines)
    return sp


def _ctx(reads: list[tuple[float, float, int]], main_tids: set[int] | None = None) -> Any:
    """What measure reads of the analysis context: read rows (start ms, end ms, tid)."""
    s = np.array([int(r[0] * MS) for r in reads], np.int64)
    e = np.array([int(r[1] * MS) for r in reads], np.int64)
    tid = np.array([r[2] for r in reads], np.int64)
    torch = None if main_tids is None else SimpleNamespace(rows_of_main=lambda t: np.isin(t, list(main_tids)))
    return SimpleNamespace(read_rows=np.arange(len(reads)), meta_rows=np.zeros(0, np.int64), torch=torch,
                           trace=SimpleNamespace(tid=tid), s_ps=s, e_ps=e)


FETCHES = _space({"worker0": [(FETCH_EVENT, 0, 10), ("other", 0, 50)], "worker1": [(FETCH_EVENT, 20, 30)]})


def test_main_process_loader() -> None:
    w = measure(_ctx([]), XSpace(), step_ps=10 * MS, wait_share=0.6, workers=0, cpus=4,
                main_io_share=0.25, main_cpu_share=0.5)
    assert (w.step_ms, w.batch_ms, w.work_ms, w.main_cpu_ms, w.workers, w.cpus) == pytest.approx((10, 6, 4.5, 5, 0, 4))
    assert not w.work_is_cpu
    assert measure(_ctx([]), XSpace(), step_ps=10 * MS, wait_share=0.6, workers=0, cpus=4,
                   main_io_share=0.0).main_cpu_ms is None


def test_workers_without_fetch_spans_are_unmeasured() -> None:
    w = measure(_ctx([(0, 5, 7)]), _space({"worker0": [("other", 0, 10)]}), step_ps=10 * MS, wait_share=0.5,
                workers=2, cpus=4, main_io_share=0.0)
    assert w.batch_ms is None and w.work_ms is None and w.cpu_ms is None and w.cores_busy is None
    assert w.cpu_bound                                    # unmeasured: assumed CPU-bound


def test_reads_inside_the_fetches_come_off_the_batch() -> None:
    # 4 ms inside the first fetch, 5 of [25, 40) inside the second, one read outside any fetch
    ctx = _ctx([(2, 6, 11), (25, 40, 12), (60, 70, 11)])
    w = measure(ctx, FETCHES, step_ps=10 * MS, wait_share=0.5, workers=2, cpus=4, main_io_share=0.0)
    assert w.batch_ms == pytest.approx(10) and w.work_ms == pytest.approx((20 - 9) / 2)
    assert not w.work_is_cpu and w.cpu_bound              # 5.5 of a 10 ms batch is work
    # the main process's reads are not the loader's
    mine = measure(_ctx([(2, 6, 11), (25, 40, 1)], main_tids={1}), FETCHES, step_ps=10 * MS, wait_share=0.5,
                   workers=2, cpus=4, main_io_share=0.0)
    assert mine.work_ms == pytest.approx((20 - 4) / 2)
    # reads filling the fetches: no work, never below 0
    full = measure(_ctx([(0, 10, 11), (0, 10, 13), (20, 30, 12)]), FETCHES, step_ps=10 * MS, wait_share=0.5,
                   workers=2, cpus=4, main_io_share=0.0)
    assert full.work_ms == 0.0 and not full.cpu_bound


def test_the_workers_cpu_time_caps_their_work() -> None:
    ctx = _ctx([(2, 6, 11)])
    busy = measure(ctx, FETCHES, step_ps=10 * MS, wait_share=0.5, workers=2, cpus=4, main_io_share=0.0,
                   workers_busy_ns=4_000_000)             # 2 ms a batch wanted a core
    assert busy.work_ms == pytest.approx(2) and busy.work_is_cpu and busy.batch_ms == pytest.approx(10)
    idle = measure(ctx, FETCHES, step_ps=10 * MS, wait_share=0.5, workers=2, cpus=4, main_io_share=0.0,
                   workers_busy_ns=40_000_000)
    assert idle.work_ms == pytest.approx(8) and not idle.work_is_cpu


def test_tf_data_work_counts_each_line_once_inside_the_windows() -> None:
    sp = _space({"tf_data_private_threadpool": [("Map", 0, 10), ("Map::inner", 2, 8), ("Map", 5, 15)],
                 "tf_data_iterator_resource": [("GetNext", 0, 4)],
                 "python": [("step", 0, 100)]})
    sp.planes.add(id=9, name="/device:GPU:0").lines.add(id=1, name="tf_data_x", timestamp_ns=0)
    lo, hi = np.array([0, 12 * MS]), np.array([10 * MS, 20 * MS])
    assert tf_data_work_ps(sp, lo, hi) == (10 + 3 + 4) * MS
    assert tf_data_work_ps(_space({"tf_data_x": [("Map", 0, 10)]}, plane="/host:metadata"), lo, hi) == 0
    assert tf_data_work_ps(XSpace(), lo, hi) == 0


def test_properties_where_a_quantity_is_unknown() -> None:
    w = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=10, work_ms=4, cpus=None, workers=2)
    assert w.cores_busy is None and not w.busy and w.cpu_ms == pytest.approx(9)
    assert LoaderWork(10, 0.5, 10, 4, 0, 2).cores_busy is None
    assert LoaderWork(0, 0.5, 10, 4, 4, 2).cores_busy is None
    # exactly BUSY_SHARE of the cores is busy
    edge = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=10, work_ms=BUSY_SHARE * 20 - 5, cpus=2, workers=2)
    assert edge.cores_busy == pytest.approx(BUSY_SHARE) and edge.busy
    # the main process loads and its CPU time is less than its work: its own step work is 0, not negative
    main = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=5, work_ms=5, cpus=2, workers=0, main_cpu_ms=3)
    assert main.step_cpu_ms == 0.0 and main.cpu_ms == pytest.approx(3)
    assert not LoaderWork(10, 0.5, 10, 4.9, 2, 2).cpu_bound and LoaderWork(10, 0.5, 10, 5, 2, 2).cpu_bound


def test_model_edges() -> None:
    none = LoaderWork(step_ms=10, wait_share=0.5, batch_ms=None, work_ms=None, cpus=2, workers=0)
    assert step_after(none, 8) == pytest.approx(5) and half_work_after(none) == 10
    zero = LoaderWork(step_ms=10, wait_share=1.0, batch_ms=0, work_ms=0, cpus=2, workers=2)
    assert half_work_after(zero) == 10
    assert cores_cut(0.0, 0.5, 1.0, 4) is None and cores_cut(10.0, 0.5, 1.0, 0) is None
    assert cores_cut(10.0, 0.8, 2.0, 4) == pytest.approx(0.8)    # the step's own 20% bounds it
    assert cores_cut(10.0, 0.5, 25.0, 2) == pytest.approx(0.0)   # the cores are full: no cut, never negative
