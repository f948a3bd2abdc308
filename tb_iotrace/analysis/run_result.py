"""The document of ``tb-iotrace report``: the hosts' results (:mod:`tb_iotrace.analysis.host_result`)
grouped by run, each run with its totals (:mod:`tb_iotrace.analysis.run_totals`), its job verdict
across the ranks (:mod:`tb_iotrace.analysis.job_verdict`), its checkpoint saves across the ranks
and their straggler (:mod:`tb_iotrace.analysis.checkpoints.ranks`); and the jobs' profile windows
(:mod:`tb_iotrace.analysis.jobwindows`). Schema: docs/formats.md.
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from tb_iotrace.analysis import host_result, jobwindows, run_totals
from tb_iotrace.analysis.checkpoints.ranks import save_table, straggler_finding
from tb_iotrace.analysis.job_verdict import annotate
from tb_iotrace.base.progress import Progress
from tb_iotrace.model.open_source import group_by_run
from tb_iotrace.model.sources import Source

__all__ = ["FORMAT", "build", "default_jobs", "host_doc", "run_doc"]

FORMAT = "tb_iotrace.report/1"
HostDoc = Callable[[Source], dict[str, Any]]


def host_doc(src: Source) -> dict[str, Any]:
    """A host's entry of the report (its result, nothing kept)."""
    return host_result.build(src).to_dict()


def default_jobs() -> int:
    """Hosts decoded at once: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_doc(run: str, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's entry: its hosts' entries (their findings and verdicts completed in place by the
    job verdict and the checkpoint straggler), totals, job verdict and checkpoint saves."""
    doc: dict[str, Any] = {"run": run, "hosts": hosts, "totals": run_totals.totals(hosts)}
    annotate(doc)       # the job verdict across the ranks (docs/diagnosis.md), its findings
    doc["checkpoint_saves"] = save_table(hosts)
    got = straggler_finding(doc["checkpoint_saves"], hosts)
    if got is not None:
        host = next(h for h in hosts if h["host"] == got[0])
        host["findings"] = sorted([*host["findings"], got[1]], key=lambda f: -((f.get("impact") or {}).get(
            "step_share") or 0.0))
    return doc


def build(sources: Sequence[Source], progress: bool = False, jobs: int | None = None,
          make: HostDoc = host_doc) -> dict[str, Any]:
    """The report's document of ``sources``, each host's entry from ``make``; ``progress``: a
    progress line per host on stderr when it is a terminal. Several hosts are decoded in
    parallel, in up to ``jobs`` processes (default: the cores); the document keeps the hosts'
    order."""
    prog = Progress("report", len(sources) if progress else 0, unit="hosts", keep=False)
    groups = group_by_run(list(sources))
    order = [(run, s) for run, srcs in groups.items() for s in srcs]
    jobs = min(default_jobs() if jobs is None else max(1, jobs), len(order))
    docs: list[dict[str, Any]] = [{} for _ in order]
    if jobs > 1:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            futures = {pool.submit(make, s): i for i, (_, s) in enumerate(order)}
            for fut in as_completed(futures):
                i = futures[fut]
                docs[i] = fut.result()        # an error raised in a worker comes back here
                prog.add(1, f"{order[i][0]}/{order[i][1].host}")
    else:
        for i, (run, s) in enumerate(order):
            prog.add(0, f"{run}/{s.host}")          # say which host is being read while it is
            docs[i] = make(s)
            prog.add(1)
    prog.close()
    runs, k = [], 0
    for run, srcs in groups.items():
        runs.append(run_doc(run, docs[k:k + len(srcs)]))
        k += len(srcs)
    return {"format": FORMAT, "runs": runs, "jobs": jobwindows.from_report(runs)}
