"""``tb-iotrace report``."""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np

from tb_iotrace.analysis import job_facts, jobwindows, run_totals
from tb_iotrace.analysis import text_report as textreport
from tb_iotrace.analysis.object_report import objects_doc, render_objects
from tb_iotrace.analysis.object_steps import add_object_steps
from tb_iotrace.analysis.endpoint_report import render_endpoints
from tb_iotrace.base.codepaths import code_paths
from tb_iotrace.base.progress import Progress
from tb_iotrace.base.recordid import darshan_ids, renamed_from
from tb_iotrace.base.safenames import printable
from tb_iotrace.model.stepwait import InputWait, input_wait
from tb_iotrace.cli import hostrows
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.model.endpoints import source_endpoints
from tb_iotrace.model.open_source import group_by_run, open_source
from tb_iotrace.model.sources import Source, SourceError

FORMAT = "tb_iotrace.report/1"
MAX_STEPS_SHOWN = 20


def _findings(src: Source) -> tuple[list[Any], dict[str, Any] | None, str | None, list[dict[str, Any]],
                                    dict[str, Any]]:
    """Findings and verdict from tb_iotrace.analysis when it is installed: captures, run
    records that kept their trace, and a Kineto trace's main process (its workers' hosts have
    none: the main process's verdict is the job's); and the checkpoint phases
    (docs/checkpoints.md) with the training time their shares are of."""
    try:
        from tb_iotrace import analysis
    except ImportError:
        return [], None, None, [], {}
    given = src.analysis_input()
    if given is None:
        return [], None, None, [], {}
    try:
        space, trace = given
        if space is not None:
            result = analysis.analyze(space, trace=trace)
        else:
            result = analysis.analyze(None, trace=trace, python=src.python(), checkpoint_calls=src.checkpoint_calls())
        found = list(getattr(result, "findings", []) or []) if result is not None else []
        verdict = getattr(result, "verdict", None) or None
        ckpts = list(getattr(result, "checkpoints", []) or []) if result is not None else []
        training = dict(getattr(result, "training", {}) or {}) if result is not None else {}
        plain = json.loads(json.dumps([found, verdict, ckpts, training],
                                      default=lambda o: o.to_dict() if hasattr(o, "to_dict") else str(o)))
        return plain[0], plain[1], None, plain[2], plain[3]
    except (UserError, SourceError):
        raise
    except Exception as exc:  # the analysis must never break the report
        return [], None, f"analysis failed: {type(exc).__name__}: {exc}", [], {}


NO_WAIT = InputWait(0, 0, 0.0, "none", 0)


def _steps(src: Source) -> tuple[list[dict[str, Any]], bool, InputWait]:
    """The capture's steps, whether it has step markers, and its input wait (ps) by the one
    rule of :mod:`tb_iotrace.model.stepwait`."""
    if not src.has_timeline or src.io_trace() is None:
        return [], False, NO_WAIT
    try:
        from tb_iotrace.analysis.attribution import attribute
        from tb_iotrace.analysis.collectives import collective_fields

        timeline = src.timeline_trace()
        att = attribute(src.space(), timeline)   # a PyTorch job's: every process's I/O
    except Exception:
        return [], False, NO_WAIT
    if att is None:
        return [], False, NO_WAIT
    iw = input_wait(att.wait_iv, [s.start_ps for s in att.steps], [s.end_ps for s in att.steps])
    steps = [s.to_dict() for s in att.steps]
    collective_fields(src.space(), steps)         # each step's collective_wait_ps
    add_object_steps(steps, _object_rows(timeline), att.origin_ns)   # and its objects, where there are
    return steps, bool(att.has_step_markers), iw


def _object_rows(trace: Any) -> list[dict[str, Any]]:
    """The object requests a timeline's trace holds ([] when none or malformed: /objects says so)."""
    from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows

    try:
        return rows(checked(getattr(trace, "objects", None)))
    except ObjectColumnsError:
        return []


