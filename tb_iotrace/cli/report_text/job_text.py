"""The report's text of a run of several hosts and of jobs: the run's totals (partial
processes apart), the job verdict across ranks, the per-host table, checkpoint saves per rank,
and a job's profile windows in time order."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tb_iotrace.analysis.checkpoints.detection import MiB
from tb_iotrace.analysis.jobwindows import when_text
from tb_iotrace.base.safenames import printable
from tb_iotrace.base.sizes import human_bytes


def render_run_totals(t: Mapping[str, Any]) -> list[str]:
    """The text table: the whole processes' totals, then the partial ones' apart."""
    head = (f"{'module':<7} {'files':>6} {'bytes read':>14} {'bytes written':>14} {'reads':>9} {'writes':>9}")
    lines = [head]
    for side, label in (("whole", "whole"), ("partial", "PARTIAL")):
        s = t[side]
        if not s["processes"]:
            continue
        if t["partial"]["processes"]:         # the label only where two kinds stand apart
            lines.append(f"{label} processes: {s['processes']}" + (
                " (counts up to each one's last flush; not added to the whole ones)" if side == "partial" else ""))
        for m, c in s["modules"].items():
            lines.append(f"{m:<7} {c['files']:>6} {c['bytes_read']:>14} {c['bytes_written']:>14} "
                         f"{c['reads']:>9} {c['writes']:>9}")
    return lines


def render_job_verdict(jv: dict[str, Any] | None) -> str:
    """The job verdict's lines in the text report (below the per-host table)."""
    if not jv:
        return ""
    head = {"input": "INPUT-BOUND", "partly input": "PARTLY INPUT-BOUND", "not input": "NOT INPUT-BOUND"}.get(
        jv.get("bound", ""), "UNKNOWN")
    if jv.get("straggler"):
        head += f" on {jv['straggler']['label']}"
    lines = [f"Job verdict ({jv['ranks']} ranks, {jv['matched_steps']} steps matched by number): {head}",
             f"  {jv.get('advice', '')}"]
    if jv.get("basis") == "steps":
        lines.append(f"  {'rank':<14} {'host':<28} {'step ms':>8} {'input wait':>10} {'collective':>10} {'MiB/step':>9} {'files/step':>10}")
        for r in jv.get("per_rank") or []:
            def pct(x: Any) -> str:
                return f"{100 * x:.0f}%" if x is not None else "-"
            mib = f"{r['bytes_per_step'] / 2**20:.2f}" if r["bytes_per_step"] is not None else "-"
            fps = f"{r['files_per_step']:.1f}" if r["files_per_step"] is not None else "-"
            sms = f"{r['step_ms']:.1f}" if r["step_ms"] is not None else "-"
            lines.append(f"  {r['label'][:14]:<14} {r['host'][:28]:<28} {sms:>8} {pct(r['input_wait_share']):>10} "
                         f"{pct(r['collective_wait_share']):>10} {mib:>9} {fps:>10}")
    return "\n".join(lines) + "\n"


def render_hosts(rows: Sequence[Mapping[str, Any]]) -> str:
    """The per-host table: one line per host, the slowest reader and the longest input wait
    marked."""
    if not rows:
        return ""
    slow_read = max(range(len(rows)), key=lambda i: rows[i]["read_time_s"])
    slow_wait = max(range(len(rows)), key=lambda i: rows[i]["input_wait_ns"])
    names = [printable(r["host"]) for r in rows]
    width = max(6, max(len(n) for n in names))
    lines = [f"  {'host':<{width}} {'bytes read':>11} {'written':>11} {'read time':>10} {'I/O calls':>9} "
             f"{'input wait':>11} {'wait %':>6}"]
    for i, r in enumerate(rows):
        mark = []
        if len(rows) > 1 and r["read_time_s"] > 0 and i == slow_read:
            mark.append("slowest reads")
        if len(rows) > 1 and r["input_wait_ns"] > 0 and i == slow_wait:
            mark.append("longest input wait")
        lines.append(f"  {names[i]:<{width}} {human_bytes(r['bytes_read']):>11} "
                     f"{human_bytes(r['bytes_written']):>11} {r['read_time_s']:>9.3f}s {r['io_calls']:>9} "
                     f"{r['input_wait_ns'] / 1e6:>9.1f}ms {r['input_wait_pct']:>5.1f}%"
                     + (f"  <- {', '.join(mark)}" if mark else ""))
    return "\n".join(lines)


def render_rank_saves(saves: list[dict[str, Any]]) -> str:
    """The text report's table per save of two ranks or more: every rank's bytes, bandwidth,
    start and finish (seconds from the save's start)."""
    multi = [s for s in saves if len(s["ranks"]) > 1]
    if not multi:
        return ""
    lines = ["Checkpoint saves per rank"]
    for n, s in enumerate(multi):
        mark = f"  straggler: {s['straggler']} ({s['lag_ns'] / 1e9:.2f} s late)" if s["straggler"] else ""
        lines.append(f"  save {n + 1}: {len(s['ranks'])} ranks, {(s['end_ns'] - s['start_ns']) / 1e9:.3f} s{mark}")
        lines.append(f"    {'rank':>5} {'host':<24} {'MiB':>8} {'MiB/s':>8} {'start s':>8} {'finish s':>8}  file system")
        for r in s["ranks"]:
            rank = "-" if r["rank"] is None else str(r["rank"])
            lines.append(f"    {rank:>5} {r['host'][:24]:<24} {r['bytes'] / MiB:>8.1f} {r['bandwidth_mib_s']:>8.0f} "
                         f"{(r['start_ns'] - s['start_ns']) / 1e9:>8.3f} {(r['finish_ns'] - s['start_ns']) / 1e9:>8.3f}"
                         f"  {r['mount_point']} ({r['fs_type']})")
    return "\n".join(lines) + "\n"


def render_windows(job_list: Sequence[Mapping[str, Any]], least: int = 2) -> str:
    """The text table of each job with at least ``least`` windows ("" when none has)."""
    out: list[str] = []
    for job in job_list:
        ws = job["windows"]
        if len(ws) < least:
            continue
        name = printable(job["job"] or ".")
        title = f"Profile windows of {name} ({len(ws)}, in time order)"
        out += [title, "=" * len(title),
                f"  {'#':>3} {'start (UTC)':<19} {'length':>8} {'steps':>5} {'input wait':>10} "
                f"{'bytes read':>11} {'I/O calls':>9} {'read time':>9}  run"]
        for w in ws:
            dur = w.get("duration_ns")
            length = "?" if dur is None else f"{dur / 1e9:.2f}s"
            out.append(f"  {w['n']:>3} {when_text(w.get('start_ns')):<19} {length:>8} {w['steps']:>5} "
                       f"{_share(w):>10} {human_bytes(w['bytes_read']):>11} {w['io_calls']:>9} "
                       f"{w['read_time_s']:>8.3f}s  {printable(w['run'])}"
                       + (f"  [{printable(w['taken_by'])}]" if w.get("taken_by") else ""))
        out.append("")
    return "\n".join(out)


def _share(w: Mapping[str, Any]) -> str:
    s = w.get("input_wait_share")
    return "-" if s is None else f"{100 * s:.0f}%"
