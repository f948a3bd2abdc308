"""What the input loader's measured work allows: the bound on any prediction of the verdict's
"more workers" advice (docs/diagnosis.md, "What the machine allows").

A loader hands one batch per step. From the capture:

- ``T`` the step time now, ``s`` the input-wait share, ``C = T (1 - s)`` the step's own time;
- ``L`` a batch's load time: the mean DataLoader fetch span (``tb_iotrace::fetch``, one per
  batch) or, when the main process loads (``num_workers=0``), the wait per step;
- ``W`` the loader's work per batch outside its reads: ``L`` less the file I/O in flight inside
  the fetches (reads wait on storage, they do not take a core); when the workers recorded the
  time they wanted a core (their CPU time ``cpu_ns`` and run-queue delay ``run_delay_ns``), at
  most that per batch: a fetch that waits on what is not a file read (a lock, a request in
  flight, a pipe) takes no core meanwhile, one that waits for a core another process holds
  does (those cores are not the loader's to use);
- ``P`` the main process's CPU time per step: its CPU time over the window (``cpu_ns`` of its
  process record, all its threads) times ``T`` over the window's wall time; unknown in a
  capture without it;
- ``Cc`` the step's own CPU work: ``min(C, P)`` with workers (a step that sleeps or waits on a
  device takes no core), ``min(C, P - W)`` (at least 0) when the main process loads; ``C``
  when ``P`` is unknown (then a wait on a device counts as CPU work: cautious);
- ``cpus`` the usable cores the capture recorded (:mod:`tb_iotrace.store.machine`).

A step's CPU work is ``W + Cc`` (the loader's for its batch and the training process's own); with
``num_workers=0`` at most ``P`` (one process does both).

The model (:func:`step_after`): with ``m`` workers the step time is at least each of

- ``C``: the step's own time stays;
- ``L / m``: a batch takes ``L`` in one worker, ``m`` of them work at once at best;
- ``T n / m`` (``n`` > 0 workers now): the loader's throughput grows at most with the number
  of workers;
- ``(W + Cc) / cpus``: the CPU work of a step cannot run on more cores than there are.

and never longer than now. The loader **keeps the cores busy** when ``(W + Cc) / cpus`` reaches
:data:`BUSY_SHARE` of the step now: then workers past the usable cores cannot help, and what
can is less work per batch or more cores; by the same model, with the loader's work per batch
halved (or the cores doubled) the step time becomes ``max(C, T (W/2 + Cc) / (W + Cc))``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.model.named_spans import named_spans
from tb_iotrace.model.stepwait import covered, merge
from tb_iotrace.store.xplane import HOST_PLANE, columns

FETCH_EVENT = "tb_iotrace::fetch"
BUSY_SHARE = 0.8          # (W + C) / cpus over T from which the cores are the limit
MIN_GAIN = 0.02           # a predicted cut under this is no gain


@dataclass(frozen=True)
class LoaderWork:
    """A loader's measured work (ms), the step it feeds, and the usable cores."""

    step_ms: float            # T
    wait_share: float         # s
    batch_ms: float | None    # L: None when not measured (no fetch spans)
    work_ms: float | None     # W: L less its reads
    cpus: int | None
    workers: int              # n now
    main_cpu_ms: float | None = None   # P: the main process's CPU time per step, None when not recorded
    work_is_cpu: bool = False          # W is the time the workers wanted a core per batch (less than L less its reads)

    @property
    def compute_ms(self) -> float:
        return self.step_ms * (1 - self.wait_share)

    @property
    def cpu_ms(self) -> float | None:
        """W + Cc: a step's CPU work (the loader's outside its reads and the step's own); None
        when the loader's work is not measured."""
        if self.work_ms is None:
            return None
        if self.main_cpu_ms is not None and self.workers == 0:
            return min(self.work_ms + self.compute_ms, self.main_cpu_ms)
        return self.work_ms + self.step_cpu_ms

    @property
    def step_cpu_ms(self) -> float:
        """Cc: the step's own CPU work (its time ``C`` when the main process's CPU time is not
        recorded)."""
        c = self.compute_ms
        if self.main_cpu_ms is None:
            return c
        own = self.main_cpu_ms - (self.work_ms or 0.0) if self.workers == 0 else self.main_cpu_ms
        return min(c, max(own, 0.0))

    @property
    def cores_busy(self) -> float | None:
        """(W + Cc) / cpus over T: the share of the usable cores a step's CPU work needs now."""
        cpu = self.cpu_ms
        if cpu is None or not self.cpus or self.step_ms <= 0:
            return None
        return cpu / (self.cpus * self.step_ms)

    @property
    def busy(self) -> bool:
        """The loader's work keeps the usable cores busy (see the module docstring)."""
        b = self.cores_busy
        return b is not None and b >= BUSY_SHARE

    @property
    def cpu_bound(self) -> bool:
        """The loader's batch time is mostly work, not reads (unmeasured: assumed so)."""
        return self.batch_ms is None or self.work_ms is None or self.work_ms >= 0.5 * self.batch_ms