def _totals(files: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for m, t in textreport.totals(files).items():
        out[m] = {"files": t.files, "bytes_read": t.bytes_read, "bytes_written": t.bytes_written,
                  "reads": t.reads, "writes": t.writes, "opens": t.opens, "read_time": t.read_time,
                  "write_time": t.write_time, "meta_time": t.meta_time,
                  "read_bw_mib_s": t.read_bw, "write_bw_mib_s": t.write_bw}
    return out


def _renamed(counters: dict[str, Any], remap: dict[int, int]) -> dict[str, Any]:
    if not remap or not counters.get("POSIX_RENAMED_FROM"):
        return counters
    return {**counters, "POSIX_RENAMED_FROM": renamed_from(counters["POSIX_RENAMED_FROM"], remap)}


def _counter(files: list[dict[str, Any]], name: str) -> list[float]:
    return [float(f["counters"][name]) if name in f["counters"] else float(f["fcounters"].get(name, math.nan))
            for f in files]


def host_summary(src: Source, files: list[dict[str, Any]], iw: InputWait) -> dict[str, Any]:
    """The host's row of the per-host table (:func:`tb_iotrace.analysis.text_report.host_row`, as the tab's
    /hosts): its counters' bytes and read time, its traced calls, and its input wait (ps) by the
    one rule (:mod:`tb_iotrace.model.stepwait`: inside the steps, over the steps' time)."""
    return textreport.host_row(src.host, [f["module"] for f in files], lambda name: _counter(files, name),
                               io_calls=src.nevents(), input_wait_ns=iw.wait / 1000, span_ns=iw.time / 1000,
                               wait_basis=iw.basis)


def summary_row(src: Source) -> dict[str, Any]:
    """The host's row of the per-host table alone (``report --hosts``), as :func:`host_doc`'s
    ``summary``, without its findings or file listing."""
    _, _, iw = _steps(src)
    if src.files_as_columns():
        table = src.table()
        assert table is not None
        return textreport.host_row(src.host, table.module_names(), table.column, io_calls=src.nevents(),
                                   input_wait_ns=iw.wait / 1000, span_ns=iw.time / 1000, wait_basis=iw.basis)
    return host_summary(src, list(src.files()), iw)


def _table_listing(src: Source) -> tuple[textreport.TableFiles, dict[str, Any]] | None:
    """A whole-run record's files for the report, from its columns (None for other sources and
    records that keep their files in the JSON): its entries built as they are written, and
    the per-host row. The ids are those the shim stored: Darshan's hash of each path."""
    if not src.files_as_columns():
        return None
    table = src.table()
    assert table is not None
    paths = [p for t in table.modules.values() for p in t.path_strings()]
    code = code_paths(paths, src.python())
    is_code = np.fromiter((p in code for p in paths), dtype=bool, count=len(paths))
    del paths
    ids = np.concatenate([t.record_id for t in table.modules.values()]) if len(table) else np.zeros(0, np.uint64)
    return textreport.TableFiles(table, ids, is_code), {"modules": table.module_names(), "column": table.column}


def host_doc(src: Source) -> dict[str, Any]:
    """One host entry of the JSON report (see :class:`Report` for the schema)."""
    before = hostrows.version(src)
    findings, verdict, note, checkpoints, training = _findings(src)
    steps, markers, iw = _steps(src)
    columnar = _table_listing(src)
    if columnar is not None:
        listed: Any = columnar[0]
        summary = textreport.host_row(src.host, columnar[1]["modules"], columnar[1]["column"],
                                      io_calls=src.nevents(), input_wait_ns=iw.wait / 1000, span_ns=iw.time / 1000,
                                      wait_basis=iw.basis)
    else:
        files = src.files()
        ids, remap = darshan_ids(files)
        code = code_paths([f["path"] for f in files], src.python())
        listed = [{"path": f["path"], "module": f["module"], "record_id": rid,
                   **({"rank": f["rank"]} if "rank" in f else {}), "code": f["path"] in code,
                   "counters": _renamed(f["counters"], remap), "fcounters": f["fcounters"]}
                  for f, rid in zip(files, ids)]
        summary = host_summary(src, files, iw)
    hostrows.keep(src, summary, before)    # the tab's "All hosts" and `report --hosts` read it
    doc = {
        "host": src.host, "kind": src.kind, "source": src.name, "verdict": verdict, "partial": src.partial(),
        "dropped": src.dropped(), "untracked": src.untracked(), "nevents": src.nevents(),
        "timeseries": src.timeseries(),
        "totals": _totals(listed),
        "files": listed, "code_loading": textreport.code_summary(listed),
        "objects": objects_doc(src.objects(), src.objects_left_out()),
        "endpoints": [e.to_dict() for e in source_endpoints(src)],
        "findings": findings, "checkpoints": checkpoints, "training": training or None,
        "steps": steps, "has_step_markers": markers,
        "summary": summary,
        "notes": ([note] if note else []),
    }
    bounds = src.profile_bounds()       # a window's bounds (tb_iotrace.analysis.jobwindows)
    if bounds is not None:
        doc["profile"] = bounds
    origin = src.window_origin()         # a window tb_iotrace took itself (run, attach)
    if origin is not None:
        doc["window_origin"] = origin
    reason = src.no_io_reason()
    if reason is not None:
        doc["no_io_reason"] = reason
    process = src.process()
    if process is not None:
        doc["process"] = process
    doc["notes"].extend(src.process_notes())
    doc["notes"].extend(write_errors_note(src.write_errors()))
    job_facts.keep(src.path, src.part, doc, before)    # the job verdict of `report --hosts` and the tab
    return doc


def write_errors_note(errors: Any) -> list[str]:
    """What a record says of its own writes that failed (a full disk), as a report note."""
    if not isinstance(errors, dict) or not errors.get("count"):
        return []
    what = ("the trace was left out to keep the final counters" if errors.get("trace_left_out")
            else "this record is the last write that succeeded")
    return [f"{errors['count']} write(s) of this record failed (last: {errors.get('last')}); {what}"]


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


def default_jobs() -> int:
    """Hosts decoded at once: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def build(sources: list[Source], progress: bool = False, jobs: int | None = None) -> dict[str, Any]:
    """The JSON report; ``progress``: a progress line per host on stderr when it is a terminal.
    Several hosts are decoded in parallel, in up to ``jobs`` processes (default: the cores);
    the document keeps the hosts' order."""
    prog = Progress("report", len(sources) if progress else 0, unit="hosts", keep=False)
    groups = group_by_run(sources)
    order = [(run, s) for run, srcs in groups.items() for s in srcs]
    jobs = min(default_jobs() if jobs is None else max(1, jobs), len(order))
    docs: list[dict[str, Any] | None] = [None] * len(order)
    if jobs > 1:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            futures = {pool.submit(host_doc, s): i for i, (_, s) in enumerate(order)}
            for fut in as_completed(futures):
                i = futures[fut]
                docs[i] = fut.result()        # a UserError raised in a worker comes back here
                prog.add(1, f"{order[i][0]}/{order[i][1].host}")
    else:
        for i, (run, s) in enumerate(order):
            prog.add(0, f"{run}/{s.host}")          # say which host is being read while it is
            docs[i] = host_doc(s)
            prog.add(1)
    prog.close()
    runs, k = [], 0
    for run, srcs in groups.items():
        hosts = docs[k:k + len(srcs)]
        runs.append(_with_ranks({"run": run, "hosts": hosts, "totals": run_totals.totals(hosts)}))
        k += len(srcs)
    return {"format": FORMAT, "runs": runs, "jobs": jobwindows.from_report(runs)}


def _with_ranks(run: dict[str, Any]) -> dict[str, Any]:
    """The run's checkpoint saves across its ranks (``checkpoint_saves``) and the straggler
    finding on the late rank's host (tb_iotrace.analysis.checkpoints.ranks)."""
    try:
        from tb_iotrace.analysis.checkpoints.ranks import save_table, straggler_finding
        from tb_iotrace.analysis.job_verdict import annotate
    except ImportError:
        return run
    annotate(run)       # the job verdict across the ranks (docs/diagnosis.md), its findings
    run["checkpoint_saves"] = save_table(run["hosts"])
    got = straggler_finding(run["checkpoint_saves"], run["hosts"])
    if got is not None:
        host = next(h for h in run["hosts"] if h["host"] == got[0])
        host["findings"] = sorted([*host["findings"], got[1]], key=lambda f: -((f.get("impact") or {}).get(
            "step_share") or 0.0))
    return run


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
                from tb_iotrace.analysis.checkpoints.phase_table import render as render_checkpoints

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
            lines += run_totals.render(run.get("totals") or run_totals.totals(hosts))  # partial ones apart
            if run.get("job_verdict"):       # the ranks as one job: on top of the per-host table
                from tb_iotrace.analysis.job_verdict import render as render_job

                lines += ["", render_job(run["job_verdict"]).rstrip("\n")]
            lines += ["", "Per host (POSIX + STDIO counters; input wait within the steps)",
                      textreport.render_hosts([h["summary"] for h in hosts if "summary" in h])]
            if run.get("checkpoint_saves"):
                from tb_iotrace.analysis.checkpoints.ranks import render as render_ranks

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

    --json prints one JSON document (format "tb_iotrace.report/1"):

      {"format": "tb_iotrace.report/1",
       "runs": [{"run": str,
                 "totals": {"whole": {"processes", "modules": {MODULE: {"files", "bytes_read",
                                      "bytes_written", "reads", "writes", "opens"}}},
                            "partial": {"processes", "modules", "hosts": [{"host",
                                        "counted_until_ns", "missing"}]}},
                                                      # the hosts' totals, partial processes
                                                      # (counts up to their last flush) apart
                                                      # (tb_iotrace.analysis.run_totals)
                 "checkpoint_saves": [{"start_ns", "end_ns", "straggler": str|null, "lag_ns",
                                       "ranks": [{"host", "rank": int|null, "start_ns",
                                                  "finish_ns", "end_ns", "bytes", "files",
                                                  "io_time_s", "fsync_time_s",
                                                  "bandwidth_mib_s", "blocking_ns",
                                                  "background_ns", "fs_type", "mount_point",
                                                  "path", "source"}]}],
                                                      # the run's saves across its hosts
                                                      # (ranks): docs/checkpoints.md
                 "hosts": [{"host": str,              # <host> of a capture, <host>.<pid> of a record
                            "kind": "xplane"|"record"|"kineto", "source": path,
                            "verdict": null | {"input_wait_share": float|null,
                                          "basis": "steps"|"input waits"|"none",
                                          "bound": "input"|"partly input"|"not input"|"unknown",
                                          "wait_breakdown": {"file_io", "object_io", "decode", "starved",
                                                             "copy", "other": float|null},
                                          "unmeasured": [str], "unmeasured_share": float,
                                          "reason": str, "cause": str|null, "steps": int,
                                          "input_wait_ms_per_step": float|null,
                                          "change": str, "expected_step_time_change": float,
                                          "model": str, "advice": str, "notes": [str]},
                                                      # tb_iotrace.analysis.verdict; null
                                                      # where there is no analysis (a Kineto
                                                      # trace's workers: the main process's
                                                      # verdict is the job's); docs/diagnosis.md
                            "partial": bool,
                            "dropped": int, "nevents": int,
                            "timeseries": null | {"start_ns": int, "bin_ns": float,
                                          "bytes_read": [int], "bytes_written": [int],
                                          "calls": [int], "io_time_s": [float],
                                          "modules"?: {"POSIX"|"STDIO": {"bytes_read": [int],
                                                                         "bytes_written": [int]}}},
                                                      # whole-run records: the process's life
                                                      # in at most 256 bins (they widen as it
                                                      # runs), independent of the trace cap;
                                                      # bytes_read sums to the files' POSIX +
                                                      # STDIO bytes read; "modules" (records
                                                      # from this version on) splits the bytes
                                                      # per module, bin by bin
                            "untracked": null | {"files", "calls", "bytes_read", "bytes_written",
                                          "reentrant_calls", "examples"},
                                                      # counted, not tracked: files past the
                                                      # file-table bound (TBIO_MAX_FILES), calls
                                                      # from signal handlers inside the shim
                            "totals": {"POSIX"|"STDIO": {"files", "bytes_read", "bytes_written",
                                       "reads", "writes", "opens", "read_time", "write_time",
                                       "meta_time", "read_bw_mib_s", "write_bw_mib_s"}},
                            "files": [{"path", "module", "record_id", ["rank",]
                                       "code": bool,  # code loading (tb_iotrace.base.codepaths)
                                       "counters": {NAME: int}, "fcounters": {NAME: float}}],
                            "objects": null | {"requests", "bytes_read", "ops", "ranged_gets", "errors",
                                        "throttled", "retries", "max_concurrency",
                                        "first_byte_ms_mean", "objects": [{"object", "service",
                                        "bucket", "key", "counters", "fcounters"}],
                                        "objects_left_out", "requests_left_out"},   # docs/objects.md
                            "endpoints": [{"endpoint": "tcp://HOST:PORT", "connections",
                                           "calls_in", "calls_out", "bytes_in", "bytes_out",
                                           "time_in_s", "time_out_s",
                                           "sizes_in": {"0_100".."1G_PLUS": int}}],
                                                      # storage endpoints (docs/capture.md):
                                                      # also listed in "files" by their name
                            "code_loading": {"files", "bytes_read", "bytes_written",
                                             "calls", "time_s"},   # the files marked code
                            "findings": [{"id", "severity", "title", "statement", "suggestion",
                                          "evidence", "files", "ops",
                                          "impact": {"step_share": float|null,
                                                     "ms_per_step": float|null,
                                                     "basis": str}, ...}],
                                                      # ordered by impact; severity follows it
                                                      # tb_iotrace.analysis (captures,
                                                      # records that kept their trace, a
                                                      # Kineto trace's main process)
                            "checkpoints": [{"kind": "save"|"load", "start_ns", "end_ns",
                                             "files", "bytes", "io_time_s", "fsync_time_s",
                                             "rename_time_s", "blocking_ns", "background_ns",
                                             "path", "paths", "calls", "median_call_bytes",
                                             "source", "finish_ns", "fs_type", "mount_point"}],
                                                      # checkpoint saves and loads, [] when none
                                                      # (docs/checkpoints.md; where findings are)
                            "training": null | {"time_ns", "steps": int|null, "basis"},
                                                      # with checkpoints: the training time
                                                      # the checkpoint findings' shares are of
                            "steps": [{"index", "name", "step_num", "start_ps", "end_ps",
                                       "duration_ps", "input_wait_ps", "input_wait_share",
                                       "io_bytes", "io_calls", "io_time_ps",
                                       "object_requests", "object_bytes"}],   # the last two only
                                                      # where the timeline has object requests
                            "has_step_markers": bool, "notes": [str],
                            "summary": {"host", "source", "bytes_read", "bytes_written",
                                        "read_time_s", "io_calls", "files", "input_wait_ns",
                                        "input_wait_pct", "span_ns", "wait_basis"},
                                                      # the per-host table's row (as the
                                                      # tab's /hosts): input wait by the one
                                                      # rule (tb_iotrace.model.stepwait): inside the
                                                      # steps over their time (span_ns),
                                                      # wait_basis "steps"|"input waits"|"none"
                            ["no_io_reason": str,]    # a capture without tb_iotrace's I/O
                                                      # record: why, as the capture tells
                            "process": {...},         # records: pid, ppid, argv, start_ns,
                                                      # end_ns, exit {how, code, signal, exception},
                                                      # rank (null outside a distributed job);
                                                      # PyTorch traces: pid, role, start_ns,
                                                      # end_ns, rank (the trace's distributedInfo,
                                                      # else RANK at capture; null outside one)
                            "profile": {"start_ns", "stop_ns"}}]}],
                                                      # captures only: the profile's bounds
                                                      # (epoch ns, null when it has none)
       "jobs": [{"job": str,                           # the folder of plugins/profile ("" at the top)
                 "windows": [{"n", "run", "job", "start_ns", "stop_ns", "duration_ns", "hosts",
                              "steps", "input_wait_ns", "span_ns", "input_wait_share",
                              "bytes_read", "bytes_written", "read_time_s", "io_calls"}]}]}
                                                      # each profile run a window, in time order
                                                      # (tb_iotrace.analysis.jobwindows); the text report
                                                      # shows a job's table from 2 windows on

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
            rows = hostrows.build(open_source(args.path, args.run, args.host), summary_row, jobs=args.jobs,
                                  full=host_doc)
            sys.stdout.write(json.dumps(rows, indent=1) + "\n" if args.json else hostrows.render(rows))
            sys.stdout.flush()
            return 0
        doc = build(open_source(args.path, args.run, args.host), progress=not args.no_progress, jobs=args.jobs)
        if args.json:
            write_json(doc, sys.stdout)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(render_text(doc, all_files=args.all_files))
        sys.stdout.flush()
        return 0
