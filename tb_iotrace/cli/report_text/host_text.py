"""One host's part of the report's text (a host's entry of :mod:`tb_iotrace.analysis.run_result`'s
document): its title, files, objects, endpoints, bandwidth over the run, steps, checkpoints,
findings ordered by impact, and notes."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis import jobwindows
from tb_iotrace.analysis.checkpoints.phase_table import render as render_checkpoints
from tb_iotrace.base.safenames import printable
from tb_iotrace.base.sizes import human_bytes
from tb_iotrace.cli.report_text.file_tables import render_files, render_timeseries
from tb_iotrace.cli.report_text.storage_tables import render_endpoints, render_objects

MAX_STEPS_SHOWN = 20


def render_host(run_name: str, h: dict[str, Any], all_files: bool = False) -> list[str]:
    """The host's blocks of text, in the report's order."""
    out: list[str] = []
    title = f"{run_name} / {h['host']}"      # escaped by render_files
    if h.get("partial"):
        title += ("  [PARTIAL: the process left no final record (killed, still running, or its last "
                  "write failed: see its stderr); counts up to its last flush]")
    proc = h.get("process")
    if proc and proc.get("exit") and not h.get("partial"):
        ex = proc["exit"]
        how = ex.get("how")
        if ex.get("signal"):
            how = f"{how} {ex['signal']}"
        elif ex.get("exception"):
            how = f"{how} ({ex['exception']})"
        elif ex.get("code") is not None:
            how = f"{how}({ex['code']})"
        title += f"  [ended by {how}]"
    if h.get("window_origin"):
        title += f"  [window taken by {jobwindows.origin_text(h['window_origin'])}]"
    out.append(render_files(h["files"], title=title, dropped=h["dropped"], verdict=h.get("verdict"),
                            untracked=h.get("untracked"), empty=h.get("no_io_reason", ""), all_files=all_files))
    if h.get("objects"):
        out.append(render_objects(h["objects"]))
    if h.get("endpoints"):
        out.append(render_endpoints(h["endpoints"]))
    if h.get("timeseries"):
        out.append(render_timeseries(h["timeseries"]))
    if h["steps"]:
        out.append("Per-step I/O" + ("" if h["has_step_markers"] else " (no step markers: time windows)"))
        objs = "object_requests" in h["steps"][0]
        out.append(f"  {'step':>6} {'ms':>9} {'input wait':>10} {'collective':>10} {'I/O calls':>9} {'I/O bytes':>11}"
                   + (f" {'objects':>8} {'obj. bytes':>11}" if objs else ""))
        for s in h["steps"][:MAX_STEPS_SHOWN]:
            num = s["step_num"] if s["step_num"] is not None else s["index"]
            coll = s.get("collective_wait_ps", 0) / max(s["duration_ps"], 1)
            out.append(f"  {num:>6} {s['duration_ps'] / 1e9:>9.2f} {100 * s['input_wait_share']:>9.0f}% "
                       f"{100 * coll:>9.0f}% {s['io_calls']:>9} {human_bytes(s['io_bytes']):>11}"
                       + (f" {s['object_requests']:>8} {human_bytes(s['object_bytes']):>11}"
                          if objs else ""))
        if len(h["steps"]) > MAX_STEPS_SHOWN:
            out.append(f"  ... {len(h['steps']) - MAX_STEPS_SHOWN} more steps (--json for all)")
        out.append("")
    if h.get("checkpoints"):
        out.append(render_checkpoints(h["checkpoints"]))
    if h["findings"]:
        out.append("Findings")
        for f in h["findings"]:
            if isinstance(f, dict):
                sev = printable(f.get("severity", ""))
                head = f"[{sev}] " if sev else ""
                out.append(f"  - {head}{printable(f.get('title') or f.get('id', ''))}: "
                           f"{printable(f.get('statement') or f.get('message') or '')}".rstrip(": "))
                imp = f.get("impact") or {}
                if imp.get("step_share") is not None:
                    ms = imp.get("ms_per_step")
                    out.append(f"      impact: {100 * imp['step_share']:.1f}% of step time"
                               + (f", {ms:.3f} ms per step" if ms is not None else f" ({imp.get('basis')})"))
                if f.get("suggestion"):
                    out.append(f"      suggestion: {printable(f['suggestion'])}")
                if f.get("files"):
                    more = f" (+{len(f['files']) - 3} more)" if len(f["files"]) > 3 else ""
                    out.append(f"      files: {', '.join(map(printable, f['files'][:3]))}{more}")
            else:
                out.append(f"  - {printable(f)}")
        out.append("")
    for n in h.get("notes", []):
        out.append(f"note: {printable(n)}")
    return out
