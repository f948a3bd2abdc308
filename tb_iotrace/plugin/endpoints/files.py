"""``/files``: the Darshan counters of every file record (``/histograms``:
:mod:`tb_iotrace.plugin.endpoints.histograms`)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tb_iotrace.base.codepaths import code_paths
from tb_iotrace.model.tab.columns import TabCapture
from tb_iotrace.plugin.request_view import View

# (column, POSIX counter, STDIO counter)
_FILE_COLUMNS = (
    ("bytes_read", "POSIX_BYTES_READ", "STDIO_BYTES_READ"),
    ("bytes_written", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN"),
    ("reads", "POSIX_READS", "STDIO_READS"),
    ("writes", "POSIX_WRITES", "STDIO_WRITES"),
    ("opens", "POSIX_OPENS", "STDIO_OPENS"),
    ("seeks", "POSIX_SEEKS", "STDIO_SEEKS"),
    ("stats", "POSIX_STATS", None),
    ("seq_reads", "POSIX_SEQ_READS", None),
    ("consec_reads", "POSIX_CONSEC_READS", None),
    ("seq_writes", "POSIX_SEQ_WRITES", None),
    ("consec_writes", "POSIX_CONSEC_WRITES", None),
    ("read_time", "POSIX_F_READ_TIME", "STDIO_F_READ_TIME"),
    ("write_time", "POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME"),
    ("meta_time", "POSIX_F_META_TIME", "STDIO_F_META_TIME"),
    ("max_byte_read", "POSIX_MAX_BYTE_READ", "STDIO_MAX_BYTE_READ"),
    ("max_byte_written", "POSIX_MAX_BYTE_WRITTEN", "STDIO_MAX_BYTE_WRITTEN"),
    ("common_access_size", "POSIX_ACCESS1_ACCESS", None),
)


def files_impl(view: View) -> dict[str, Any]:
    """Every file record with its Darshan counters (POSIX and STDIO rows), columnar.

    ``columns`` are derived, comparable across modules (see _FILE_COLUMNS; ``bandwidth`` =
    bytes / (read + write time) in bytes/s, ``seq_pct`` = sequential reads / reads); all
    raw counters per row are in ``counters`` (names) / ``values`` (rows x names, null when
    a module lacks the counter). ``traced_calls`` / ``traced_bytes`` come from the per-call
    trace (0 when events were dropped or capped). ``code``: per row, whether the path is the
    process loading its code (tb_iotrace.base.codepaths); ``code_loading`` sums those rows (the tab
    shows it as one line and hides the rows unless asked)."""
    rows_path: list[str] = []
    rows_module: list[str] = []
    rows_host: list[str] = []
    names: list[str] = []
    name_idx: dict[str, int] = {}
    blocks = []
    derived: dict[str, list] = {c[0]: [] for c in _FILE_COLUMNS}
    derived.update({"bandwidth": [], "seq_pct": [], "traced_calls": [], "traced_bytes": []})
    for p in view.parts:
        ct = p.capture.counters
        n = len(ct.paths)
        if n == 0:
            continue
        rows_path += ct.paths
        rows_module += ct.modules
        rows_host += [p.host] * n
        for nm in ct.names:
            if nm not in name_idx:
                name_idx[nm] = len(names)
                names.append(nm)
        blocks.append((ct, n))
        mods = np.array(ct.modules, dtype=object)
        for col, posix, stdio in _FILE_COLUMNS:
            v = np.full(n, np.nan)
            pv = ct.col(posix)
            v = np.where(mods == "POSIX", pv, v)
            if stdio:
                v = np.where(mods == "STDIO", ct.col(stdio), v)
            derived[col].append(v)
        t = np.nan_to_num(derived["read_time"][-1]) + np.nan_to_num(derived["write_time"][-1])
        b = np.nan_to_num(derived["bytes_read"][-1]) + np.nan_to_num(derived["bytes_written"][-1])
        derived["bandwidth"].append(np.where(t > 0, b / np.where(t > 0, t, 1), np.nan))
        reads = derived["reads"][-1]
        derived["seq_pct"].append(np.where(reads > 0, 100.0 * derived["seq_reads"][-1] / np.where(reads > 0, reads, 1), np.nan))
        calls, moved = _traced_per_path(p.capture, ct.paths)
        derived["traced_calls"].append(calls)
        derived["traced_bytes"].append(moved)
    values = np.full((len(rows_path), len(names)), np.nan)
    r = 0
    for ct, n in blocks:
        cols = [name_idx[nm] for nm in ct.names]
        values[r:r + n][:, cols] = ct.values
        r += n

    def clean(a) -> list:
        return [None if (isinstance(x, float) and not math.isfinite(x)) else
                (int(x) if float(x).is_integer() and abs(x) < 2 ** 53 else x) for x in a]

    columns = {k: clean(np.concatenate(v).tolist()) if v else [] for k, v in derived.items()}
    has_io = any(p.capture.io_info is not None for p in view.parts)
    if not rows_path:
        reasons = dict.fromkeys(p.capture.no_io_reason for p in view.parts if p.capture.no_io_reason)
        msg = (" ".join(reasons) or "No I/O data in this capture." if not has_io else
               "No file was accessed in this capture window (or every access was excluded).")
    else:
        msg = ""
    code = code_paths(rows_path)
    is_code = [p in code for p in rows_path]
    rows_code = [i for i, c in enumerate(is_code) if c]

    def total(col: str) -> float:
        return float(sum(columns[col][i] or 0 for i in rows_code))

    code_loading = {"files": len({rows_path[i] for i in rows_code}), "bytes_read": int(total("bytes_read")),
                    "bytes_written": int(total("bytes_written")),
                    "time_s": total("read_time") + total("write_time") + total("meta_time")}
    return {"rows": len(rows_path), "path": rows_path, "module": rows_module, "host": rows_host,
            "code": is_code, "code_loading": code_loading, "columns": columns, "counters": names,
            "values": [clean(row) for row in values.tolist()], "message": msg}


def _traced_per_path(cap: TabCapture, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    n = len(paths)
    calls = np.zeros(n)
    moved = np.zeros(n)
    io = cap.io
    if io is None or len(io) == 0:
        return calls, moved
    cnt = np.bincount(io.path + 1, minlength=len(io.paths) + 1)[1:]
    rd, wr = io.moved()
    byts = np.bincount(io.path + 1, weights=(rd + wr).astype(np.float64), minlength=len(io.paths) + 1)[1:]
    where = {p: i for i, p in enumerate(io.paths)}
    for i, p in enumerate(paths):
        k = where.get(p)
        if k is not None:
            calls[i] = cnt[k]
            moved[i] = byts[k]
    return calls, moved
