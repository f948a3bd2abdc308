"""``tb-iotrace fleet``: build and query a fleet dataset (:mod:`tb_iotrace.fleet`)."""
from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import io
import json
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tb_iotrace.fleet import ENGINES, REPORTS, Dataset, FleetError, Layout, host_tables, query, sql_of, stamp, write_parts
from tb_iotrace.fleet.deps import INSTALL
from tb_iotrace.store.logdir import XPLANE_SUFFIX
from tb_iotrace.base.progress import Progress
from tb_iotrace.base.safenames import printable
from tb_iotrace.store.runrecord import RECORD_SUFFIX, TABLE_SUFFIX
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.model.open_source import SKIPPED, open_source
from tb_iotrace.model.capture_source import CaptureSource
from tb_iotrace.model.sources import Source, SourceError
from tb_iotrace.model.source_kinds import DARSHAN, kind_by_head, kind_by_name
from tb_iotrace.cli.import_darshan import ImportDarshan
from tb_iotrace.cli import hostrows
from tb_iotrace.analysis import host_result
from tb_iotrace.analysis.run_result import default_jobs

DARSHAN_SUFFIX = ".darshan"
SKIPPED_RC = 3
DARSHAN_TIMEOUT_S = 600.0   # import-darshan's limit for reading one log (where it has one)
SCAN_SKIPPED = SKIPPED     # how the source scan (model.open_source) names a file it skips


# --------------------------------------------------------------------------- sources

@dataclass
class Unit:
    """One source file of the dataset: its hosts are built, replaced or skipped together."""

    key: str                       # the file's real path: what the manifest knows it by
    kind: str                      # xplane, record, kineto, darshan
    files: list[str]               # what its stamp covers (a record's .npz beside its JSON)
    sources: list[Source] = field(default_factory=list)
    run: str = ""                  # a Darshan log's run: the log's name
    stamp: list[list[Any]] = field(default_factory=list)


def is_darshan_log(path: Path) -> bool:
    """A Darshan log by the model's one rule (:mod:`tb_iotrace.model.source_kinds`): its name, else
    its header (either byte order)."""
    if kind_by_name(path) == DARSHAN:
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    return kind_by_head(head) == DARSHAN


def _darshan_unit(path: Path) -> Unit:
    run = path.name[: -len(DARSHAN_SUFFIX)] if path.name.endswith(DARSHAN_SUFFIX) else path.name
    return Unit(key=os.path.realpath(path), kind="darshan", files=[str(path)], run=run)


def _stamped(p: str) -> list[str]:
    if p.endswith(RECORD_SUFFIX):
        stem = p[: -len(RECORD_SUFFIX)]
        return [p] + [s for s in (stem + TABLE_SUFFIX, stem + ".npz") if os.path.exists(s)]
    return [p]


def units_of(paths: Sequence[str]) -> tuple[list[Unit], list[str]]:
    """The source files under the PATHs (as ``tb-iotrace report`` opens them, plus Darshan
    logs: a ``.darshan`` file, or every one under a folder), and a line for each PATH that
    holds none."""
    units: dict[str, Unit] = {}
    errors: list[str] = []
    for path in paths:
        p = Path(path)
        logs: list[Path] = []
        if p.is_file() and is_darshan_log(p):
            logs = [p]
            sources: list[Source] = []
        else:
            if p.is_dir():
                logs = sorted(x for x in p.rglob(f"*{DARSHAN_SUFFIX}")
                              if x.is_file() and not any(part.startswith(".") for part in x.relative_to(p).parts))
            said = io.StringIO()
            try:
                with contextlib.redirect_stderr(said):   # the traces a folder scan skipped
                    sources = open_source(path)
            except (UserError, SourceError) as exc:
                if not logs:
                    errors.append(str(exc))
                sources = []
            errors += [ln[len(SCAN_SKIPPED):] for ln in said.getvalue().splitlines() if ln.startswith(SCAN_SKIPPED)]
            sys.stderr.write("".join(ln + "\n" for ln in said.getvalue().splitlines() if not ln.startswith(SCAN_SKIPPED)))
        found: dict[str, Unit] = {}
        for s in sources:        # a Kineto trace's processes are one file's hosts
            key = os.path.realpath(s.path)
            found.setdefault(key, Unit(key=key, kind=s.kind, files=_stamped(s.path))).sources.append(s)
        for log in logs:
            u = _darshan_unit(log)
            found.setdefault(u.key, u)
        for key, u in found.items():   # a file reached from two PATHs: the first one's names
            units.setdefault(key, u)
    return list(units.values()), errors


