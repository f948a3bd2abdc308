"""The per-file counter table and the per-operation table, as Parquet or CSV.

``OUT`` is a folder; two files are written in it:

- ``files.parquet`` / ``files.csv``: one row per (run, host, module, file): ``run``, ``host``,
  ``module``, ``path``, ``record_id`` then one column per counter (the union of the POSIX and
  STDIO names; empty/null where a module has no such counter), integers as int64, float
  counters as float64.
- ``ops.parquet`` / ``ops.csv``: one row per traced call: ``run``, ``host``, ``start_ns``,
  ``end_ns`` (CLOCK_REALTIME epoch ns), ``op``, ``path``, ``offset`` (-1: none),
  ``requested``, ``returned`` (-1: failed), ``fd``, ``errno``, ``tid``.

``objects.*`` and ``requests.*``: the object-storage tables (:mod:`tb_iotrace.export.object_tables`).

All are written under temporary names and renamed once all are complete. The operation
table is written in row groups of :data:`CHUNK` rows, so memory stays bounded
by the chunk size plus the source's own columns. Parquet needs pyarrow; CSV does not. Parquet
holds only UTF-8 text: a name's bytes that are not UTF-8 are ``\\xNN`` there
(:func:`tb_iotrace.export._common.parquet_text`), the bytes themselves in CSV.
"""
from __future__ import annotations

import csv
import os
from typing import Any

from tb_iotrace.base.atomic import Staged
from tb_iotrace.base.progress import Progress
from tb_iotrace.base.recordid import darshan_ids, renamed_from
from tb_iotrace.export._common import CHUNK, IO_COLUMNS, io_rows, parquet_text
from tb_iotrace.export.object_tables import write_objects, write_requests

OPS_COLUMNS = ("run", "host") + IO_COLUMNS
INT_OPS = ("start_ns", "end_ns", "offset", "requested", "returned", "fd", "errno", "tid")


def _file_rows(sources: list[Any]) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    ints: dict[str, None] = {}
    floats: dict[str, None] = {}
    rows = []
    for s in sources:
        files = s.files()
        ids, remap = darshan_ids(files)
        for f, rid in zip(files, ids):
            ints.update(dict.fromkeys(f["counters"]))
            floats.update(dict.fromkeys(f["fcounters"]))
            row = {"run": s.run, "host": s.host, "module": f["module"], "path": f["path"],
                   "record_id": rid}
            row.update({k: int(v) for k, v in f["counters"].items()})
            if "POSIX_RENAMED_FROM" in row:
                row["POSIX_RENAMED_FROM"] = renamed_from(row["POSIX_RENAMED_FROM"], remap)
            row.update({k: float(v) for k, v in f["fcounters"].items()})
            rows.append(row)
    return list(ints), list(floats), rows


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("the parquet format needs pyarrow (pip install pyarrow)") from None
    return pa, pq


def export(sources: list[Any], out: str, fmt: str, progress: bool = True) -> dict[str, int]:
    """Write ``files.<fmt>`` and ``ops.<fmt>`` into folder ``out``; return row counts. Both are
    written under temporary names and renamed when both are complete: a failure leaves the
    previous pair as it was."""
    if fmt == "parquet":
        pa, pq = _pyarrow()
    os.makedirs(out, exist_ok=True)
    with Staged() as stage:
        nfiles = _files(stage.temp(os.path.join(out, f"files.{fmt}")), sources, fmt)
        nops = _ops(stage.temp(os.path.join(out, f"ops.{fmt}")), sources, fmt, progress)
        nobj = write_objects(stage.temp(os.path.join(out, f"objects.{fmt}")), sources, fmt)
        nreq = write_requests(stage.temp(os.path.join(out, f"requests.{fmt}")), sources, fmt)
    return {"files": nfiles, "ops": nops, "objects": nobj, "requests": nreq}


def _files(fpath: str, sources: list[Any], fmt: str) -> int:
    ints, floats, rows = _file_rows(sources)
    head = ["run", "host", "module", "path", "record_id"] + ints + floats
    if fmt == "parquet":
        pa, pq = _pyarrow()
        types = {"run": pa.string(), "host": pa.string(), "module": pa.string(), "path": pa.string(),
                 "record_id": pa.uint64(), **{k: pa.int64() for k in ints}, **{k: pa.float64() for k in floats}}
        schema = pa.schema([(k, types[k]) for k in head])
        text = ("run", "host", "module", "path")
        table = pa.Table.from_pydict({k: [parquet_text(r.get(k)) if k in text else r.get(k) for r in rows]
                                      for k in head}, schema=schema)
        pq.write_table(table, fpath)
    else:
        with open(fpath, "w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
            w = csv.DictWriter(fh, fieldnames=head, restval="")
            w.writeheader()
            w.writerows(rows)
    return len(rows)


def _ops(opath: str, sources: list[Any], fmt: str, progress: bool) -> int:
    cols = [(s, s.io_columns()) for s in sources]
    total = sum(len(c[0]["start_ns"]) for _, c in cols if c is not None)
    prog = Progress(f"export {fmt}", total) if progress else Progress("", 0)
    nops = 0
    try:
        if fmt == "parquet":
            pa, pq = _pyarrow()
            schema = pa.schema([("run", pa.string()), ("host", pa.string()), ("op", pa.string()),
                                ("path", pa.string())] + [(k, pa.int64()) for k in INT_OPS])
            schema = pa.schema([schema.field(k) for k in OPS_COLUMNS])
            with pq.ParquetWriter(opath, schema) as w:
                for s, c in cols:
                    if c is None:
                        continue
                    for ch in io_rows(c[0], CHUNK):
                        n = len(ch["start_ns"])
                        data = {"run": pa.array([parquet_text(s.run)] * n, pa.string()),
                                "host": pa.array([parquet_text(s.host)] * n, pa.string()),
                                "op": pa.array(ch["op"].tolist(), pa.string()),
                                "path": pa.array([parquet_text(p) for p in ch["path"].tolist()], pa.string())}
                        data.update({k: pa.array(ch[k].astype("int64")) for k in INT_OPS})
                        w.write_table(pa.Table.from_pydict(data, schema=schema))
                        nops += n
                        prog.add(n)
        else:
            with open(opath, "w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
                w = csv.writer(fh)
                w.writerow(OPS_COLUMNS)
                for s, c in cols:
                    if c is None:
                        continue
                    for ch in io_rows(c[0], CHUNK):
                        n = len(ch["start_ns"])
                        w.writerows(zip([s.run] * n, [s.host] * n, *(ch[k].tolist() for k in IO_COLUMNS)))
                        nops += n
                        prog.add(n)
    finally:
        prog.close()
    return nops
