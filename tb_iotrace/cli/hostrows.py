"""``tb-iotrace report --hosts``: the per-host table alone, read from the captures' stored
summaries (:mod:`tb_iotrace.store.summaries`), so a second look at a fleet of hosts decodes nothing;
and :func:`kept`, with which ``report`` and ``fleet`` build a host's entry and store its row and
job facts. Of a run of
several hosts, the job verdict across them as ranks too, from their stored job facts
(:mod:`tb_iotrace.analysis.job_facts`): a host without valid ones is analysed as ``report``
does (its facts and row then kept).

A host of a PyTorch trace is one process of it (``<trace>/pid<N>``): its summary is kept as
the part ``pid<N>`` of the trace file (the tab's row of the whole trace is the part "").
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tb_iotrace.analysis import host_result, job_facts
from tb_iotrace.analysis.job_verdict import job_verdict
from tb_iotrace.store import jobfacts
from tb_iotrace.store import summaries
from tb_iotrace.base.safenames import printable
from tb_iotrace.model.sources import Source

FORMAT = "tb_iotrace.hosts/1"
Compute = Callable[[Source], dict[str, Any]]
Facts = dict[str, Any]


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


def kept(src: Source) -> dict[str, Any]:
    """``src``'s entry of the report (:mod:`tb_iotrace.analysis.host_result`), its row and job
    facts kept as those of the file's version before it was read (the tab's "All hosts" and
    ``report --hosts`` read them)."""
    before = version(src)
    doc = host_result.build(src).to_dict()
    keep(src, doc["summary"], before)
    job_facts.keep(src.path, src.part, doc, before)
    return doc


def stored(src: Source) -> dict[str, Any] | None:
    """``src``'s row from its valid stored summary, else None."""
    try:
        got = summaries.load(src.path, src.part)
    except Exception:  # noqa: BLE001
        return None
    return None if got is None else {"host": src.host, **got}


def _computed(compute: Compute, full: Compute | None, src: Source) -> tuple[dict[str, Any], Facts | None]:
    """``src``'s row, and its job facts when ``full`` (its whole host document, which keeps
    both itself) is given."""
    if full is not None:
        doc = full(src)
        return dict(doc["summary"]), job_facts.facts_of(doc)
    before = version(src)
    row = compute(src)
    keep(src, row, before)
    return row, None


def _stored_facts(src: Source) -> tuple[Facts | None, str]:
    """``src``'s valid stored job facts (else None) and, when a document was there but
    damaged, the note that says so."""
    try:
        got = jobfacts.load(src.path, src.part)
    except Exception as exc:  # noqa: BLE001
        got = jobfacts.Loaded(None, "damaged", f"{type(exc).__name__}: {exc}")
    note = (f"The stored job facts of {printable(src.host)} are damaged ({got.reason}): ignored, made again "
            "from its capture." if got.state == "damaged" else "")
    return got.facts, note


def _jobs(jobs: int | None, n: int) -> int:
    if jobs is None:
        try:
            jobs = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            jobs = os.cpu_count() or 1
    return max(1, min(jobs, n))


def build(sources: Sequence[Source], compute: Compute, jobs: int | None = None,
          full: Compute | None = None) -> dict[str, Any]:
    """``{"format": "tb_iotrace.hosts/1", "runs": [{"run", "hosts": [row], "job_verdict",
    "notes"}], "computed": n}``: each source's row (:func:`tb_iotrace.analysis.file_totals.host_row`'s)
    from its stored summary, else ``compute(src)`` (in up to ``jobs`` processes), then stored;
    ``computed``: how many had to be read. With ``full`` (the report's host document), the job
    verdict of each run of two or more sources from their stored job facts; a source without
    valid ones is read with ``full`` (its row and facts kept) instead of ``compute``."""
    runs_of: dict[str, int] = {}
    for s in sources:
        runs_of[s.run] = runs_of.get(s.run, 0) + 1
    rows: list[dict[str, Any] | None] = [stored(s) for s in sources]
    facts: list[Facts | None] = [None] * len(sources)
    notes: list[str] = [""] * len(sources)
    wants = [full is not None and runs_of[s.run] > 1 for s in sources]
    for i, s in enumerate(sources):
        if wants[i]:
            facts[i], notes[i] = _stored_facts(s)
    todo = [i for i in range(len(sources)) if rows[i] is None or (wants[i] and facts[i] is None)]
    how = [full if wants[i] and facts[i] is None else None for i in todo]
    n = _jobs(jobs, len(todo))
    if n > 1:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(n, mp_context=ctx) as pool:
            done = list(pool.map(_computed, [compute] * len(todo), how, [sources[i] for i in todo]))
    else:
        done = [_computed(compute, f, sources[i]) for i, f in zip(todo, how)]
    for i, f, (row, got) in zip(todo, how, done):
        rows[i] = row
        if f is not None:
            facts[i] = got
    runs: dict[str, dict[str, Any]] = {}
    for k, (s, r) in enumerate(zip(sources, rows)):
        run = runs.setdefault(s.run, {"run": s.run, "hosts": [], "docs": [], "notes": []})
        run["hosts"].append(r or {})
        if wants[k]:
            run["docs"].append(None if facts[k] is None else job_facts.doc_of(s.host, facts[k]))  # type: ignore[arg-type]
        if notes[k]:
            run["notes"].append(notes[k])
    out = []
    for run in runs.values():
        docs = run.pop("docs")
        run["job_verdict"] = job_verdict(docs) if docs and all(d is not None for d in docs) else None
        out.append(run)
    return {"format": FORMAT, "runs": out, "computed": len(todo)}


__all__ = ["FORMAT", "build", "keep", "kept", "stored", "version"]