# --------------------------------------------------------------------------- building

def _docs(unit: Unit) -> list[tuple[str, dict[str, Any], str]]:
    """(run, host document, mount table text) of each host of a source."""
    if unit.kind == "darshan":
        with tempfile.TemporaryDirectory(prefix="tbio-fleet-") as tmp:
            said = io.StringIO()
            with contextlib.redirect_stderr(said):      # its "wrote ..." line
                ImportDarshan().run(argparse.Namespace(log=unit.files[0], logdir=tmp, host=None,
                                                       timeout=DARSHAN_TIMEOUT_S))
            (cap,) = Path(tmp).glob(f"plugins/profile/*/*{XPLANE_SUFFIX}")
            host = cap.name[: -len(XPLANE_SUFFIX)]
            got = host_result.build(CaptureSource(run=unit.run, host=host, path=str(cap)))   # a capture of a moment
            got.kind, got.source = "darshan", unit.key
            return [(unit.run, got.to_dict(), "")]
    out = []
    for s in unit.sources:
        doc = hostrows.kept(s)         # its row and job facts kept, as `report` keeps them
        doc["source"] = unit.key       # the real path: the dataset outlives the working folder
        out.append((s.run, doc, s.mounts()))
    return out


def build_unit(unit: Unit, root: str, seq: int, layout: Layout) -> tuple[list[tuple[str, str]], list[str]]:
    """Write one source's parts (numbered ``seq``): its (run, host) pairs and part paths."""
    hosts, parts = [], []
    for run, doc, mounts in _docs(unit):
        hosts.append((run, str(doc["host"])))
        parts += write_parts(root, seq, run, str(doc["host"]), host_tables(run, doc, layout, mounts))
    return hosts, parts


def _try_unit(unit: Unit, root: str, seq: int, layout: Layout) -> tuple[Any, str | None]:
    """:func:`build_unit`, its failure as a line (a corrupt source must not stop the build)."""
    try:
        return build_unit(unit, root, seq, layout), None
    except (UserError, SourceError) as exc:
        return None, str(exc)
    except FleetError as exc:
        return None, f"{unit.files[0]}: {exc}"
    except Exception as exc:  # a decoder's own error on a damaged file
        return None, f"{unit.files[0]}: unreadable ({type(exc).__name__}: {exc})"


def counter_layout() -> Layout:
    from tb_iotrace.recording.opnames import MODULES, counter_names

    return {m: (counter_names(m, False), counter_names(m, True)) for m in MODULES}


def _missing(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is None
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _require(*modules: str) -> None:
    """The extra's packages, checked without importing them (the build forks workers, and
    forking after pyarrow has started its threads is unsafe)."""
    missing = [m for m in modules if _missing(m)]
    if missing:
        raise UserError(f"the fleet dataset needs {', '.join(missing)}, from the 'fleet' extra: {INSTALL}")


@dataclass
class BuildStats:
    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)


