"""``tb-iotrace export``."""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from typing import Callable, TextIO

from tb_iotrace.base.redact import redact_url
from tb_iotrace.store import remote
from tb_iotrace.base.progress import Progress
from tb_iotrace.base.safenames import printable
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.model.open_source import open_source
from tb_iotrace.model.sources import SourceError

FORMATS = ("chrome", "darshan", "darshan-log", "parquet", "csv")


class _TerminalText:
    """A text stream that escapes control characters in each tab-separated field it writes
    (safenames.printable), keeping the tabs and newlines of the darshan-parser layout."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write("\n".join("\t".join(map(printable, line.split("\t")))
                                           for line in text.split("\n")))


class Export(Command):
    """Export captures or run records to Chrome trace JSON, Darshan logs or text, Parquet or CSV.

    tb-iotrace export PATH --format chrome|darshan|darshan-log|parquet|csv -o OUT [--run R] [--host H]

    PATH is what `tb-iotrace report` takes (logdir, run directory, capture, run record).

      chrome   Chrome trace-event JSON for Perfetto UI / chrome://tracing: host thread
               tracks, device tracks and I/O tracks (args: file, offset, bytes) on one
               clock (microseconds since the earliest source start). Gzip when OUT ends
               in .gz.
      darshan  darshan-parser text: header comments, then one line per counter:
               module, rank, record id, counter, value, file name, mount point, fs type.
               Each exported process/host is one rank (see the "# rank" comments).
      darshan-log  a binary Darshan log (format 3.41, Darshan 3.5.0's module
               versions: POSIX, STDIO, DXT_POSIX from the trace), tested with
               PyDarshan, `python -m darshan summary`, Drishti and DXT Explorer.
               One log is one job: PATH (after --run/--host) must hold one run;
               its processes/hosts are ranks 0..N-1 of the log in (run, host)
               order (metadata "rankN=<run>/<host>"). Record ids are Darshan's
               hash of the path. Use --host to write one process per log.
      parquet  OUT is a folder: files.parquet (per-file counters, one column per
      csv      counter), ops.parquet (one row per call), objects.parquet (per-object
               counters) and requests.parquet (one row per object request); .csv likewise.

    Traces are written in chunks, with progress on a terminal.
    """

    name = "export"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", metavar="PATH", help="logdir, run directory, .xplane.pb or run record .json; a folder or a URL "
                                                           "(s3://, gs://: pip install tb_iotrace[cloud])")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("-o", "--output", required=True, metavar="OUT",
                            help="output file (chrome, darshan; '-' = stdout for darshan) or folder (parquet, csv); "
                                 "a URL is written locally, then uploaded whole")
        parser.add_argument("--run", metavar="R", help="only this run")
        parser.add_argument("--host", metavar="H", help="only this host")
        parser.add_argument("--no-progress", action="store_true", help="no progress line even on a terminal")

    def run(self, args: argparse.Namespace) -> int:
        # the "wrote ..." line is printed once the output is where it goes (uploaded, for a URL)
        if not remote.is_url(args.output):
            args.output = remote.local_path(args.output)
            _say(self._export(args))
            return 0
        # -o URL: written into a local staging folder, then uploaded whole (a reader never sees
        # half a file); the bucket is checked first, so a wrong one costs no export
        url = remote.trim(args.output)
        try:
            remote.check_writable(url)
        except remote.RemoteError as exc:
            raise UserError(str(exc)) from None
        stage = tempfile.mkdtemp(prefix="export-", dir=_mkdir(remote.cache_root().parent / "staging"))
        try:
            local = os.path.join(stage, url.rsplit("/", 1)[-1] or "out")
            args.output = local
            args.shown = redact_url(url)   # (printed: never its credentials)
            wrote = self._export(args, shown=redact_url(url))
            try:
                if os.path.isdir(local):
                    remote.upload(local, url, last=lambda name: False)
                else:
                    remote.upload_file(local, url)
            except remote.RemoteError as exc:
                raise UserError(f"upload failed: {exc}") from None
            _say(wrote)
            return 0
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def _export(self, args: argparse.Namespace, shown: str | None = None) -> str | None:
        try:
            return self._write(args)
        except (UserError, SourceError) as exc:
            if shown is None:
                raise
            raise UserError(str(exc).replace(args.output, shown)) from None

    def _write(self, args: argparse.Namespace) -> str | None:
        """Write the export; the line that says what was written (None when it went to stdout)."""
        sources = open_source(args.path, args.run, args.host)
        reading = Progress("export: reading", len(sources) if not args.no_progress else 0, unit="hosts", keep=False)
        for s in sources:  # load now: a corrupt input is reported before anything is written
            s.files()
            reading.add(1, f"{s.run}/{s.host}")
        reading.close()
        out = args.output
        shown = getattr(args, "shown", None) or out
        parent = os.path.dirname(os.path.abspath(out)) if out != "-" else "."
        if not os.path.isdir(parent):
            raise UserError(f"{out}: the folder {parent} does not exist")
        progress = not args.no_progress
        try:
            if args.format == "chrome":
                from tb_iotrace.export import chrome

                n = chrome.export(sources, out, progress=progress)
                return f"wrote {shown}: {n} events"
            elif args.format == "darshan":
                from tb_iotrace.export import darshan

                if out == "-":
                    # a terminal gets every field escaped (file names are data from the
                    # capture); a pipe gets the exact text, as darshan-parser writes it: the
                    # bytes -o FILE holds (a name's non-UTF-8 bytes as they are, whatever the
                    # locale's error handler of stdout)
                    if sys.stdout.isatty():
                        darshan.write(sources, _TerminalText(sys.stdout))
                    else:
                        _write_bytes(lambda text: darshan.write(sources, text))
                    return None
                n = darshan.write_file(sources, out)
                return f"wrote {shown}: {n} counter lines"
            elif args.format == "darshan-log":
                from tb_iotrace.export import darshan_log
                from tb_iotrace.recording.opnames import MODULES, counter_names

                if out == "-":
                    raise UserError("darshan-log writes a binary file: give -o FILE.darshan")
                try:
                    layout = {m: (counter_names(m, False), counter_names(m, True)) for m in MODULES}
                    c = darshan_log.write(sources, out, layout)
                except darshan_log.LogError as exc:
                    raise UserError(f"{args.path}: {exc}") from None
                return (f"wrote {shown}: {c['ranks']} rank(s), {c['posix']} POSIX and {c['stdio']} STDIO records"
                        + (f" ({c['objects']} POSIX records are objects, named by URL)" if c.get("objects") else "")
                        + f", {c['bytes']} bytes" + (f"; {c['partial_ranks']} rank(s) PARTIAL (see the log's "
                                                   f"partial_ranks metadata)" if c.get("partial_ranks") else ""))
            else:
                from tb_iotrace.export import flat_tables as tables

                if os.path.exists(out) and not os.path.isdir(out):
                    raise UserError(f"{out}: exists and is not a folder ({args.format} writes files.* and ops.* "
                                    f"into a folder)")
                counts = tables.export(sources, out, args.format, progress=progress)
                return (f"wrote {shown}/files.{args.format} ({counts['files']} rows), "
                        f"{shown}/ops.{args.format} ({counts['ops']} rows), {shown}/objects.{args.format} "
                        f"({counts['objects']} rows) and {shown}/requests.{args.format} ({counts['requests']} rows)")
        except ImportError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:
            raise UserError(f"{out}: {exc.strerror or exc}") from None


def _say(wrote: str | None) -> None:
    if wrote:
        print(wrote, file=sys.stderr)


def _write_bytes(write: Callable[[TextIO], object]) -> None:
    """``write`` to stdout's bytes as UTF-8 with surrogateescape (as a file is written), the text
    stream flushed first and left as it was."""
    sys.stdout.flush()
    raw = getattr(sys.stdout, "buffer", None)
    if raw is None:          # a text-only stream (no bytes under it): its own encoding
        write(sys.stdout)
        return
    text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="\n")
    try:
        write(text)
        text.flush()
    finally:
        text.detach()


def _mkdir(p: "os.PathLike[str]") -> str:
    os.makedirs(p, exist_ok=True)
    return os.fspath(p)
