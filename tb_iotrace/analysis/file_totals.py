"""A host's per-file records summed: module totals, the per-host table's row, the POSIX size
histogram and access pattern, code loading, the files the report lists first (:func:`files_view`).

Input is the JSON form every part of tb_iotrace shares,
``[{"path", "module", "counters": {...}, "fcounters": {...}}]``, or a whole-run record's columns
(:class:`TableFiles`). The text of these figures is the report's (:mod:`tb_iotrace.cli.report_text`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.base.safenames import printable
from tb_iotrace.base.sizes import human_bytes
from tb_iotrace.store.filetable import FileTable

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


@dataclass
class FilesView:
    """What the report lists of a host's files: code loading summed apart (``code``), then
    the files shown (the data files, or every file with ``all_files``): their module totals,
    the busiest by bytes moved, the POSIX read-size histogram and read pattern."""
    code: dict[str, Any]
    shown: int
    totals: list[ModuleTotals]
    busiest: list[dict[str, Any]]
    read_sizes: dict[str, int]
    pattern: dict[str, int]


def moved(f: Mapping[str, Any]) -> int:
    """Bytes read + written of one file entry."""
    m = f["module"]
    return int(f["counters"].get(f"{m}_BYTES_READ", 0)) + int(f["counters"].get(f"{m}_BYTES_WRITTEN", 0))


def files_view(files: Sequence[Mapping[str, Any]], all_files: bool = False, top: int = 10) -> FilesView:
    """The report's view of ``files`` (entries marked ``"code": true`` are code loading,
    :mod:`tb_iotrace.base.codepaths`; left out of the tables unless ``all_files``)."""
    code = code_summary(files)
    shown: Any = files
    if isinstance(files, TableFiles):
        if not all_files:
            shown = files.select(~files.code[files.rows])
    elif not all_files:
        shown = [f for f in files if not f.get("code")]
    if not shown:
        return FilesView(code, 0, [], [], dict.fromkeys(SIZE_BINS, 0), access_pattern([]))
    if isinstance(shown, TableFiles):
        busiest = [shown[int(i)] for i in np.argsort(-shown.moved(), kind="stable")[:top]]
    else:
        busiest = sorted(shown, key=moved, reverse=True)[:top]
    return FilesView(code, len(shown), list(totals(shown).values()), busiest, size_histogram(shown),
                     access_pattern(shown))