def build(paths: Sequence[str], out: str, jobs: int | None = None, progress: bool = False) -> BuildStats:
    _require("pyarrow")
    layout = counter_layout()
    stats = BuildStats()
    units, errors = units_of(paths)
    stats.skipped += errors
    ds = Dataset.open(out, create=True)                # a bad OUT is reported before any work
    try:
        ds.root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: {exc.strerror or exc}") from None
    with ds.lock():
        ds = Dataset.open(out, create=True)            # another build may have committed meanwhile
        todo = []
        for u in units:
            try:
                u.stamp = stamp(u.files)
            except OSError as exc:
                stats.skipped.append(f"{u.files[0]}: cannot read: {exc.strerror or exc}")
                continue
            if ds.unchanged(u.key, u.stamp):
                stats.unchanged += 1
            else:
                todo.append((u, ds.allocate()))
        prog = Progress("fleet build", len(todo) if progress else 0, unit="sources")
        results: list[tuple[Unit, Any, str | None]] = []
        n = min(default_jobs() if jobs is None else max(1, jobs), len(todo))
        if n > 1:
            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
            with ProcessPoolExecutor(n, mp_context=ctx) as pool:
                futures = {pool.submit(_try_unit, u, str(ds.root), seq, layout): u for u, seq in todo}
                for fut in as_completed(futures):
                    u = futures[fut]
                    try:
                        got, err = fut.result()
                    except BrokenProcessPool as exc:
                        got, err = None, f"{u.files[0]}: the reading process died ({exc})"
                    results.append((u, got, err))
                    prog.add(1, os.path.basename(u.files[0]))
        else:
            for u, seq in todo:
                prog.add(0, os.path.basename(u.files[0]))
                got, err = _try_unit(u, str(ds.root), seq, layout)
                results.append((u, got, err))
                prog.add(1)
        prog.close()
        old: list[str] = []
        new: list[str] = []
        for u, got, err in results:
            if err is not None:
                stats.skipped.append(err)
                continue
            hosts, parts = got
            if u.key in ds.sources:
                stats.replaced += 1
            else:
                stats.added += 1
            old += ds.put(u.key, u.stamp, u.kind, hosts, parts)
            new += parts
        try:
            ds.commit(layout, new)
            ds.remove(old)
            ds.sweep()
        except OSError as exc:
            raise UserError(f"{out}: {exc.strerror or exc}") from None
    return stats


# --------------------------------------------------------------------------- output

