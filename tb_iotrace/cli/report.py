"""``tb-iotrace report``: the arguments, the report's document
(:mod:`tb_iotrace.analysis.run_result`, each host's result from :mod:`tb_iotrace.analysis.host_result`)
as text (:mod:`tb_iotrace.cli.report_text`) or as JSON, written as it is built."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tb_iotrace.analysis import host_result, run_result
from tb_iotrace.analysis.file_totals import TableFiles
from tb_iotrace.cli import hostrows
from tb_iotrace.cli._base import Command
from tb_iotrace.cli.report_text.document import render_host_table, render_report
from tb_iotrace.model.open_source import open_source

def write_json(doc: Any, out: Any, level: int = 0) -> None:
    """``doc`` as JSON (indented by one space per level), streaming: a record's file entries
    (:class:`tb_iotrace.analysis.file_totals.TableFiles`) are built and written one at a time, one line each."""
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
    elif isinstance(doc, TableFiles):
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
            sys.stdout.write(json.dumps(rows, indent=1) + "\n" if args.json else render_host_table(rows))
            sys.stdout.flush()
            return 0
        doc = run_result.build(open_source(args.path, args.run, args.host), progress=not args.no_progress,
                               jobs=args.jobs, make=hostrows.kept)
        if args.json:
            write_json(doc, sys.stdout)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(render_report(doc, all_files=args.all_files))
        sys.stdout.flush()
        return 0
