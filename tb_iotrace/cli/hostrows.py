"""``tb-iotrace report --hosts``: the per-host table alone, read from the captures' stored
summaries (:mod:`tb_iotrace.store.summaries`), so a second look at a fleet of hosts decodes nothing;
and :func:`keep`, with which ``report`` stores the row of every host it builds.

A host of a PyTorch trace is one process of it (``<trace>/pid<N>``): its summary is kept as
the part ``pid<N>`` of the trace file (the tab's row of the whole trace is the part "").
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tb_iotrace.analysis import text_report as textreport
from tb_iotrace.store import summaries
from tb_iotrace.base.safenames import printable
from tb_iotrace.model.sources import Source

FORMAT = "tb_iotrace.hosts/1"
Compute = Callable[[Source], dict[str, Any]]


def version(src: Source) -> summaries.Identity | None:
    """The source file's identity now (taken before it is read: see :func:`keep`)."""
    try:
        return summaries.identity(src.path)
    except Exception:  # noqa: BLE001 - a summary is a shortcut: it never fails a report
        return None


def keep(src: Source, row: dict[str, Any], before: summaries.Identity | None) -> None:
    """Store ``row`` as the summary of ``src``'s file version ``before`` (nothing when it is
    unknown or cannot be written)."""
    if before is None:
        return
    try:
        summaries.save(src.path, row, src.part, before=before)
    except Exception:  # noqa: BLE001
        pass


def stored(src: Source) -> dict[str, Any] | None:
    """``src``'s row from its valid stored summary, else None."""
    try:
        got = summaries.load(src.path, src.part)
    except Exception:  # noqa: BLE001
        return None
    return None if got is None else {"host": src.host, **got}


def _computed(compute: Compute, src: Source) -> dict[str, Any]:
    before = version(src)
    row = compute(src)
    keep(src, row, before)
    return row


def _jobs(jobs: int | None, n: int) -> int:
    if jobs is None:
        try:
            jobs = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            jobs = os.cpu_count() or 1
    return max(1, min(jobs, n))


def build(sources: Sequence[Source], compute: Compute, jobs: int | None = None) -> dict[str, Any]:
    """``{"format": "tb_iotrace.hosts/1", "runs": [{"run", "hosts": [row]}], "computed": n}``:
    each source's row (:func:`tb_iotrace.analysis.text_report.host_row`'s) from its stored summary, else
    ``compute(src)`` (in up to ``jobs`` processes), then stored; ``computed``: how many had to
    be read."""
    rows: list[dict[str, Any] | None] = [stored(s) for s in sources]
    todo = [i for i, r in enumerate(rows) if r is None]
    n = _jobs(jobs, len(todo))
    if n > 1:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(n, mp_context=ctx) as pool:
            for i, row in zip(todo, pool.map(_computed, [compute] * len(todo), [sources[i] for i in todo])):
                rows[i] = row
    else:
        for i in todo:
            rows[i] = _computed(compute, sources[i])
    runs: dict[str, list[dict[str, Any]]] = {}
    for s, r in zip(sources, rows):
        runs.setdefault(s.run, []).append(r or {})
    return {"format": FORMAT, "runs": [{"run": k, "hosts": v} for k, v in runs.items()], "computed": len(todo)}


def render(doc: dict[str, Any]) -> str:
    """The text table of :func:`build`'s document, one block per run."""
    out = []
    for run in doc["runs"]:
        title = f"{printable(run['run'])}: {len(run['hosts'])} hosts/processes"
        out += [title, "=" * len(title), "Per host (POSIX + STDIO counters; input wait within the steps)",
                textreport.render_hosts(run["hosts"]), ""]
    return "\n".join(out)


__all__ = ["FORMAT", "build", "keep", "render", "stored", "version"]