def _cell(v: Any) -> str:
    """A value as the table shows it: names come from files anyone could write, so escapes and
    line breaks are written out (``printable``), as ``report`` writes them."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return printable(v)


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    columns = [printable(c) for c in columns]
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    num = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
           for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(columns, widths, num)).rstrip()]
    lines += ["  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, num)).rstrip() for r in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines) + "\n"


def write_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]], out: Any) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow([printable(c) for c in columns])
    for r in rows:   # (a string's escapes and line breaks written out, as in the table)
        w.writerow(["" if v is None else json.dumps(v) if isinstance(v, (dict, list, bool))
                    else printable(v) if isinstance(v, str) else v for v in r])


# --------------------------------------------------------------------------- the command

class Fleet(Command):
    """Build and query a fleet dataset: many jobs' I/O as one Parquet dataset for DuckDB and Spark.

    tb-iotrace fleet build PATH... -o DATASET [--jobs N]
    tb-iotrace fleet query DATASET "SQL" [--engine duckdb|spark] [--master URL] [--json|--csv]
    tb-iotrace fleet report DATASET [--engine duckdb|spark] [--master URL] [--json] [--limit N]

    build: PATH is what `tb-iotrace report` takes (logdirs, runs, captures, whole-run records,
    PyTorch traces) or a Darshan log (a .darshan file; a folder's .darshan files are taken
    too). DATASET holds Parquet parts, Hive-style (<table>/run=<run>/host=<host>/part-N.parquet),
    of four tables: files (run, host, module, path, record_id, rank, code, mount_point,
    fs_type, one column per Darshan counter), hosts (the report's per-host summary, its
    verdict, totals, process... as JSON text), steps and findings. Building again adds
    the new sources and replaces the changed ones (a source is known by its path, size and
    modification time). A corrupt source is named on stderr and skipped; the rest is built
    and the exit code is 3.

    query: SQL over the views files, hosts, steps, findings, checkpoints; DuckDB in this process by
    default, or Spark (pyspark and a Java runtime; --master for a cluster, local[*]
    otherwise). --json prints a list of row objects, --csv a header and rows.

    report: ready reports: jobs by input wait, files read in small requests across jobs,
    slowest file systems.

    Needs the 'fleet' extra: pip install 'tb_iotrace[fleet]'. See docs/fleet.md.
    """

    name = "fleet"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="fleet_command", metavar="ACTION")
        sub.required = True
        b = sub.add_parser("build", help="add sources to a dataset (or make it)")
        b.add_argument("paths", nargs="+", metavar="PATH", help="logdir, run, capture, run record, PyTorch trace, "
                                                                "Darshan log")
        b.add_argument("-o", "--output", required=True, metavar="DATASET", help="the dataset folder")
        b.add_argument("--jobs", type=int, metavar="N", default=None,
                       help="sources read at once (default: the cores this process may use)")
        b.add_argument("--no-progress", action="store_true", help="no progress line even on a terminal")
        for name, helptext in (("query", "run SQL over a dataset"), ("report", "the ready reports")):
            q = sub.add_parser(name, help=helptext)
            q.add_argument("dataset", metavar="DATASET")
            if name == "query":
                q.add_argument("sql", metavar="SQL", help="over the views files, hosts, steps, findings, checkpoints")
            q.add_argument("--engine", choices=ENGINES, default="duckdb")
            q.add_argument("--master", metavar="URL", help="Spark's master (default local[*])")
            fmt = q.add_mutually_exclusive_group()
            fmt.add_argument("--json", action="store_true", help="rows as a JSON list of objects")
            if name == "query":
                fmt.add_argument("--csv", action="store_true", help="rows as CSV")
            else:
                q.add_argument("--limit", type=int, default=20, metavar="N", help="rows per report (default 20)")

    def run(self, args: argparse.Namespace) -> int:
        try:
            if args.fleet_command == "build":
                return self._build(args)
            if args.master and args.engine != "spark":
                raise UserError("--master is Spark's: use it with --engine spark")
            _require("duckdb" if args.engine == "duckdb" else "pyspark", "pyarrow")
            ds = Dataset.open(args.dataset)
            if args.fleet_command == "query":
                return self._query(ds, args)
            return self._report(ds, args)
        except FleetError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:       # the dataset folder: read-only, full, gone
            where = exc.filename or (args.output if args.fleet_command == "build" else args.dataset)
            raise UserError(f"{where}: {exc.strerror or exc}") from None

    def _build(self, args: argparse.Namespace) -> int:
        stats = build(args.paths, args.output, jobs=args.jobs, progress=not args.no_progress)
        for line in stats.skipped:
            print(f"tb-iotrace fleet: skipped {printable(line)}", file=sys.stderr)
        ds = Dataset.open(args.output)
        print(f"{args.output}: {stats.added} sources added, {stats.replaced} replaced, {stats.unchanged} unchanged"
              + (f", {len(stats.skipped)} skipped" if stats.skipped else "")
              + f"; {len(ds.sources)} sources, {ds.hosts()} hosts in the dataset", file=sys.stderr)
        if stats.skipped and not (stats.added or stats.replaced or stats.unchanged):
            raise UserError(f"nothing built: every source was skipped ({stats.skipped[0]})")
        return SKIPPED_RC if stats.skipped else 0

    def _query(self, ds: Dataset, args: argparse.Namespace) -> int:
        (res,) = query(ds, args.sql, args.engine, args.master)
        if args.json:
            json.dump(res.records(), sys.stdout, indent=1, ensure_ascii=True)
            sys.stdout.write("\n")
        elif args.csv:
            write_csv(res.columns, res.rows, sys.stdout)
        else:
            sys.stdout.write(render_table(res.columns, res.rows))
        return 0

    def _report(self, ds: Dataset, args: argparse.Namespace) -> int:
        if args.limit < 1:
            raise UserError("--limit must be at least 1")
        results = query(ds, [sql_of(r, args.limit) for r in REPORTS], args.engine, args.master)
        if args.json:
            json.dump({r.name: res.records() for r, res in zip(REPORTS, results)}, sys.stdout, indent=1,
                      ensure_ascii=True)
            sys.stdout.write("\n")
            return 0
        for r, res in zip(REPORTS, results):
            sys.stdout.write(f"{r.title}\n{'=' * len(r.title)}\n")
            sys.stdout.write(render_table(res.columns, res.rows) if res.rows else "(nothing to show)\n")
            sys.stdout.write("\n")
        return 0
