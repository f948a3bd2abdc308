"""Plain-text I/O report from Darshan-style per-file records.

Input is the JSON form every part of tb_iotrace shares:
``[{"path", "module", "counters": {...}, "fcounters": {...}}]``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.store.filetable import FileTable
from tb_iotrace.base.safenames import printable, quoted
from tb_iotrace.store.timeseries import TimeSeries, sparkline

SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
             "100M_1G", "1G_PLUS")


@dataclass
class ModuleTotals:
    module: str
    files: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    opens: int = 0
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0

    @property
    def read_bw(self) -> float:
        """MiB/s over the time spent in reads (Darshan's per-file I/O time, summed)."""
        return self.bytes_read / 2**20 / self.read_time if self.read_time > 0 else 0.0

    @property
    def write_bw(self) -> float:
        return self.bytes_written / 2**20 / self.write_time if self.write_time > 0 else 0.0


class TableFiles(Sequence[dict[str, Any]]):
    """A whole-run record's files as the report's entries (``{"path", "module", "record_id",
    "code", "counters", "fcounters"}``), built one at a time when read, so a record of a million
    files is listed without a million dicts at once; the summaries of this module (totals,
    busiest files, histograms, code loading) read the columns instead. ``ids``: each row's
    Darshan record id, ``code``: whether it is code loading (rows in the table's module order);
    ``rows``: the rows kept (all when None)."""

    def __init__(self, table: FileTable, ids: np.ndarray, code: np.ndarray, rows: np.ndarray | None = None) -> None:
        self.table, self.ids, self.code = table, ids, code
        self.rows = np.arange(len(table), dtype=np.int64) if rows is None else rows
        self._parts = list(table.modules.values())
        self._starts = np.cumsum([0] + [len(t) for t in self._parts])[:-1]

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def _entry(self, r: int, path: str | None = None) -> dict[str, Any]:
        k = int(np.searchsorted(self._starts, r, side="right")) - 1
        t = self._parts[k]
        d = t.record(r - int(self._starts[k]), path)
        return {"path": d["path"], "module": d["module"], "record_id": int(self.ids[r]), "code": bool(self.code[r]),
                "counters": d["counters"], "fcounters": d["fcounters"]}

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._entry(int(self.rows[i]))

    def __iter__(self) -> Any:
        for r in self.rows.tolist():
            yield self._entry(r)

    def __reduce__(self) -> Any:   # to a report worker's parent: the columns, not the entries
        return (TableFiles, (self.table, self.ids, self.code, self.rows))

    def select(self, keep: np.ndarray) -> "TableFiles":
        """The entries where ``keep`` (a bool per entry) holds."""
        return TableFiles(self.table, self.ids, self.code, self.rows[np.asarray(keep, dtype=bool)])

    def module_rows(self, module: str) -> tuple[Any, np.ndarray]:
        """(the module's rows, the kept local row indices of that module)."""
        for k, t in enumerate(self._parts):
            if t.module == module:
                a = int(self._starts[k])
                r = self.rows[(self.rows >= a) & (self.rows < a + len(t))]
                return t, r - a
        return None, np.zeros(0, np.int64)

    def counter_sum(self, module: str, name: str) -> Any:
        t, r = self.module_rows(module)
        col = t.column(name) if t is not None else None
        if col is None or not len(r):
            return 0
        if col.dtype.kind != "f":
            return int(col[r].sum())
        acc = 0.0
        for x in col[r].tolist():   # in row order, as the per-record path adds them (same float)
            acc += x
        return acc

    def moved(self) -> np.ndarray:
        """Bytes read + written per entry."""
        out = np.zeros(len(self.table), np.int64)
        for k, t in enumerate(self._parts):
            a = int(self._starts[k])
            for name in (f"{t.module}_BYTES_READ", f"{t.module}_BYTES_WRITTEN"):
                col = t.column(name)
                if col is not None:
                    out[a:a + len(t)] += col.astype(np.int64)
        return out[self.rows]


def totals(files: Iterable[Mapping[str, Any]]) -> dict[str, ModuleTotals]:
    if isinstance(files, TableFiles):
        return _table_totals(files)
    out: dict[str, ModuleTotals] = {}
    for f in files:
        m, c, fc = f["module"], f["counters"], f["fcounters"]
        t = out.setdefault(m, ModuleTotals(m))
        t.files += 1
        t.bytes_read += int(c.get(f"{m}_BYTES_READ", 0))
        t.bytes_written += int(c.get(f"{m}_BYTES_WRITTEN", 0))
        t.reads += int(c.get(f"{m}_READS", 0))
        t.writes += int(c.get(f"{m}_WRITES", 0))
        t.opens += int(c.get(f"{m}_OPENS", 0)) + int(c.get(f"{m}_FDOPENS", 0))
        t.read_time += float(fc.get(f"{m}_F_READ_TIME", 0.0))
        t.write_time += float(fc.get(f"{m}_F_WRITE_TIME", 0.0))
        t.meta_time += float(fc.get(f"{m}_F_META_TIME", 0.0))
    return out


def _table_totals(files: TableFiles) -> dict[str, ModuleTotals]:
    out: dict[str, ModuleTotals] = {}
    for m in files.table.modules:
        _, r = files.module_rows(m)
        if not len(r):
            continue
        c = files.counter_sum
        out[m] = ModuleTotals(m, len(r), int(c(m, f"{m}_BYTES_READ")), int(c(m, f"{m}_BYTES_WRITTEN")),
                              int(c(m, f"{m}_READS")), int(c(m, f"{m}_WRITES")),
                              int(c(m, f"{m}_OPENS")) + int(c(m, f"{m}_FDOPENS")), c(m, f"{m}_F_READ_TIME"),
                              c(m, f"{m}_F_WRITE_TIME"), c(m, f"{m}_F_META_TIME"))
    return out


def merge_totals(parts: Iterable[Mapping[str, ModuleTotals]]) -> dict[str, ModuleTotals]:
    """Module totals of several hosts added up."""
    out: dict[str, ModuleTotals] = {}
    for p in parts:
        for m, t in p.items():
            o = out.setdefault(m, ModuleTotals(m))
            for k in ("files", "bytes_read", "bytes_written", "reads", "writes", "opens", "read_time",
                      "write_time", "meta_time"):
                setattr(o, k, getattr(o, k) + getattr(t, k))
    return out


# (row field, POSIX counter, STDIO counter) of a host's row in the "All hosts" table
HOST_COUNTERS = (("bytes_read", "POSIX_BYTES_READ", "STDIO_BYTES_READ"),
                 ("bytes_written", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"),
                 ("read_time_s", "POSIX_F_READ_TIME", "STDIO_F_READ_TIME"))


def host_row(host: str, modules: Sequence[str], counter: Callable[[str], Sequence[float]], *,
             trace: tuple[float, float, float] | None = None, io_calls: int = 0,
             input_wait_ns: float = 0.0, span_ns: float = 0.0, wait_basis: str = "none") -> dict[str, Any]:
    """One host's row of the per-host table (the tab's ``/hosts``, ``tb-iotrace report``'s
    ``summary`` and the fleet's ``hosts`` table; kept on disk by :mod:`tb_iotrace.store.summaries`),
    so that a slow worker stands out: ``bytes_read``/``bytes_written``/``read_time_s`` summed
    over the host's POSIX and STDIO counter records (``modules[i]`` the module of record ``i``,
    ``counter(name)`` that counter per record, NaN where absent; ``source`` "counters"), else
    ``trace`` = (bytes read, bytes written, read seconds) of the traced calls ("trace");
    ``input_wait_pct`` the input wait against ``span_ns`` (at most 100); ``wait_basis`` how the
    wait was measured (:mod:`tb_iotrace.model.stepwait`: "steps", "input waits" or "none")."""
    if len(modules):
        mods = np.asarray(modules, dtype=object)
        got = {}
        for name, posix, stdio in HOST_COUNTERS:
            v = np.where(mods == "POSIX", np.asarray(counter(posix), dtype=np.float64),
                         np.where(mods == "STDIO", np.asarray(counter(stdio), dtype=np.float64), np.nan))
            got[name] = float(np.nansum(v))
        source = "counters"
    elif trace is not None and io_calls:
        got = dict(zip(("bytes_read", "bytes_written", "read_time_s"), map(float, trace)))
        source = "trace"
    else:
        got = dict.fromkeys(("bytes_read", "bytes_written", "read_time_s"), 0.0)
        source = "none"
    span = max(float(span_ns), 1.0)
    rt = got["read_time_s"]
    return {"host": host, "source": source, "bytes_read": int(got["bytes_read"]),
            "bytes_written": int(got["bytes_written"]), "read_time_s": rt if np.isfinite(rt) else 0.0,
            "io_calls": int(io_calls), "files": len(modules), "input_wait_ns": int(input_wait_ns),
            "input_wait_pct": round(100.0 * min(float(input_wait_ns), span) / span, 2) if span_ns else 0.0,
            "span_ns": int(span_ns), "wait_basis": wait_basis}


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


def size_histogram(files: Iterable[Mapping[str, Any]], kind: str = "READ") -> dict[str, int]:
    """POSIX access-size histogram summed over files (Darshan's ten bins)."""
    hist = dict.fromkeys(SIZE_BINS, 0)
    if isinstance(files, TableFiles):
        return {b: int(files.counter_sum("POSIX", f"POSIX_SIZE_{kind}_{b}")) for b in SIZE_BINS}
    for f in files:
        if f["module"] != "POSIX":
            continue
        for b in SIZE_BINS:
            hist[b] += int(f["counters"].get(f"POSIX_SIZE_{kind}_{b}", 0))
    return hist


def access_pattern(files: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    keys = ("READS", "SEQ_READS", "CONSEC_READS", "WRITES", "SEQ_WRITES", "CONSEC_WRITES")
    out = dict.fromkeys(keys, 0)
    if isinstance(files, TableFiles):
        return {k: int(files.counter_sum("POSIX", f"POSIX_{k}")) for k in keys}
    for f in files:
        if f["module"] == "POSIX":
            for k in keys:
                out[k] += int(f["counters"].get(f"POSIX_{k}", 0))
    return out


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def untracked_note(untracked: Mapping[str, Any] | None) -> str:
    """One line on what a capture counted but could not track ("" when nothing was)."""
    u = untracked or {}
    files, calls, reentrant = int(u.get("files") or 0), int(u.get("calls") or 0), int(u.get("reentrant_calls") or 0)
    parts = []
    if files or calls:
        moved = int(u.get("bytes_read") or 0) + int(u.get("bytes_written") or 0)
        examples = [printable(e) for e in (u.get("examples") or [])][:3]
        parts.append(f"files not tracked (the file table was full: raise TBIO_MAX_FILES): "
                     f"{files} opens, {calls} calls, {human_bytes(int(u.get('bytes_read') or 0))} read, "
                     f"{human_bytes(int(u.get('bytes_written') or 0))} written on them"
                     + (f" ({human_bytes(moved)} in all)" if moved else "")
                     + (f"; e.g. {', '.join(examples)}" if examples else ""))
    if reentrant:
        parts.append(f"{reentrant} calls from signal handlers inside the shim passed through untraced")
    return "; ".join(parts)


def code_summary(files: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Files, bytes, calls and time of the code-loading files (marked ``"code": true``)."""
    code: Any
    if isinstance(files, TableFiles):
        code = files.select(files.code[files.rows])
        t = totals(code).values()
        return {"files": len({f["path"] for f in code}), "bytes_read": sum(m.bytes_read for m in t),
                "bytes_written": sum(m.bytes_written for m in t),
                "calls": sum(m.reads + m.writes + m.opens for m in t),
                "time_s": sum(m.read_time + m.write_time + m.meta_time for m in t)}
    code = [f for f in files if f.get("code")]
    t = totals(code).values()
    return {"files": len({f["path"] for f in code}), "bytes_read": sum(m.bytes_read for m in t),
            "bytes_written": sum(m.bytes_written for m in t),
            "calls": sum(m.reads + m.writes + m.opens for m in t),
            "time_s": sum(m.read_time + m.write_time + m.meta_time for m in t)}


def code_line(summary: Mapping[str, Any], shown: bool) -> str:
    """The one line the report gives code loading."""
    return (f"Code loading (Python imports, shared libraries, interpreter, framework config): "
            f"{summary['files']} files, {human_bytes(summary['bytes_read'])} read, "
            f"{summary['time_s']:.4f} s in calls" + ("" if shown else "; left out below (--all-files shows them)"))


BOUND_WORDS = {"input": "INPUT-BOUND", "partly input": "PARTLY INPUT-BOUND", "not input": "NOT INPUT-BOUND",
               "unknown": "NO VERDICT"}
WAIT_PARTS = (("file_io", "file I/O"), ("object_io", "object I/O"), ("decode", "decode"), ("starved", "starved"),
              ("copy", "copy"), ("other", "other"))
SHOWN_WHEN_SOME = ("object_io",)     # a part most captures never have: named only when it is there


def render_verdict(v: Mapping[str, Any]) -> str:
    """The verdict's lines at the top of a host's report (tb_iotrace.analysis.verdict)."""
    share = v.get("input_wait_share")
    head = f"Verdict: {BOUND_WORDS.get(str(v.get('bound')), str(v.get('bound')).upper())}"
    if isinstance(v.get("waits_for"), dict):       # another rank's input sets the step (job verdict)
        head = f"Verdict: WAITS FOR {str(v['waits_for'].get('label', 'another rank')).upper()}'S INPUT (job verdict)"
    if share is not None:
        per = v.get("input_wait_ms_per_step")
        head += (f": the step waits for input {100 * share:.1f}% of its time"
                 + (f" ({per:.2f} ms per step over {v.get('steps')} steps)" if per is not None else
                    f" ({v.get('basis')})"))
    lines = [head]
    b = v.get("wait_breakdown") or {}
    if share:
        parts = [f"{name} {100 * b[k]:.0f}%" for k, name in WAIT_PARTS
                 if b.get(k) is not None and (b[k] or k not in SHOWN_WHEN_SOME)]
        if v.get("unmeasured") and (v.get("unmeasured_share") or 0) > 0:
            parts.append(f"{' or '.join(v['unmeasured'])} (not measured) {100 * v['unmeasured_share']:.0f}%")
        lines.append("  the wait: " + ", ".join(parts))
        if v.get("reason"):
            lines.append(f"  not measured: {v['reason']}")
    if v.get("collective_wait_share") is not None and v.get("collectives"):
        lines.append(f"  collective wait: {100 * v['collective_wait_share']:.1f}% of step time "
                     f"({v.get('collective_wait_ms_per_step') or 0:.2f} ms per step in all-reduce/all-gather/...)")
    if v.get("advice"):
        lines.append(f"  advice: {v['advice']}")
    return "\n".join(lines)


def render(files: Sequence[Mapping[str, Any]], *, title: str = "", dropped: int = 0, top: int = 10,
           empty: str = "", untracked: Mapping[str, Any] | None = None, all_files: bool = False,
           verdict: Mapping[str, Any] | None = None) -> str:
    """The report a user reads first, as text (``empty``: what to say when there are no files).
    Files marked ``"code": true`` (tb_iotrace.base.codepaths) are one line and left out of the
    tables unless ``all_files``."""
    lines: list[str] = []
    if title:
        title = printable(title)
        lines += [title, "=" * len(title)]
    if verdict:
        lines += [render_verdict(verdict), ""]
    note = untracked_note(untracked)
    if note:
        lines.append(f"NOT TRACKED: {note}")
    code = code_summary(files)
    if code["files"]:
        lines.append(code_line(code, all_files))
    if isinstance(files, TableFiles):
        if not all_files:
            files = files.select(~files.code[files.rows])
    elif not all_files:
        files = [f for f in files if not f.get("code")]
    if not files:
        lines.append(printable(empty) if empty else ("No data file I/O was recorded." if code["files"] else
                               "No file I/O was recorded (nothing traced, or every path was excluded)."))
        return "\n".join(lines) + "\n"
    lines.append(f"{'module':<7} {'files':>6} {'read':>11} {'written':>11} {'reads':>9} {'writes':>9} "
                 f"{'opens':>7} {'read s':>9} {'write s':>9} {'meta s':>9} {'read MiB/s':>11}")
    for t in totals(files).values():
        lines.append(f"{t.module:<7} {t.files:>6} {human_bytes(t.bytes_read):>11} "
                     f"{human_bytes(t.bytes_written):>11} {t.reads:>9} {t.writes:>9} {t.opens:>7} "
                     f"{t.read_time:>9.4f} {t.write_time:>9.4f} {t.meta_time:>9.4f} {t.read_bw:>11.1f}")
    if dropped:
        lines.append(f"(trace cap reached: {dropped} calls not in the trace; counters are exact)")

    def moved(f: Mapping[str, Any]) -> int:
        m = f["module"]
        return int(f["counters"].get(f"{m}_BYTES_READ", 0)) + int(f["counters"].get(f"{m}_BYTES_WRITTEN", 0))

    lines += ["", f"Busiest files (top {top} by bytes moved)"]
    if isinstance(files, TableFiles):
        mv = files.moved()
        busiest = [files[int(i)] for i in np.argsort(-mv, kind="stable")[:top]]
    else:
        busiest = sorted(files, key=moved, reverse=True)[:top]
    for f in busiest:
        m = f["module"]
        c = f["counters"]
        lines.append(f"  {human_bytes(moved(f)):>11}  {m:<5} reads={c.get(f'{m}_READS', 0):<7} "
                     f"writes={c.get(f'{m}_WRITES', 0):<7} {quoted(f['path'])}")
    hist = size_histogram(files)
    if any(hist.values()):
        lines += ["", "POSIX read sizes"]
        peak = max(hist.values())
        for b, n in hist.items():
            if n:
                lines.append(f"  {b:>9}  {n:>9}  {'#' * max(1, round(40 * n / peak))}")
    pat = access_pattern(files)
    if pat["READS"]:
        lines += ["", f"POSIX read pattern: {pat['READS']} reads, "
                      f"{100 * pat['SEQ_READS'] / pat['READS']:.0f}% sequential, "
                      f"{100 * pat['CONSEC_READS'] / pat['READS']:.0f}% consecutive"]
    return "\n".join(lines) + "\n"


def render_timeseries(ts: Mapping[str, Any], width: int = 64) -> str:
    """Text lines: the read and write bandwidth over the window, one sparkline each."""
    series = TimeSeries.from_dict(ts)
    if not len(series):
        return ""
    secs = series.bin_ns / 1e9
    span = len(series) * secs
    lines = [f"I/O over the whole run: {span:.1f} s in {len(series)} bins of {_duration(secs)} "
             f"(one character: max of {max(1, -(-len(series) // width))} bins)"]
    for name, arr in (("read", series.bytes_read), ("write", series.bytes_written)):
        if not any(arr):
            continue
        peak = max(arr) / secs
        busiest = max(range(len(arr)), key=arr.__getitem__)
        lines.append(f"  {name:<5} |{sparkline(arr, width)}| peak {human_bytes(peak)}/s "
                     f"at +{busiest * secs:.1f} s, total {human_bytes(sum(arr))}")
    lines.append(f"  calls |{sparkline(series.calls, width)}| {sum(series.calls)} calls, "
                 f"{sum(series.io_time_s):.3f} s in I/O")
    return "\n".join(lines) + "\n"


def _duration(s: float) -> str:
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.2f} s"
    return f"{s * 1e3:.1f} ms"
