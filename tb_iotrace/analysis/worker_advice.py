"""The verdict's DataLoader-workers advice, bounded by what the machine allows
(:mod:`tb_iotrace.analysis.loader_capacity`): how many workers to ask for, the step time that
buys by the stated model, and, when the workers already keep the usable cores busy, that more
workers cannot help and what can.
"""
from __future__ import annotations

import math
from typing import Any

from tb_iotrace.analysis.loader_capacity import MIN_GAIN, LoaderWork, half_work_after, step_after

NO_MORE = "no more DataLoader workers"
UNMEASURED = "no gain predicted from more DataLoader workers"
HALF_WORK = "with the loader's work per batch halved (or twice the cores)"
LESS_WORK = ("cut the loader's work per batch: a cheaper decode (smaller stored images, a faster decoder, "
             "fewer or batched transforms in collate_fn), decode on the GPU (torchvision.io.decode_jpeg("
             "device='cuda'), NVIDIA DALI), preprocess offline (store samples decoded and resized), or run on "
             "a machine with more cores")


def _proposal(n: int, s: float, cpus: int | None) -> int:
    """The workers to ask for before the bound: from the main process, enough to hide the wait
    (``ceil(s / (1 - s)) + 1``, at least 2); from ``n`` workers, their throughput times
    ``1 / (1 - s)`` with half again for bursts; at most the usable cores less one for the
    training process, at least one more than now."""
    cap = max(1, cpus - 1) if cpus else None
    want = max(2, math.ceil(s / max(1 - s, 0.05)) + 1) if n == 0 else math.ceil(1.5 * n / max(1 - s, 0.05))
    if cap:
        want = min(want, cap)
    return max(n + 1, want)


def _fmt(ms: float) -> str:
    return f"{ms:.1f} ms" if ms >= 0.1 else f"{ms * 1e3:.0f} us"


def _terms(w: LoaderWork, m: int) -> str:
    parts = [f"C = {_fmt(w.compute_ms)}"]
    if w.batch_ms is not None:
        parts.append(f"L/m = {_fmt(w.batch_ms)}/{m}")
    if w.workers:
        parts.append(f"T n/m = {_fmt(w.step_ms)} x {w.workers}/{m}")
    cpu = w.cpu_ms
    if cpu is not None and w.cpus:
        if w.main_cpu_ms is None:
            parts.append(f"(W + C)/cpus = ({_fmt(w.work_ms or 0.0)} + {_fmt(w.compute_ms)})/{w.cpus}")
        else:
            parts.append(f"(W + Cc)/cpus = {_fmt(cpu)}/{w.cpus}")
    return "max(" + ", ".join(parts) + ")"


def step_cpu_text(w: LoaderWork) -> str:
    """What the model takes as the step's own CPU work, and from what."""
    if w.main_cpu_ms is None:
        return (f"the step's own {_fmt(w.compute_ms)}, its wall time (this capture has no CPU time of the main "
                f"process: a step that waits on a device counts as CPU work)")
    return (f"the step's own Cc = {_fmt(w.step_cpu_ms)} of CPU work (the main process's CPU time, "
            f"{_fmt(w.main_cpu_ms)} a step, measured; its step takes {_fmt(w.compute_ms)})")


def work_text(w: LoaderWork) -> str:
    """What the model takes as the loader's work per batch, and from what."""
    if w.work_is_cpu:
        return (f"W = {_fmt(w.work_ms or 0.0)} a batch wanting a core (the workers' CPU time and run-queue "
                f"delay, measured)")
    return f"W = {_fmt(w.work_ms or 0.0)} a batch outside its reads, measured"


def unmeasured(w: LoaderWork) -> tuple[str, float, str]:
    """(change, step-time cut, model) when more workers would pass the usable cores and the
    capture holds no DataLoader fetch span: the loader's work per batch is not known, so
    neither a gain nor the cores' share is stated."""
    text = (f"{UNMEASURED} past the {w.cpus} usable cores: the loader's work per batch is not measured in "
            f"this capture (no DataLoader fetch span in it); a longer window measures it")
    model = (f"more workers than the usable cores help only a loader that waits on reads; its work per batch "
             f"(W, from the fetch spans) is not in this capture: {_terms(w, max(w.workers, 1))} now")
    return text, 0.0, model


