"""What the input loader's measured work allows: the bound on any prediction of the verdict's
"more workers" advice (docs/diagnosis.md, "What the machine allows").

A loader hands one batch per step. From the capture:

- ``T`` the step time now, ``s`` the input-wait share, ``C = T (1 - s)`` the step's own work;
- ``L`` a batch's load time: the mean DataLoader fetch span (``tb_iotrace::fetch``, one per
  batch) or, when the main process loads (``num_workers=0``), the wait per step;
- ``W`` the loader's work per batch outside its reads: ``L`` less the file I/O in flight inside
  the fetches (reads wait on storage, they do not take a core);
- ``cpus`` the usable cores the capture recorded (:mod:`tb_iotrace.store.machine`).

The model (:func:`step_after`): with ``m`` workers the step time is at least each of

- ``C``: the step's own work stays;
- ``L / m``: a batch takes ``L`` in one worker, ``m`` of them work at once at best;
- ``T n / m`` (``n`` > 0 workers now): the loader's throughput grows at most with the number
  of workers;
- ``(W + C) / cpus``: the CPU work of a step (the loader's for its batch and the training
  process's own) cannot run on more cores than there are.

and never longer than now. The loader **keeps the cores busy** when ``(W + C) / cpus`` reaches
:data:`BUSY_SHARE` of the step now: then workers past the usable cores cannot help, and what
can is less work per batch or more cores; by the same model, with the loader's work per batch
halved (or the cores doubled) the step time becomes ``max(C, T (W/2 + C) / (W + C))``.
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

    @property
    def compute_ms(self) -> float:
        return self.step_ms * (1 - self.wait_share)

    @property
    def cores_busy(self) -> float | None:
        """(W + C) / cpus over T: the share of the usable cores a step's CPU work needs now."""
        if self.work_ms is None or not self.cpus or self.step_ms <= 0:
            return None
        return (self.work_ms + self.compute_ms) / (self.cpus * self.step_ms)

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
    if w.work_ms is not None and w.cpus:
        terms.append((w.work_ms + w.compute_ms) / w.cpus)
    return min(t, max(terms))


def half_work_after(w: LoaderWork) -> float:
    """The step time (ms) with the loader's work per batch halved (or the cores doubled) while
    the cores are the limit: ``max(C, T (W/2 + C) / (W + C))``."""
    c = w.compute_ms
    if w.work_ms is None or w.work_ms + c <= 0:
        return w.step_ms
    return max(c, w.step_ms * (w.work_ms / 2 + c) / (w.work_ms + c))


def _fetch_spans(space: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every DataLoader fetch span on the host plane (ps), one per batch, not merged."""
    return named_spans(space, [lambda name: name == FETCH_EVENT])[0]


def measure(ctx: Any, space: Any, *, step_ps: float, wait_share: float, workers: int,
            cpus: int | None, main_io_share: float) -> LoaderWork:
    """The loader's work from a capture: fetch spans and the workers' I/O inside them when
    there are workers; the wait per step and its file-I/O share (``main_io_share``) when the
    main process loads. ``step_ps``: the mean step time."""
    t_ms = step_ps / 1e9
    if workers == 0:
        batch = t_ms * wait_share
        return LoaderWork(t_ms, wait_share, batch, batch * (1 - main_io_share), cpus, 0)
    fs, fe = _fetch_spans(space)
    if not len(fs):
        return LoaderWork(t_ms, wait_share, None, None, cpus, workers)
    total = float((fe - fs).sum())
    rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    run = ctx.torch
    if run is not None and len(rows):
        rows = rows[~run.rows_of_main(ctx.trace.tid[rows])]
    reads = float(covered(merge(fs, fe), ctx.s_ps[rows], ctx.e_ps[rows]).sum()) if len(rows) else 0.0
    n = len(fs)
    return LoaderWork(t_ms, wait_share, total / n / 1e9, max(total - reads, 0.0) / n / 1e9, cpus, workers)


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
