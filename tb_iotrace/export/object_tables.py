"""The object-storage tables of the Parquet/CSV export, beside ``files`` and ``ops``
(:mod:`tb_iotrace.export.flat_tables`; docs/objects.md):

- ``objects.parquet`` / ``objects.csv``: one row per (run, host, object): ``run``, ``host``,
  ``object``, ``service``, ``bucket``, ``key``, then the per-object counters
  (:mod:`tb_iotrace.model.object_counters`: ``OBJ_*`` int64, ``OBJ_F_*`` float64);
- ``requests.parquet`` / ``requests.csv``: one row per request: ``run``, ``host``, then the
  columns of :data:`tb_iotrace.store.objcolumns.COLUMNS`.

Both are written (with their header only) when no source made a request.
"""
from __future__ import annotations

import csv
from typing import Any

from tb_iotrace.export._common import parquet_text
from tb_iotrace.model.object_counters import object_records
from tb_iotrace.store.objcolumns import COLUMNS

__all__ = ["write_objects", "write_requests"]

NAMES = ("object", "service", "bucket", "key")
TEXT = frozenset(NAMES) | {"op", "error", "client", "run", "host"}


def _counter_names() -> tuple[list[str], list[str]]:
    one = object_records([{c: 0 for c in COLUMNS} | {"object": "", "service": "", "bucket": "", "key": "",
                                                      "op": "GET", "error": "", "client": "", "complete": True,
                                                      "status": 200, "range_start": -1, "range_end": -1}])[0]
    return list(one["counters"]), list(one["fcounters"])


def _write(path: str, fmt: str, head: list[str], rows: list[dict[str, Any]], types: dict[str, str]) -> int:
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pt = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        schema = pa.schema([(k, pt[types[k]]) for k in head])
        cols = {k: [parquet_text(r.get(k)) if types[k] == "str" else r.get(k) for r in rows] for k in head}
        pq.write_table(pa.Table.from_pydict(cols, schema=schema), path)
    else:
        with open(path, "w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
            w = csv.DictWriter(fh, fieldnames=head, restval="")
            w.writeheader()
            w.writerows(rows)
    return len(rows)


def write_objects(path: str, sources: list[Any], fmt: str) -> int:
    ints, floats = _counter_names()
    head = ["run", "host", *NAMES, *ints, *floats]
    rows = []
    for s in sources:
        for rec in object_records(s.objects()):
            rows.append({"run": s.run, "host": s.host, **{k: rec[k] for k in NAMES}, **rec["counters"],
                         **rec["fcounters"]})
    types = {k: "str" for k in ("run", "host", *NAMES)} | dict.fromkeys(ints, "int") | dict.fromkeys(floats, "float")
    return _write(path, fmt, head, rows, types)


def write_requests(path: str, sources: list[Any], fmt: str) -> int:
    head = ["run", "host", *COLUMNS]
    rows = [{"run": s.run, "host": s.host, **r} for s in sources for r in s.objects()]
    types = {k: ("str" if k in TEXT else "bool" if k == "complete" else "int") for k in head}
    return _write(path, fmt, head, rows, types)