def cores_limit(w: LoaderWork, d: dict[str, Any] | None) -> tuple[str, float, str]:
    """(change, step-time cut, model) when the cores, not the workers, are the limit."""
    n = w.workers
    who = "the main process's loading" if n == 0 else f"the {n} DataLoader workers"
    busy = w.cores_busy or 0.0
    if w.busy or not n or not w.batch_ms or w.work_ms is None:
        text = (f"{NO_MORE}: {who} and the step already need {100 * busy:.0f}% of the "
                f"{w.cpus} usable cores, so more workers cannot help; {LESS_WORK}")
    else:     # as many workers as the cores, their fetches CPU work: more would share the same cores
        text = (f"{NO_MORE}: {who} already number the {w.cpus} usable cores and their fetches are CPU work "
                f"({100 * w.work_ms / w.batch_ms:.0f}% outside reads; a step's CPU work needs {100 * busy:.0f}% "
                f"of the cores), so more workers would share the same cores; {LESS_WORK}")
    after = half_work_after(w)
    cut = max(0.0, 1 - after / w.step_ms) if w.step_ms > 0 else 0.0
    model = (f"the cores are the limit: a step's CPU work (the loader's {work_text(w)}, "
             f"and {step_cpu_text(w)}) runs on {w.cpus} cores, so the step time "
             f"follows it; with the loader's work per batch halved (or twice the cores) it becomes "
             f"{'max(C, T (W/2 + C)/(W + C))' if w.main_cpu_ms is None else 'max(C, T (W/2 + Cc)/(W + Cc))'} = "
             f"{_fmt(after)} of {_fmt(w.step_ms)} now; more workers: none")
    return text, cut, model


def workers_change(w: LoaderWork, key: str, d: dict[str, Any] | None) -> tuple[str, float, str]:
    """(change, step-time cut, model) for decode or file I/O (or the two not separable) on a
    PyTorch run with ``w.workers`` workers now: more workers, as many as the model says help
    (never past the usable cores while the loader keeps them busy), or :func:`cores_limit`."""
    n, cpus = w.workers, w.cpus
    want = _proposal(n, w.wait_share, cpus)
    if cpus and want > cpus and (w.busy or w.cpu_bound):
        want = 0           # past the usable cores, for a loader that works rather than waits on reads
    after = step_after(w, want) if want else w.step_ms
    cut = 1 - after / w.step_ms if w.step_ms > 0 else 0.0
    if not want or cut < MIN_GAIN:
        if cpus and w.cores_busy is None:
            return unmeasured(w)
        if cpus:
            return cores_limit(w, d)
        return "more DataLoader workers cannot shorten the step by the measured work", 0.0, _terms(w, max(want, 1))
    text = f"num_workers={n} -> {want}" + (", persistent_workers=True" if n == 0 and d is not None else "")
    if key == "file_io":
        text += " (more reads in flight; faster storage or a warm page cache if the reads stay long)"
    if cpus and want >= cpus - 1:
        text += f" (the {cpus} usable cores are the limit)"
    model = (f"step time with m workers = the largest of the step's own work, a batch's load time over the "
             f"workers that run at once, the loader's throughput grown with the workers, and a step's CPU work "
             f"over the usable cores: {_terms(w, want)} = {_fmt(after)} of {_fmt(w.step_ms)} now "
             f"({100 * (after / w.step_ms if w.step_ms else 1):.0f}%)"
             + (f"; {step_cpu_text(w)}" if w.main_cpu_ms is not None else "")
             + (f"; the loader's {work_text(w)}" if w.work_is_cpu else ""))
    return text, cut, model


__all__ = ["HALF_WORK", "LESS_WORK", "NO_MORE", "UNMEASURED", "cores_limit", "step_cpu_text", "unmeasured",
           "work_text", "workers_change"]
