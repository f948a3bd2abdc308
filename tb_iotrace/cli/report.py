"""``tb-iotrace report``: the arguments, the text of the report's document
(:mod:`tb_iotrace.analysis.run_result`, each host's result from :mod:`tb_iotrace.analysis.host_result`)
and its JSON, written as it is built."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tb_iotrace.analysis import host_result, jobwindows, run_result, run_totals
from tb_iotrace.analysis import text_report as textreport
from tb_iotrace.analysis.checkpoints.phase_table import render as render_checkpoints
from tb_iotrace.analysis.checkpoints.ranks import render as render_ranks
from tb_iotrace.analysis.endpoint_report import render_endpoints
from tb_iotrace.analysis.job_verdict import render as render_job
from tb_iotrace.analysis.object_report import render_objects
from tb_iotrace.base.safenames import printable
from tb_iotrace.cli import hostrows
from tb_iotrace.cli._base import Command
from tb_iotrace.model.open_source import open_source

MAX_STEPS_SHOWN = 20


def write_json(doc: Any, out: Any, level: int = 0) -> None:
    """``doc`` as JSON (indented by one space per level), streaming: a record's file entries
    (:class:`tb_iotrace.analysis.text_report.TableFiles`) are built and written one at a time, one line each."""
    pad = "\n" + " " * (level + 1)
    if isinstance(doc, dict):
        if not doc:
            out.write("{}")
            return
        out.write("{")
        for i, (k, v) in enumerate(doc.items()):
            out.write(("," if i else "") + pad + json.dumps(str(k)) + ": ")
            write_json(v, out, level + 1)
        out.write("\n" + " " * level + "}")
    elif isinstance(doc, textreport.TableFiles):
        out.write("[")
        for i, f in enumerate(doc):
            out.write(("," if i else "") + pad + json.dumps(f))
        out.write(("\n" + " " * level if len(doc) else "") + "]")
    elif isinstance(doc, (list, tuple)):
        if not doc:
            out.write("[]")
            return
        out.write("[")
        for i, v in enumerate(doc):
            out.write(("," if i else "") + pad)
            write_json(v, out, level + 1)
        out.write("\n" + " " * level + "]")
    else:
        out.write(json.dumps(doc))


def render_text(doc: dict[str, Any], all_files: bool = False) -> str:
    out: list[str] = []
    for run in doc["runs"]:
        hosts = run["hosts"]
        for h in hosts:
            title = f"{run['run']} / {h['host']}"      # escaped by render
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
            out.append(textreport.render(h["files"], title=title, dropped=h["dropped"], verdict=h.get("verdict"),
                                         untracked=h.get("untracked"),
                                         empty=h.get("no_io_reason", ""), all_files=all_files))
            if h.get("objects"):
                out.append(render_objects(h["objects"]))
            if h.get("endpoints"):
                out.append(render_endpoints(h["endpoints"]))
            if h.get("timeseries"):
                out.append(textreport.render_timeseries(h["timeseries"]))
            if h["steps"]:
                out.append("Per-step I/O" + ("" if h["has_step_markers"] else " (no step markers: time windows)"))
                objs = "object_requests" in h["steps"][0]
                out.append(f"  {'step':>6} {'ms':>9} {'input wait':>10} {'collective':>10} {'I/O calls':>9} {'I/O bytes':>11}"
                           + (f" {'objects':>8} {'obj. bytes':>11}" if objs else ""))
                for s in h["steps"][:MAX_STEPS_SHOWN]:
                    num = s["step_num"] if s["step_num"] is not None else s["index"]
                    coll = s.get("collective_wait_ps", 0) / max(s["duration_ps"], 1)
                    out.append(f"  {num:>6} {s['duration_ps'] / 1e9:>9.2f} {100 * s['input_wait_share']:>9.0f}% "
                               f"{100 * coll:>9.0f}% {s['io_calls']:>9} {textreport.human_bytes(s['io_bytes']):>11}"
                               + (f" {s['object_requests']:>8} {textreport.human_bytes(s['object_bytes']):>11}"
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
        if len(hosts) > 1:
            partial = sum(1 for h in hosts if h.get("partial"))
            title = f"{printable(run['run'])}: all {len(hosts)} hosts/processes"
            if partial:
                title += f"  [{partial} PARTIAL]"
            lines = [title, "=" * len(title)]
            lines += run_totals.render(run["totals"])      # partial ones apart
            if run.get("job_verdict"):       # the ranks as one job: on top of the per-host table
                lines += ["", render_job(run["job_verdict"]).rstrip("\n")]
            lines += ["", "Per host (POSIX + STDIO counters; input wait within the steps)",
                      textreport.render_hosts([h["summary"] for h in hosts if "summary" in h])]
            if run.get("checkpoint_saves"):
                lines += ["", render_ranks(run["checkpoint_saves"])]
            out.append("\n".join(lines) + "\n")
    windows = jobwindows.render(doc.get("jobs") or [])
    if windows:
        out.append(windows)
    # every name was escaped where it was put; this catches what a later change forgets
    text = "\n".join(printable(line) for line in "\n".join(out).split("\n"))
    return text if text.endswith("\n") else text + "\n"


class Report(Command):
    """Print the I/O report of a logdir, a run directory, a capture file or a whole-run record.

    Text: the verdict (is the step waiting for input, on what, and the change to make), totals
    per module (bytes, calls, time, bandwidth), the busiest files, the read size histogram, the
    access pattern, per-step I/O when the capture has steps, and findings ordered by their
    impact on step time.

    --json prints one JSON document, format "tb_iotrace.report/1": its runs, each with its
    hosts (verdict, findings with their impact, steps, files and totals, checkpoints, objects,
    endpoints, notes, the per-host table's row), totals, job verdict and checkpoint saves; and
    the jobs' profile windows. Its schema: docs/formats.md, "The report's JSON".

    A run record marked partial comes from a process that did not finish writing it (killed
    with SIGKILL, still running, or its final write failed on a full disk): its counts stop at
    its last periodic flush. A record whose writes failed says so in its notes.
    """

    name = "report"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", metavar="PATH", help="logdir, run directory, .xplane.pb or run record .json; a folder or a URL "
                                                           "(s3://, gs://: pip install tb_iotrace[cloud])")
        parser.add_argument("--run", metavar="R", help="only this run")
        parser.add_argument("--host", metavar="H", help="only this host (<host>.<pid> for run records)")
        parser.add_argument("--json", action="store_true", help="print one JSON document")
        parser.add_argument("--no-progress", action="store_true", help="no progress line even on a terminal")
        parser.add_argument("--jobs", type=int, metavar="N", default=None,
                            help="hosts decoded at once (default: the cores this process may use)")
        parser.add_argument("--hosts", action="store_true",
                            help="only the per-host table and the job verdict, from the captures' stored "
                                 "summaries and job facts (a capture without them is decoded and they are kept)")
        parser.add_argument("--all-files", action="store_true",
                            help="list code loading (Python imports, .so, interpreter, framework config) with "
                                 "the data files instead of as one line")

    def run(self, args: argparse.Namespace) -> int:
        if args.hosts:
            rows = hostrows.build(open_source(args.path, args.run, args.host), host_result.summary_row,
                                  jobs=args.jobs, full=hostrows.kept)
            sys.stdout.write(json.dumps(rows, indent=1) + "\n" if args.json else hostrows.render(rows))
            sys.stdout.flush()
            return 0
        doc = run_result.build(open_source(args.path, args.run, args.host), progress=not args.no_progress,
                               jobs=args.jobs, make=hostrows.kept)
        if args.json:
            write_json(doc, sys.stdout)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(render_text(doc, all_files=args.all_files))
        sys.stdout.flush()
        return 0
