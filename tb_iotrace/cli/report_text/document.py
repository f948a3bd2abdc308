"""The report's text: ``tb-iotrace report``'s document (:mod:`tb_iotrace.analysis.run_result`,
format ``tb_iotrace.report/1``) and ``report --hosts``'s (:mod:`tb_iotrace.cli.hostrows`,
``tb_iotrace.hosts/1``) drawn as text. Every figure comes from the document or from the
analysis; nothing here reads a source."""
from __future__ import annotations

from typing import Any

from tb_iotrace.base.safenames import printable
from tb_iotrace.cli.report_text.host_text import render_host
from tb_iotrace.cli.report_text.job_text import (render_hosts, render_job_verdict, render_rank_saves,
                                                 render_run_totals, render_windows)

PER_HOST = "Per host (POSIX + STDIO counters; input wait within the steps)"


def render_report(doc: dict[str, Any], all_files: bool = False) -> str:
    """The whole report: each host of each run, a run of several hosts as one, then the jobs'
    profile windows."""
    out: list[str] = []
    for run in doc["runs"]:
        hosts = run["hosts"]
        for h in hosts:
            out += render_host(run["run"], h, all_files)
        if len(hosts) > 1:
            out.append(_run_text(run))
    windows = render_windows(doc.get("jobs") or [])
    if windows:
        out.append(windows)
    # every name was escaped where it was put; this catches what a later change forgets
    text = "\n".join(printable(line) for line in "\n".join(out).split("\n"))
    return text if text.endswith("\n") else text + "\n"


def _run_text(run: dict[str, Any]) -> str:
    hosts = run["hosts"]
    partial = sum(1 for h in hosts if h.get("partial"))
    title = f"{printable(run['run'])}: all {len(hosts)} hosts/processes"
    if partial:
        title += f"  [{partial} PARTIAL]"
    lines = [title, "=" * len(title)]
    lines += render_run_totals(run["totals"])      # partial ones apart
    if run.get("job_verdict"):       # the ranks as one job: on top of the per-host table
        lines += ["", render_job_verdict(run["job_verdict"]).rstrip("\n")]
    lines += ["", PER_HOST, render_hosts([h["summary"] for h in hosts if "summary" in h])]
    if run.get("checkpoint_saves"):
        lines += ["", render_rank_saves(run["checkpoint_saves"])]
    return "\n".join(lines) + "\n"


def render_host_table(doc: dict[str, Any]) -> str:
    """``report --hosts``: the per-host table and job verdict of each run, then its notes."""
    out = []
    for run in doc["runs"]:
        title = f"{printable(run['run'])}: {len(run['hosts'])} hosts/processes"
        out += [title, "=" * len(title), PER_HOST, render_hosts(run["hosts"]), ""]
        if run.get("job_verdict"):
            out += [render_job_verdict(run["job_verdict"]).rstrip("\n"), ""]
        out += [f"Note: {n}" for n in run.get("notes") or []]
    return "\n".join(out)