def step_after(w: LoaderWork, m: int) -> float:
    """The step time (ms) with ``m`` loader workers by the module's model."""
    t = w.step_ms
    terms = [w.compute_ms]
    if w.batch_ms is not None:
        terms.append(w.batch_ms / m)
    if w.workers > 0:
        terms.append(t * w.workers / m)
    cpu = w.cpu_ms
    if cpu is not None and w.cpus:
        terms.append(cpu / w.cpus)
    return min(t, max(terms))


def half_work_after(w: LoaderWork) -> float:
    """The step time (ms) with the loader's work per batch halved (or the cores doubled) while
    the cores are the limit: ``max(C, T (W/2 + Cc) / (W + Cc))``."""
    cc = w.step_cpu_ms
    if w.work_ms is None or w.work_ms + cc <= 0:
        return w.step_ms
    return max(w.compute_ms, w.step_ms * (w.work_ms / 2 + cc) / (w.work_ms + cc))


def _fetch_spans(space: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every DataLoader fetch span on the host plane (ps), one per batch, not merged."""
    return named_spans(space, [lambda name: name == FETCH_EVENT])[0]


def measure(ctx: Any, space: Any, *, step_ps: float, wait_share: float, workers: int,
            cpus: int | None, main_io_share: float, main_cpu_share: float | None = None,
            workers_busy_ns: int | None = None) -> LoaderWork:
    """The loader's work from a capture: fetch spans and the workers' I/O inside them when
    there are workers; the wait per step and its file-I/O share (``main_io_share``) when the
    main process loads. ``step_ps``: the mean step time; ``main_cpu_share``: the main process's
    CPU time over its window's wall time (None when not recorded); ``workers_busy_ns``: the
    time the workers wanted a core over the window, CPU time and run-queue delay (None when not
    recorded)."""
    t_ms = step_ps / 1e9
    p = t_ms * main_cpu_share if main_cpu_share is not None else None
    if workers == 0:
        batch = t_ms * wait_share
        return LoaderWork(t_ms, wait_share, batch, batch * (1 - main_io_share), cpus, 0, p)
    fs, fe = _fetch_spans(space)
    if not len(fs):
        return LoaderWork(t_ms, wait_share, None, None, cpus, workers, p)
    total = float((fe - fs).sum())
    rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    run = ctx.torch
    if run is not None and len(rows):
        rows = rows[~run.rows_of_main(ctx.trace.tid[rows])]
    reads = float(covered(merge(fs, fe), ctx.s_ps[rows], ctx.e_ps[rows]).sum()) if len(rows) else 0.0
    n = len(fs)
    work = max(total - reads, 0.0) / n / 1e9
    cpu = workers_busy_ns / n / 1e6 if workers_busy_ns is not None else None
    return LoaderWork(t_ms, wait_share, total / n / 1e9, min(work, cpu) if cpu is not None else work, cpus,
                      workers, p, work_is_cpu=cpu is not None and cpu < work)


def tf_data_work_ps(space: Any, lo: np.ndarray, hi: np.ndarray) -> int:
    """tf.data's threads' busy time inside the windows [lo, hi) (ps): per ``tf_data*`` host
    line the union of its events (a thread counts once however deep its events nest), summed
    over the lines (threads at work at once count each)."""
    total = 0
    for p in getattr(space, "planes", []):
        if p.name != HOST_PLANE:
            continue
        pc = columns(p)
        for ln in pc.lines:
            if not ln.name.startswith("tf_data") or not len(ln):
                continue
            total += int(covered(merge(ln.start_ps, ln.end_ps), lo, hi).sum())
    return total


def cores_cut(step_ps: float, wait_share: float, work_per_step_ps: float, cpus: int | None) -> float | None:
    """The most the step time can fall by when a loader's work per step (``work_per_step_ps``)
    and the step's own share the usable cores: ``1 - max(1 - s, (W + C) / (cpus T))``; None
    when the cores are not known."""
    if not cpus or step_ps <= 0:
        return None
    c = step_ps * (1 - wait_share)
    return max(0.0, 1 - max(1 - wait_share, (work_per_step_ps + c) / (cpus * step_ps)))


__all__ = ["BUSY_SHARE", "LoaderWork", "MIN_GAIN", "cores_cut", "half_work_after", "measure", "step_after",
           "tf_data_work_ps"]
